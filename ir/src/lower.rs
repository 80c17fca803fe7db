//! Lowering of one graph node to one kernel (the unfused path; fusion lowers groups later).

use crate::graph::{Graph, NodeId, Op};
use crate::kernel::{Access, Arg, Index, Instr, Kernel, LibraryCall, ValueId};
use crate::random::RandomDist;
use crate::{DType, View};

/// A lowered kernel and the graph nodes behind its arguments.
#[derive(Clone, Debug)]
pub struct Lowered {
    pub kernel: Kernel,
    /// `reads[i]` is the producer of read argument `i`.
    pub reads: Vec<NodeId>,
    /// The node each output argument produces, in output-argument order (the outputs follow
    /// the reads).
    pub writes: Vec<NodeId>,
}

/// Does `id` need a kernel of its own? Inputs never do; fills only when observed or read by an
/// assign or a library call, since kernels read them as constants.
pub fn needs_kernel(g: &Graph, id: NodeId) -> bool {
    match g.node(id).op {
        Op::Input { .. } => false,
        Op::Fill { .. } => {
            g.outputs.contains(&id)
                || g.graph
                    .neighbors_directed(id, petgraph::Direction::Outgoing)
                    .any(|c| matches!(g.node(c).op, Op::Assign | Op::Library(_)))
        }
        Op::Unary { .. }
        | Op::Binary { .. }
        | Op::Where
        | Op::Cast
        | Op::Assign
        | Op::Reduce { .. }
        | Op::Library(_)
        | Op::Random { .. } => true,
    }
}

pub(crate) struct Builder<'g> {
    pub(crate) g: &'g Graph,
    pub(crate) body: Vec<Instr>,
    pub(crate) args: Vec<Arg>,
    pub(crate) inputs: Vec<NodeId>,
    pub(crate) rank: usize,
}

impl Builder<'_> {
    pub(crate) fn push(&mut self, i: Instr) -> ValueId {
        self.body.push(i);
        self.body.len() - 1
    }

    /// Loads the producer `src` through `view` (whose shape is a prefix-aligned space), or
    /// inlines it as a constant when it is a fill.
    fn load(&mut self, src: NodeId, view: &View) -> ValueId {
        let mut strides = view.strides.to_vec();
        strides.resize(self.rank, 0);
        let index = Index {
            strides,
            offset: view.offset as isize,
        };
        self.load_index(src, index)
    }

    /// Loads the producer `src` at `index`, or inlines it as a constant when it is a fill.
    pub(crate) fn load_index(&mut self, src: NodeId, index: Index) -> ValueId {
        let p = self.g.node(src);
        if let Op::Fill { value } = p.op {
            return self.push(Instr::Const {
                value,
                dtype: p.dtype,
            });
        }
        let arg = match self.inputs.iter().position(|&n| n == src) {
            Some(a) => a,
            None => {
                self.inputs.push(src);
                self.args.push(Arg {
                    dtype: p.dtype,
                    len: p.len,
                    access: Access::Read,
                });
                self.args.len() - 1
            }
        };
        let load = Instr::Load { arg, index };
        if let Some(i) = self.body.iter().position(|x| *x == load) {
            return i;
        }
        self.push(load)
    }

    /// A random node's value at its buffer position `index`: its generator state (input
    /// `state`, an int64 `[seed, offset]` read through `view`) loaded once per kernel, then the
    /// draw (`random.rs`).
    pub(crate) fn random(
        &mut self,
        dist: RandomDist,
        dtype: DType,
        (state, view): (NodeId, &View),
        index: Index,
    ) -> ValueId {
        assert!(
            self.g.node(state).dtype == DType::I64 && view.shape[..] == [2],
            "invariant: a generator state is an int64 [seed, offset]"
        );
        let rank = self.rank;
        let at = |k: isize| Index {
            strides: vec![0; rank],
            offset: view.offset as isize + k * view.strides[0],
        };
        let seed = self.load_index(state, at(0));
        let offset = self.load_index(state, at(1));
        let r = self.push(Instr::Random {
            dist,
            dtype,
            seed,
            offset,
            index,
        });
        self.cast(r, dist.value_dtype(dtype), dtype)
    }

    pub(crate) fn cast(&mut self, x: ValueId, from: DType, to: DType) -> ValueId {
        if from == to {
            x
        } else {
            self.push(Instr::Cast { x, to })
        }
    }
}

/// Lowers node `id` to a kernel of its own.
pub fn lower_node(g: &Graph, id: NodeId) -> Lowered {
    let node = g.node(id);
    let ins = g.inputs(id);
    let (shape, reduce_axes) = match node.op {
        Op::Reduce { axes, .. } => (ins[0].1.shape.to_vec(), axes),
        Op::Input { .. }
        | Op::Fill { .. }
        | Op::Unary { .. }
        | Op::Binary { .. }
        | Op::Where
        | Op::Cast
        | Op::Assign
        | Op::Library(_)
        | Op::Random { .. } => (node.out.shape.to_vec(), 0),
    };
    let mut b = Builder {
        g,
        body: vec![],
        args: vec![],
        inputs: vec![],
        rank: shape.len(),
    };
    let dt = |n: NodeId| g.node(n).dtype;
    let value = match &node.op {
        Op::Input { .. } => panic!("invariant: input nodes are never lowered"),
        Op::Library(_) => panic!("invariant: library nodes lower through lower_library"),
        Op::Fill { value } => b.push(Instr::Const {
            value: *value,
            dtype: node.dtype,
        }),
        Op::Unary { op, compute } => {
            let x = b.load(ins[0].0, &ins[0].1);
            let x = b.cast(x, dt(ins[0].0), *compute);
            let r = b.push(Instr::Unary {
                op: *op,
                x,
                compute: *compute,
            });
            b.cast(r, op.result_dtype(*compute), node.dtype)
        }
        Op::Binary { op, compute } => {
            let a = b.load(ins[0].0, &ins[0].1);
            let a = b.cast(a, dt(ins[0].0), *compute);
            let c = b.load(ins[1].0, &ins[1].1);
            let c = b.cast(c, dt(ins[1].0), *compute);
            let r = b.push(Instr::Binary {
                op: *op,
                a,
                b: c,
                compute: *compute,
            });
            b.cast(r, op.result_dtype(*compute), node.dtype)
        }
        Op::Where => {
            let c = b.load(ins[0].0, &ins[0].1);
            let c = b.cast(c, dt(ins[0].0), DType::Bool);
            let x = b.load(ins[1].0, &ins[1].1);
            let x = b.cast(x, dt(ins[1].0), node.dtype);
            let y = b.load(ins[2].0, &ins[2].1);
            let y = b.cast(y, dt(ins[2].0), node.dtype);
            b.push(Instr::Where {
                cond: c,
                a: x,
                b: y,
            })
        }
        Op::Cast => {
            let x = b.load(ins[0].0, &ins[0].1);
            b.cast(x, dt(ins[0].0), node.dtype)
        }
        Op::Assign => {
            // The old version is argument 0 so the output can be updated from it in place.
            let old = ins[0].0;
            b.inputs.push(old);
            b.args.push(Arg {
                dtype: dt(old),
                len: g.node(old).len,
                access: Access::Read,
            });
            let x = b.load(ins[1].0, &ins[1].1);
            b.cast(x, dt(ins[1].0), node.dtype)
        }
        Op::Reduce { op, .. } => {
            let x = b.load(ins[0].0, &ins[0].1);
            let x = b.cast(x, dt(ins[0].0), node.dtype);
            b.push(Instr::Reduce { op: *op, x })
        }
        Op::Random { dist } => {
            // Drawn by logical (row-major) index, whatever the buffer's layout.
            let mut strides = View::contiguous(&node.out.shape).strides.to_vec();
            strides.resize(b.rank, 0);
            let index = Index { strides, offset: 0 };
            b.random(*dist, node.dtype, (ins[0].0, &ins[0].1), index)
        }
    };
    let access = match node.op {
        Op::Assign => Access::Update { from: 0 },
        Op::Input { .. }
        | Op::Fill { .. }
        | Op::Unary { .. }
        | Op::Binary { .. }
        | Op::Where
        | Op::Cast
        | Op::Reduce { .. }
        | Op::Library(_)
        | Op::Random { .. } => Access::Write,
    };
    b.args.push(Arg {
        dtype: node.dtype,
        len: node.len,
        access,
    });
    let out_arg = b.args.len() - 1;
    let mut strides = node.out.strides.to_vec();
    strides.resize(b.rank, 0);
    b.push(Instr::Store {
        arg: out_arg,
        index: Index {
            strides,
            offset: node.out.offset as isize,
        },
        x: value,
    });
    let name = format!(
        "{}_{}",
        node.op.name().split(['(', '[']).next().unwrap_or("k"),
        id.index()
    );
    Lowered {
        kernel: Kernel {
            name,
            shape,
            reduce_axes,
            args: b.args,
            body: b.body,
        },
        reads: b.inputs,
        writes: vec![id],
    }
}

/// Lowers a library node to a call: its inputs' views and dtypes, its output.
pub fn lower_library(g: &Graph, id: NodeId) -> (LibraryCall, Vec<NodeId>) {
    let node = g.node(id);
    let Op::Library(op) = &node.op else {
        panic!("invariant: lower_library gets a library node")
    };
    let ins = g.inputs(id);
    let call = LibraryCall {
        op: op.clone(),
        inputs: ins
            .iter()
            .map(|(n, v)| (g.node(*n).dtype, v.clone()))
            .collect(),
        dtype: node.dtype,
        len: node.len,
        out: node.out.clone(),
    };
    (call, ins.into_iter().map(|(n, _)| n).collect())
}
