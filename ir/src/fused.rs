//! Lowering of a fusion group (several graph nodes) to one kernel: producers are inlined into
//! their consumers by composing the views between them, reductions become `Reduce`
//! instructions over the group's trailing dims, and only the group's root is stored.

use crate::affine::{AffineMap, read_map};
use crate::graph::{Graph, Group, NodeId, Op};
use crate::kernel::{Access, Arg, Instr, Kernel, ValueId};
use crate::lower::{Builder, Lowered};
use crate::{DType, View};
use std::collections::HashMap;

struct Fuser<'g> {
    b: Builder<'g>,
    group: &'g Group,
    memo: HashMap<(NodeId, AffineMap), ValueId>,
    reduces: HashMap<NodeId, ValueId>,
}

impl Fuser<'_> {
    /// The value an input edge `(src, view)` supplies at the consumer's logical index `map(p)`,
    /// in `src`'s dtype.
    fn input(&mut self, src: NodeId, view: &View, map: &AffineMap) -> ValueId {
        if self.group.members.contains(&src) {
            let inner = read_map(view, map, &self.group.space, &self.b.g.node(src).out)
                .expect("invariant: the fuser only groups producers whose reads compose affinely");
            self.value(src, inner)
        } else {
            self.b.load_index(src, map.index_through(view))
        }
    }

    /// The value of member `id` at its logical index `map(p)`, in its dtype.
    fn value(&mut self, id: NodeId, map: AffineMap) -> ValueId {
        let g = self.b.g;
        let node = g.node(id);
        if let Op::Reduce { .. } = node.op
            && let Some(&v) = self.reduces.get(&id)
        {
            return v;
        }
        if let Some(&v) = self.memo.get(&(id, map.clone())) {
            return v;
        }
        let ins = g.inputs(id);
        let dt = |n: NodeId| g.node(n).dtype;
        let v = match &node.op {
            Op::Input { .. } | Op::Fill { .. } | Op::Assign | Op::Library(_) => {
                panic!("invariant: fusion groups hold only elementwise and reduction nodes")
            }
            Op::Unary { op, compute } => {
                let x = self.input(ins[0].0, &ins[0].1, &map);
                let x = self.b.cast(x, dt(ins[0].0), *compute);
                let r = self.b.push(Instr::Unary {
                    op: *op,
                    x,
                    compute: *compute,
                });
                self.b.cast(r, op.result_dtype(*compute), node.dtype)
            }
            Op::Binary { op, compute } => {
                let a = self.input(ins[0].0, &ins[0].1, &map);
                let a = self.b.cast(a, dt(ins[0].0), *compute);
                let c = self.input(ins[1].0, &ins[1].1, &map);
                let c = self.b.cast(c, dt(ins[1].0), *compute);
                let r = self.b.push(Instr::Binary {
                    op: *op,
                    a,
                    b: c,
                    compute: *compute,
                });
                self.b.cast(r, op.result_dtype(*compute), node.dtype)
            }
            Op::Where => {
                let c = self.input(ins[0].0, &ins[0].1, &map);
                let c = self.b.cast(c, dt(ins[0].0), DType::Bool);
                let x = self.input(ins[1].0, &ins[1].1, &map);
                let x = self.b.cast(x, dt(ins[1].0), node.dtype);
                let y = self.input(ins[2].0, &ins[2].1, &map);
                let y = self.b.cast(y, dt(ins[2].0), node.dtype);
                self.b.push(Instr::Where {
                    cond: c,
                    a: x,
                    b: y,
                })
            }
            Op::Cast => {
                let x = self.input(ins[0].0, &ins[0].1, &map);
                self.b.cast(x, dt(ins[0].0), node.dtype)
            }
            Op::Reduce { op, .. } => {
                // A reduction reads its input at every point of the group's space.
                let full = AffineMap::identity(self.group.space.len());
                let x = self.input(ins[0].0, &ins[0].1, &full);
                let x = self.b.cast(x, dt(ins[0].0), node.dtype);
                let r = self.b.push(Instr::Reduce { op: *op, x });
                self.reduces.insert(id, r);
                return r;
            }
        };
        self.memo.insert((id, map), v);
        v
    }
}

/// Lowers fusion group `group` of `g` to one kernel that stores only the group's root.
pub fn lower_group(g: &Graph, group: &Group) -> Lowered {
    let rank = group.space.len();
    let mut f = Fuser {
        b: Builder {
            g,
            body: vec![],
            args: vec![],
            inputs: vec![],
            rank,
        },
        group,
        memo: HashMap::new(),
        reduces: HashMap::new(),
    };
    let root = g.node(group.root);
    let value = f.value(group.root, group.root_map.clone());
    let mut b = f.b;
    b.args.push(Arg {
        dtype: root.dtype,
        len: root.len,
        access: Access::Write,
    });
    let out_arg = b.args.len() - 1;
    let index = group.root_map.index_through(&root.out);
    b.push(Instr::Store {
        arg: out_arg,
        index,
        x: value,
    });
    b.inputs.push(group.root);
    let mut names: Vec<String> = group
        .members
        .iter()
        .rev()
        .map(|m| g.node(*m).op.name())
        .collect();
    names.dedup();
    let name = format!(
        "fused_{}_{}",
        names
            .join("_")
            .replace(['(', ')', '[', ']', '.', '-', ' '], ""),
        group.root.index()
    );
    Lowered {
        kernel: Kernel {
            name,
            shape: group.space.clone(),
            reduce_axes: group.reduce_axes,
            args: b.args,
            body: b.body,
        },
        inputs: b.inputs,
    }
}
