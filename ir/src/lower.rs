//! Lowering of one graph node to one kernel (the unfused path; fusion lowers groups later).

use crate::complex::{Val, part_index};
use crate::graph::{Graph, NodeId, Op};
use crate::kernel::{Access, Arg, Index, Instr, Kernel, LibraryCall, ValueId};
use crate::random::RandomDist;
use crate::reading::{Parts, Reading};
use crate::{DType, Scalar, View};

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

/// Does `id` need a kernel of its own? Inputs never do; fills only when observed, read by an
/// assign or a library call, or read as parts (`x.real` of a complex fill, whose values may
/// alternate between the two parts), since kernels read them as constants.
pub fn needs_kernel(g: &Graph, id: NodeId) -> bool {
    match g.node(id).op {
        Op::Input { .. } => false,
        Op::Fill { .. } => {
            use petgraph::visit::EdgeRef;
            g.outputs.contains(&id)
                || g.graph
                    .edges_directed(id, petgraph::Direction::Outgoing)
                    .any(|e| {
                        matches!(g.node(e.target()).op, Op::Assign | Op::Library(_))
                            || e.weight().view.read.parts == Parts::Split
                    })
        }
        Op::Unary { .. }
        | Op::Binary { .. }
        | Op::Where
        | Op::Cast
        | Op::Assign
        | Op::Reduce { .. }
        | Op::Library(_)
        | Op::Random { .. }
        | Op::Complex => true,
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

    /// The value of producer `src` read through `view` (whose shape is a prefix-aligned
    /// space), in the dtype the view reads ([`Reading::dtype`]).
    fn load(&mut self, src: NodeId, view: &View) -> Val {
        let mut strides = view.strides.to_vec();
        strides.resize(self.rank, 0);
        let index = Index {
            strides,
            offset: view.offset as isize,
        };
        self.load_read(src, index, view.read)
    }

    /// The value of producer `src` at `index` (in elements of the dtype `read` reads) as `read`
    /// reads it: a constant when `src` is a fill, else one load of a real element or two of a
    /// complex one's parts; then conjugated or negated as `read` says.
    pub(crate) fn load_read(&mut self, src: NodeId, index: Index, read: Reading) -> Val {
        let p = self.g.node(src);
        let dtype = read.dtype(p.dtype);
        let fill = match p.op {
            Op::Fill { value } if read.parts != Parts::Split => Some(value),
            Op::Fill { .. }
            | Op::Input { .. }
            | Op::Unary { .. }
            | Op::Binary { .. }
            | Op::Where
            | Op::Cast
            | Op::Assign
            | Op::Reduce { .. }
            | Op::Library(_)
            | Op::Random { .. }
            | Op::Complex => None,
        };
        let v = match fill {
            Some(value) => {
                let value = value.cast(p.dtype);
                match (value, dtype.is_complex()) {
                    (_, false) => Val::Real(self.const_of(value, dtype)),
                    (Scalar::Complex(re, im), true) => Val::Complex(
                        self.const_of(Scalar::Float(re), dtype.real()),
                        self.const_of(Scalar::Float(im), dtype.real()),
                    ),
                    (v, true) => {
                        // A paired read of a real fill: both parts are the fill.
                        let c = self.const_of(v, dtype.real());
                        Val::Complex(c, c)
                    }
                }
            }
            None if dtype.is_complex() => Val::Complex(
                self.load_index(src, part_index(&index, 0)),
                self.load_index(src, part_index(&index, 1)),
            ),
            None => Val::Real(self.load_index(src, index)),
        };
        self.transform(v, dtype, read)
    }

    fn const_of(&mut self, value: Scalar, dtype: DType) -> ValueId {
        let c = Instr::Const { value, dtype };
        match self.body.iter().position(|i| *i == c) {
            Some(i) => i,
            None => self.push(c),
        }
    }

    /// The argument of producer `src`'s buffer (added on first use): the buffer of its
    /// storage's real dtype, two parts per element for a complex producer.
    pub(crate) fn read_arg(&mut self, src: NodeId) -> usize {
        match self.inputs.iter().position(|&n| n == src) {
            Some(a) => a,
            None => {
                let p = self.g.node(src);
                self.inputs.push(src);
                self.args.push(Arg {
                    dtype: p.dtype.storage(),
                    len: p.len * p.dtype.parts(),
                    access: Access::Read,
                });
                self.args.len() - 1
            }
        }
    }

    /// Loads element `index` (in buffer elements) of producer `src`'s buffer.
    pub(crate) fn load_index(&mut self, src: NodeId, index: Index) -> ValueId {
        let arg = self.read_arg(src);
        let load = Instr::Load { arg, index };
        if let Some(i) = self.body.iter().position(|x| *x == load) {
            return i;
        }
        self.push(load)
    }

    /// Stores `v` (of `dtype`) through a view reading `read` at `index` (in `dtype`'s
    /// elements) into output argument `arg`: a complex value as its two parts, conjugated or
    /// negated first as the view reads (writes through a conjugate view store the conjugate).
    pub(crate) fn store_val(
        &mut self,
        arg: usize,
        index: Index,
        v: Val,
        dtype: DType,
        read: Reading,
    ) {
        match self.transform(v, dtype, read) {
            Val::Real(x) => {
                self.push(Instr::Store { arg, index, x });
            }
            Val::Complex(re, im) => {
                let at = |k| part_index(&index, k);
                self.push(Instr::Store {
                    arg,
                    index: at(0),
                    x: re,
                });
                self.push(Instr::Store {
                    arg,
                    index: at(1),
                    x: im,
                });
            }
        }
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
    ) -> Val {
        assert!(
            self.g.node(state).dtype == DType::I64 && view.shape[..] == [2] && view.read.is_plain(),
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
        Val::Real(self.cast(r, dist.value_dtype(dtype), dtype))
    }

    pub(crate) fn cast(&mut self, x: ValueId, from: DType, to: DType) -> ValueId {
        if from == to {
            x
        } else {
            self.push(Instr::Cast { x, to })
        }
    }

    /// The value of a complex node: its two real inputs as the parts of `dtype`.
    pub(crate) fn complex_of(
        &mut self,
        (re, re_dtype): (Val, DType),
        (im, im_dtype): (Val, DType),
        dtype: DType,
    ) -> Val {
        let r = dtype.real();
        let re = self.cast_val(re, re_dtype, r).real();
        let im = self.cast_val(im, im_dtype, r).real();
        Val::Complex(re, im)
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
        | Op::Random { .. }
        | Op::Complex => (node.out.shape.to_vec(), 0),
    };
    let mut b = Builder {
        g,
        body: vec![],
        args: vec![],
        inputs: vec![],
        rank: shape.len(),
    };
    // The dtype an input edge reads (its view may reinterpret the producer's storage).
    let dt = |k: usize| ins[k].1.read.dtype(g.node(ins[k].0).dtype);
    let value = match &node.op {
        Op::Input { .. } => panic!("invariant: input nodes are never lowered"),
        Op::Library(_) => panic!("invariant: library nodes lower through lower_library"),
        Op::Fill { value } => {
            let value = value.cast(node.dtype);
            match value {
                Scalar::Complex(re, im) => {
                    let r = node.dtype.real();
                    Val::Complex(
                        b.const_of(Scalar::Float(re), r),
                        b.const_of(Scalar::Float(im), r),
                    )
                }
                Scalar::Bool(_) | Scalar::Int(_) | Scalar::Float(_) => {
                    Val::Real(b.const_of(value, node.dtype))
                }
            }
        }
        Op::Unary { op, compute } => {
            let x = b.load(ins[0].0, &ins[0].1);
            let x = b.cast_val(x, dt(0), *compute);
            let r = b.unary_val(*op, x, *compute);
            b.cast_val(r, op.result_dtype(*compute), node.dtype)
        }
        Op::Binary { op, compute } => {
            let x = b.load(ins[0].0, &ins[0].1);
            let x = b.cast_val(x, dt(0), *compute);
            let y = b.load(ins[1].0, &ins[1].1);
            let y = b.cast_val(y, dt(1), *compute);
            let r = b.binary_val(*op, x, y, *compute);
            b.cast_val(r, op.result_dtype(*compute), node.dtype)
        }
        Op::Where => {
            let c = b.load(ins[0].0, &ins[0].1);
            let c = b.cast_val(c, dt(0), DType::Bool).real();
            let x = b.load(ins[1].0, &ins[1].1);
            let x = b.cast_val(x, dt(1), node.dtype);
            let y = b.load(ins[2].0, &ins[2].1);
            let y = b.cast_val(y, dt(2), node.dtype);
            b.where_val(c, x, y)
        }
        Op::Cast => {
            let x = b.load(ins[0].0, &ins[0].1);
            b.cast_val(x, dt(0), node.dtype)
        }
        Op::Complex => {
            let re = b.load(ins[0].0, &ins[0].1);
            let im = b.load(ins[1].0, &ins[1].1);
            b.complex_of((re, dt(0)), (im, dt(1)), node.dtype)
        }
        Op::Assign => {
            // The old version is argument 0 so the output can be updated from it in place.
            let old = ins[0].0;
            b.read_arg(old);
            let x = b.load(ins[1].0, &ins[1].1);
            // The values are written through `out`, in the dtype it reads.
            b.cast_val(x, dt(1), node.out.read.dtype(node.dtype))
        }
        Op::Reduce { op, .. } => {
            let x = b.load(ins[0].0, &ins[0].1);
            let x = b.cast_val(x, dt(0), node.dtype);
            b.reduce_val(*op, x)
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
        | Op::Random { .. }
        | Op::Complex => Access::Write,
    };
    b.args.push(Arg {
        dtype: node.dtype.storage(),
        len: node.len * node.dtype.parts(),
        access,
    });
    let out_arg = b.args.len() - 1;
    let mut strides = node.out.strides.to_vec();
    strides.resize(b.rank, 0);
    let index = Index {
        strides,
        offset: node.out.offset as isize,
    };
    b.store_val(
        out_arg,
        index,
        value,
        node.out.read.dtype(node.dtype),
        node.out.read,
    );
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
    assert!(
        ins.iter().all(|(_, v)| !v.read.transforms()) && !node.out.read.transforms(),
        "invariant: library routines read and write plainly (the frontend resolves conjugate and \
         negative views first)"
    );
    let call = LibraryCall {
        op: op.clone(),
        // Each input in the dtype its view reads.
        inputs: ins
            .iter()
            .map(|(n, v)| (v.read.dtype(g.node(*n).dtype), v.clone()))
            .collect(),
        dtype: node.dtype,
        len: node.len,
        out: node.out.clone(),
    };
    (call, ins.into_iter().map(|(n, _)| n).collect())
}
