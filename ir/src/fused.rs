//! Lowering of a fusion group (several graph nodes) to one kernel: producers are inlined into
//! their consumers by composing the views between them, reductions become `Reduce`
//! instructions over the group's trailing dims, and only the group's outputs are stored (one
//! output argument each, after the read arguments; the stores end the body).

use crate::affine::{AffineMap, read_map};
use crate::complex::Val;
use crate::graph::{Graph, Group, NodeId, Op};
use crate::kernel::{Access, Arg, Kernel};
use crate::lower::{Builder, Lowered};
use crate::reading::{Part, Source, source};
use crate::{DType, View};
use std::collections::HashMap;

struct Fuser<'g> {
    b: Builder<'g>,
    group: &'g Group,
    memo: HashMap<(NodeId, AffineMap), Val>,
    reduces: HashMap<NodeId, Val>,
}

/// Whether two maps from `space` agree at every point (coefficients of size-1 dims do not
/// matter).
fn same_on(space: &[usize], a: &AffineMap, b: &AffineMap) -> bool {
    a.offset == b.offset
        && a.coeffs.len() == b.coeffs.len()
        && a.coeffs.iter().zip(&b.coeffs).all(|(ra, rb)| {
            space
                .iter()
                .enumerate()
                .all(|(d, &n)| n <= 1 || ra[d] == rb[d])
        })
}

impl Fuser<'_> {
    /// The value an input edge `(src, view)` supplies at the consumer's logical index `map(p)`,
    /// in the dtype the view reads; `None` when a fused producer's read does not compose.
    fn input(&mut self, src: NodeId, view: &View, map: &AffineMap) -> Option<Val> {
        if !self.group.members.contains(&src) {
            return Some(self.b.load_read(src, map.index_through(view), view.read));
        }
        let out = &self.b.g.node(src).out;
        let space = &self.group.space;
        let v = match source(view)? {
            Source::Same(v) => {
                let inner = read_map(&v, map, space, out)?;
                self.value(src, inner)?
            }
            Source::Part(v, part) => {
                let inner = read_map(&v, map, space, out)?;
                let (re, im) = self.value(src, inner)?.parts();
                Val::Real(if part == Part::Re { re } else { im })
            }
            Source::Pair(re, im) => {
                let (re, im) = (
                    read_map(&re, map, space, out)?,
                    read_map(&im, map, space, out)?,
                );
                Val::Complex(self.value(src, re)?.real(), self.value(src, im)?.real())
            }
        };
        let dtype = view.read.dtype(self.b.g.node(src).dtype);
        Some(self.b.transform(v, dtype, view.read))
    }

    /// The value of member `id` at its logical index `map(p)`, in its dtype; `None` when the
    /// group cannot compute it there (a read that does not compose, a reduction read at
    /// another row than the kernel's).
    fn value(&mut self, id: NodeId, map: AffineMap) -> Option<Val> {
        let g = self.b.g;
        let node = g.node(id);
        if let Op::Reduce { .. } = node.op {
            let rank = self.group.space.len();
            let row = AffineMap::projection(rank, rank - self.group.reduce_axes);
            if !same_on(&self.group.space, &map, &row) {
                return None;
            }
            if let Some(&v) = self.reduces.get(&id) {
                return Some(v);
            }
        }
        if let Some(&v) = self.memo.get(&(id, map.clone())) {
            return Some(v);
        }
        let ins = g.inputs(id);
        // The dtype an input edge reads (its view may reinterpret the producer's storage).
        let dt = |k: usize| ins[k].1.read.dtype(g.node(ins[k].0).dtype);
        let v = match &node.op {
            Op::Input { .. } | Op::Fill { .. } | Op::Assign | Op::Library(_) => {
                panic!("invariant: fusion groups hold only elementwise and reduction nodes")
            }
            Op::Unary { op, compute } => {
                let x = self.input(ins[0].0, &ins[0].1, &map)?;
                let x = self.b.cast_val(x, dt(0), *compute);
                let r = self.b.unary_val(*op, x, *compute);
                self.b.cast_val(r, op.result_dtype(*compute), node.dtype)
            }
            Op::Binary { op, compute } => {
                let x = self.input(ins[0].0, &ins[0].1, &map)?;
                let x = self.b.cast_val(x, dt(0), *compute);
                let y = self.input(ins[1].0, &ins[1].1, &map)?;
                let y = self.b.cast_val(y, dt(1), *compute);
                let r = self.b.binary_val(*op, x, y, *compute);
                self.b.cast_val(r, op.result_dtype(*compute), node.dtype)
            }
            Op::Where => {
                let c = self.input(ins[0].0, &ins[0].1, &map)?;
                let c = self.b.cast_val(c, dt(0), DType::Bool).real();
                let x = self.input(ins[1].0, &ins[1].1, &map)?;
                let x = self.b.cast_val(x, dt(1), node.dtype);
                let y = self.input(ins[2].0, &ins[2].1, &map)?;
                let y = self.b.cast_val(y, dt(2), node.dtype);
                self.b.where_val(c, x, y)
            }
            Op::Cast => {
                let x = self.input(ins[0].0, &ins[0].1, &map)?;
                self.b.cast_val(x, dt(0), node.dtype)
            }
            Op::Complex => {
                let re = self.input(ins[0].0, &ins[0].1, &map)?;
                let im = self.input(ins[1].0, &ins[1].1, &map)?;
                self.b.complex_of((re, dt(0)), (im, dt(1)), node.dtype)
            }
            Op::Random { dist } => {
                // Drawn by its logical (row-major) index at this point, whatever its buffer's
                // layout; its state is never fused.
                let index = map.index_through(&View::contiguous(&node.out.shape));
                self.b
                    .random(*dist, node.dtype, (ins[0].0, &ins[0].1), index)
            }
            Op::Reduce { op, .. } => {
                // A reduction reads its input at every point of the group's space.
                let full = AffineMap::identity(self.group.space.len());
                let x = self.input(ins[0].0, &ins[0].1, &full)?;
                let x = self.b.cast_val(x, dt(0), node.dtype);
                // Two reductions of one value (a requested `amax` beside a softmax's own) are
                // one pass over the row.
                let r = self.b.reduce_val(*op, x);
                self.reduces.insert(id, r);
                return Some(r);
            }
        };
        self.memo.insert((id, map), v);
        Some(v)
    }
}

/// Lowers fusion group `group` of `g` to one kernel that stores the group's outputs.
pub fn lower_group(g: &Graph, group: &Group) -> Lowered {
    try_lower_group(g, group).unwrap_or_else(|| {
        panic!(
            "invariant: the fuser only groups members it can compute at every index they are \
             read at: {group:?}"
        )
    })
}

/// Groups of more members than this are lowered on a thread of their own with a stack sized to
/// the group: the lowering recurses from each output through its producers, two frames a
/// member, and a chain of a few thousand ops would overflow a test thread's 2 MiB.
const DEEP_GROUP: usize = 128;

/// Stack bytes a member's two frames may take (debug builds, complex values), with margin.
const STACK_PER_MEMBER: usize = 8 << 10;

/// [`lower_group`], or `None` when some member cannot be computed where it is read (a read
/// that no affine map composes, a reduction read at another row than the kernel's). The fuser
/// uses it to check a merge before keeping it.
pub fn try_lower_group(g: &Graph, group: &Group) -> Option<Lowered> {
    if group.members.len() <= DEEP_GROUP {
        return lower_here(g, group);
    }
    let stack = (1 << 20) + group.members.len() * STACK_PER_MEMBER;
    std::thread::scope(|scope| {
        match std::thread::Builder::new()
            .name("smelt-lower".into())
            .stack_size(stack)
            .spawn_scoped(scope, || lower_here(g, group))
        {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            // No thread to be had: try on this one.
            Err(_) => lower_here(g, group),
        }
    })
}

/// [`try_lower_group`] on the calling thread's stack.
fn lower_here(g: &Graph, group: &Group) -> Option<Lowered> {
    let outputs = group.output_nodes();
    assert!(
        !outputs.is_empty(),
        "invariant: a fusion group stores at least one output"
    );
    assert!(
        outputs
            .iter()
            .enumerate()
            .all(|(i, o)| !outputs[..i].contains(o)),
        "invariant: a fusion group stores each output once: {outputs:?}"
    );
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
    // Every value first (all loads, hence all read arguments, precede the outputs), then one
    // store per output.
    let mut values = Vec::with_capacity(group.outputs.len());
    for (id, map) in &group.outputs {
        values.push(f.value(*id, map.clone())?);
    }
    let mut b = f.b;
    for ((id, map), value) in group.outputs.iter().zip(values) {
        let node = g.node(*id);
        b.args.push(Arg {
            dtype: node.dtype.storage(),
            len: node.len * node.dtype.parts(),
            access: Access::Write,
        });
        let arg = b.args.len() - 1;
        b.store_val(
            arg,
            map.index_through(&node.out),
            value,
            node.dtype,
            node.out.read,
        );
    }
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
        group.root().index()
    );
    Some(Lowered {
        kernel: Kernel {
            name,
            shape: group.space.clone(),
            reduce_axes: group.reduce_axes,
            args: b.args,
            body: b.body,
        },
        reads: b.inputs,
        writes: outputs,
    })
}
