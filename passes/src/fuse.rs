//! `fuse`: groups graph nodes into kernels (DESIGN §5.4).
//!
//! What: walking from the last node back, each node that must be materialised roots a group;
//! a producer joins its consumers' group when every consumer is already in it and every read
//! of it composes with its output view into one affine map (so the consumer can recompute it
//! at the index it needs). Elementwise producers fuse vertically; an elementwise chain fuses
//! into the reduction that consumes it (prologue); a reduction fuses into its elementwise
//! consumers (epilogue) when they run over its kept dims or over its whole input; several
//! reductions over the same rows share one kernel (softmax, layernorm, var: the kernel walks
//! each row once per reduction).
//!
//! Multi-output kernels: a kernel stores every member someone outside it needs.
//! - A member also needed outside the kernel (requested by the user, or read by another
//!   kernel) is stored as an extra output of the kernel that computes it anyway, instead of
//!   becoming a kernel of its own whose buffer the others re-read. Refused when another kernel
//!   reading it feeds this one (a cycle of kernels), or when the kernel would not compute it
//!   whole and once per element.
//! - Groups over the same iteration space merge (rules in `fuse/merge.rs`): horizontally when
//!   they read a common buffer (`x.sum(1)` and `(x*x).sum(1)` read `x` once), vertically when
//!   one reads the other's output, never when a third kernel lies between them. A first
//!   grouping proposes the merges; a second grouping seeds each merged set of roots together.
//!
//! Why it is correct: a fused producer is a pure function of its index, recomputed where it
//! is read; a fused reduction is read only at the row the kernel is on (checked: its read map
//! is the projection onto the kept dims). An output is stored at every index of its shape
//! exactly once (checked). Kernels stay acyclic: a merge or extra output is refused when a
//! path through another kernel connects the two sides. A group with more than one output is
//! lowered once (`try_lower_group`) before it is kept; if it does not lower, the root grows
//! again without the extras (the single-output grouping, which always lowers).
//!
//! Example: `relu(a*b + c)*0.5 + a` is five nodes and one kernel after `fuse`; `softmax(x)`
//! (amax, sub, exp, sum, div) is one kernel with two reductions; `y = a*2 + 1` and
//! `z = (a*2).exp()` realised together are one kernel storing `y` and `z`.

mod merge;

use merge::{Plan, depends, plan_merges};
use petgraph::Direction;
use smelt_ir::View;
use smelt_ir::affine::{AffineMap, common_refinement, merge_map, read_map};
use smelt_ir::fused::try_lower_group;
use smelt_ir::graph::{Boundary, Graph, Group, Node, NodeId, Op};
use smelt_ir::lower::needs_kernel;

/// The most outputs one kernel stores (each is a buffer argument and a store stream; CUDA's
/// parameter space and the registers of one thread are finite).
pub(crate) const MAX_OUTPUTS: usize = 8;

/// Why a producer stays outside a kernel only because other kernels read it too.
const SHARED: &str = "it has consumers in other kernels";

/// Which members besides its seeds a growing group may store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Stores {
    /// Only the seeds: every other materialised node roots a kernel of its own.
    Seeds,
    /// Also members the user requested whose consumers are all in the kernel.
    Requested,
    /// Also members other kernels read.
    Shared,
}

fn is_elementwise(op: &Op) -> bool {
    match op {
        // A random draw is elementwise: each element a function of its position.
        Op::Unary { .. } | Op::Binary { .. } | Op::Where | Op::Cast | Op::Random { .. } => true,
        Op::Input { .. } | Op::Fill { .. } | Op::Assign | Op::Reduce { .. } | Op::Library(_) => {
            false
        }
    }
}

/// The group rooted at `root`, before absorbing producers.
fn seed(g: &Graph, root: NodeId) -> Option<Group> {
    let node = g.node(root);
    match &node.op {
        Op::Reduce { axes, .. } => {
            let space = g.inputs(root)[0].1.shape.to_vec();
            let outer = space.len() - axes;
            Some(Group {
                outputs: vec![(root, AffineMap::projection(space.len(), outer))],
                members: vec![root],
                space,
                reduce_axes: *axes,
            })
        }
        Op::Unary { .. } | Op::Binary { .. } | Op::Where | Op::Cast | Op::Random { .. } => {
            let rank = node.out.ndim();
            Some(Group {
                outputs: vec![(root, AffineMap::identity(rank))],
                members: vec![root],
                space: node.out.shape.to_vec(),
                reduce_axes: 0,
            })
        }
        Op::Input { .. } | Op::Fill { .. } | Op::Assign | Op::Library(_) => None,
    }
}

/// The map from the group's space to member `id`'s logical index: an output's own map, or
/// the map along one path of reads (any path: a fused elementwise member is recomputed per
/// read, a reduction has one row).
fn member_map(g: &Graph, group: &Group, id: NodeId, memo: &mut Memo) -> Option<AffineMap> {
    if let Some(m) = group.output_map(id) {
        return Some(m.clone());
    }
    if let Some(m) = memo.get(&id) {
        return Some(m.clone());
    }
    for e in g.graph.edges_directed(id, Direction::Outgoing) {
        let consumer = petgraph::visit::EdgeRef::target(&e);
        if !group.members.contains(&consumer) {
            continue;
        }
        let cmap = match g.node(consumer).op {
            // A reduction reads its input at every point of the space.
            Op::Reduce { .. } => AffineMap::identity(group.space.len()),
            Op::Input { .. }
            | Op::Fill { .. }
            | Op::Unary { .. }
            | Op::Binary { .. }
            | Op::Where
            | Op::Cast
            | Op::Assign
            | Op::Library(_)
            | Op::Random { .. } => member_map(g, group, consumer, memo)?,
        };
        let m = read_map(&e.weight().view, &cmap, &group.space, &g.node(id).out)?;
        memo.insert(id, m.clone());
        return Some(m);
    }
    None
}

/// Maps of members already computed for the group's current space.
type Memo = std::collections::HashMap<NodeId, AffineMap>;

/// Refines an elementwise group's space so that a contiguous reshaping read of a contiguous
/// producer becomes affine: `[12]` reading a `[4, 3]` buffer iterates `[4, 3]` instead (no
/// div/mod in the kernel). Every output's map is composed with the merge of the new space.
fn refine_space(group: &mut Group, read: &View, cmap: Option<&AffineMap>, producer: &Node) -> bool {
    let Some(cmap) = cmap else { return false };
    let whole = read.offset == 0 && read.is_contiguous() && read.numel() == producer.len;
    let dense = producer.out.offset == 0
        && producer.out.is_contiguous()
        && producer.out.numel() == producer.len;
    if group.reduce_axes != 0
        || !whole
        || !dense
        || *cmap != AffineMap::identity(group.space.len())
        || read.shape != group.space
    {
        return false;
    }
    let Some(fine) = common_refinement(&group.space, &producer.out.shape) else {
        return false;
    };
    let Some(merge) = merge_map(&fine, &group.space) else {
        return false;
    };
    for (_, map) in &mut group.outputs {
        *map = map.compose(&merge);
    }
    group.space = fine;
    true
}

/// Whether `a` and `b` give the same point for every point of `space`: equal offsets, and
/// equal coefficients of every dim longer than 1. A dim of size 1 is always at 0, so its
/// coefficients never matter (a batch of one, a single head: the reduction's consumers read
/// the row through a broadcast there, which is the same row).
fn same_on(a: &AffineMap, b: &AffineMap, space: &[usize]) -> bool {
    a.inputs == b.inputs
        && a.offset == b.offset
        && a.coeffs.len() == b.coeffs.len()
        && a.coeffs
            .iter()
            .zip(&b.coeffs)
            .all(|(ra, rb)| (0..space.len()).all(|j| space[j] == 1 || ra.get(j) == rb.get(j)))
}

/// Whether `map` takes the points of `space` onto every index of `shape` exactly once: as a
/// bijection from all the dims of size > 1 (an element-level store), or from the kept dims
/// only, ignoring the reduced ones (a row-level store). An output must be written whole.
fn covers_once(map: &AffineMap, space: &[usize], reduce_axes: usize, shape: &[usize]) -> bool {
    if map.outputs() != shape.len() || map.inputs != space.len() {
        return false;
    }
    let kept = space.len() - reduce_axes;
    let mut used = vec![false; space.len()];
    for (j, &n) in shape.iter().enumerate() {
        let moving: Vec<usize> = (0..space.len())
            .filter(|&d| space[d] > 1 && map.coeffs[j][d] != 0)
            .collect();
        let ok = match moving[..] {
            [] => n == 1,
            [d] => map.coeffs[j][d] == 1 && space[d] == n && !std::mem::replace(&mut used[d], true),
            _ => false,
        };
        if !ok || map.offset[j] != 0 {
            return false;
        }
    }
    // A store runs at every point of the space (element-level) or of its kept dims
    // (row-level): none when that is empty, which writes nothing of a non-empty output.
    let points = |dims: &[usize]| dims.iter().all(|&n| n > 0);
    let whole = points(space) && (0..space.len()).all(|d| space[d] <= 1 || used[d]);
    let rows =
        points(&space[..kept]) && (0..space.len()).all(|d| space[d] <= 1 || used[d] == (d < kept));
    whole || rows
}

/// The grouping so far: committed groups and the boundaries they left.
struct Grouping {
    groups: Vec<Group>,
    /// The group each node belongs to.
    group_of: Vec<Option<usize>>,
    /// Nodes in a group, or dead.
    assigned: Vec<bool>,
    boundaries: Vec<Boundary>,
    /// Whether a producer stayed outside a kernel only because other kernels read it too
    /// (a grouping that may store shared members would differ).
    shared_refused: bool,
}

/// Tries to add producer `p` to `group`; returns the reason when it cannot join.
fn absorb(
    g: &Graph,
    live: &[bool],
    st: &Grouping,
    plan: &Plan,
    stores: Stores,
    group: &mut Group,
    p: NodeId,
    memo: &mut Memo,
) -> Result<(), String> {
    let node = g.node(p);
    match &node.op {
        Op::Assign => return Err("an in-place update runs as its own kernel".into()),
        Op::Library(op) => return Err(format!("{} is a library call", op.name())),
        Op::Input { .. } | Op::Fill { .. } => return Err("not a computing node".into()),
        Op::Unary { .. }
        | Op::Binary { .. }
        | Op::Where
        | Op::Cast
        | Op::Reduce { .. }
        | Op::Random { .. } => {}
    }
    let requested = g.outputs.contains(&p);
    if requested && stores < Stores::Requested {
        return Err("its buffer is observable (requested or held by a tensor)".into());
    }
    let outside: Vec<NodeId> = g
        .graph
        .neighbors_directed(p, Direction::Outgoing)
        .filter(|c| live[c.index()] && !group.members.contains(c))
        .collect();
    if !outside.is_empty() {
        if stores < Stores::Shared {
            return Err(SHARED.into());
        }
        if plan.class_of[p.index()].is_some() {
            return Err(format!(
                "{SHARED}, and it shares a kernel with the groups it was merged with"
            ));
        }
        let members = &group.members;
        let units = |u: usize| &st.groups[u].members[..];
        if depends(
            g,
            live,
            &st.group_of,
            &units,
            &outside,
            &|n| members.contains(&n),
            false,
        ) {
            return Err(format!(
                "{SHARED}, one of which feeds this kernel (storing it here would make a cycle)"
            ));
        }
    }
    let stored = requested || !outside.is_empty();
    if stored && group.outputs.len() >= MAX_OUTPUTS {
        return Err(format!(
            "it is needed outside the kernel, which already stores {MAX_OUTPUTS} outputs"
        ));
    }
    // Every read by the kernel must compose with the producer's output view, at the kernel's
    // space; a read that merges the producer's dims (a copying reshape) may refine the space
    // instead. Readers in other kernels read the stored buffer.
    for e in g.graph.edges_directed(p, Direction::Outgoing) {
        let consumer = petgraph::visit::EdgeRef::target(&e);
        if !live[consumer.index()] || !group.members.contains(&consumer) {
            continue;
        }
        let cmap = match g.node(consumer).op {
            Op::Reduce { .. } => Some(AffineMap::identity(group.space.len())),
            Op::Input { .. }
            | Op::Fill { .. }
            | Op::Unary { .. }
            | Op::Binary { .. }
            | Op::Where
            | Op::Cast
            | Op::Assign
            | Op::Library(_)
            | Op::Random { .. } => member_map(g, group, consumer, memo),
        };
        let composes = cmap
            .as_ref()
            .is_some_and(|m| read_map(&e.weight().view, m, &group.space, &node.out).is_some());
        if !composes && !refine_space(group, &e.weight().view, cmap.as_ref(), node) {
            return Err(
                "a consumer reads it through a view no affine index expresses (a copying reshape)"
                    .into(),
            );
        }
        if !composes {
            // The space was refined: every member's map changes.
            memo.clear();
        }
    }
    let partial =
        "it is needed outside the kernel, which does not compute it whole and once per element";
    match &node.op {
        op if is_elementwise(op) => {
            if stored {
                let map = member_map(g, group, p, memo)
                    .filter(|m| covers_once(m, &group.space, group.reduce_axes, &node.out.shape))
                    .ok_or(partial)?;
                group.outputs.push((p, map));
            }
            group.members.push(p);
            Ok(())
        }
        Op::Reduce { axes, .. } => {
            let input_space = g.inputs(p)[0].1.shape.to_vec();
            let outer = input_space.len() - axes;
            let kept = &input_space[..outer];
            let mut widened = group.clone();
            if group.reduce_axes == 0 && group.space == kept {
                // Epilogue over the kept dims (mean = sum / n): the space grows by the reduced dims.
                widened.space = input_space.clone();
                widened.reduce_axes = *axes;
                for (_, map) in &mut widened.outputs {
                    *map = map.widen(*axes);
                }
            } else if group.space == input_space
                && (group.reduce_axes == 0 || group.reduce_axes == *axes)
            {
                // Another reduction over the same rows (softmax, layernorm).
                widened.reduce_axes = *axes;
            } else {
                return Err("a reduction over a different iteration space".into());
            }
            widened.members.push(p);
            memo.clear();
            let row = AffineMap::projection(widened.space.len(), outer);
            match member_map(g, &widened, p, memo) {
                Some(m) if same_on(&m, &row, &widened.space) => {
                    if stored {
                        if !covers_once(&row, &widened.space, *axes, &node.out.shape) {
                            memo.clear();
                            return Err(partial.into());
                        }
                        widened.outputs.push((p, row));
                    }
                    *group = widened;
                    Ok(())
                }
                _ => {
                    // The maps computed for the rejected space are stale.
                    memo.clear();
                    Err("its consumers read it at other rows than the kernel's".into())
                }
            }
        }
        Op::Assign
        | Op::Library(_)
        | Op::Input { .. }
        | Op::Fill { .. }
        | Op::Unary { .. }
        | Op::Binary { .. }
        | Op::Where
        | Op::Cast
        | Op::Random { .. } => unreachable!("refused above"),
    }
}

/// A producer left outside a group: `(producer, consumer in the group, reason)`.
type Refusal = (NodeId, NodeId, String);

/// Grows `group` from its seeds, absorbing producers breadth-first: a producer joins once all
/// its consumers have (a producer refused while one of its consumers is still queued is
/// retried from it). Returns the group and the producers it left outside.
fn grow(
    g: &Graph,
    live: &[bool],
    st: &Grouping,
    plan: &Plan,
    stores: Stores,
    mut group: Group,
) -> (Group, Vec<Refusal>) {
    let mut refused: Vec<Refusal> = vec![];
    let mut memo = Memo::new();
    let mut queue: std::collections::VecDeque<NodeId> = group.members.iter().copied().collect();
    while let Some(m) = queue.pop_front() {
        for p in g
            .graph
            .neighbors_directed(m, Direction::Incoming)
            .collect::<Vec<_>>()
        {
            if group.members.contains(&p)
                || matches!(g.node(p).op, Op::Input { .. } | Op::Fill { .. })
            {
                continue;
            }
            if st.assigned[p.index()] {
                if let Some(other) = st.group_of[p.index()] {
                    let reason = format!(
                        "kernel %{} computes it and stores it for its other readers",
                        st.groups[other].root().index()
                    );
                    refused.push((p, m, reason));
                }
                continue;
            }
            match absorb(g, live, st, plan, stores, &mut group, p, &mut memo) {
                Ok(()) => queue.push_back(p),
                Err(reason) => refused.push((p, m, reason)),
            }
        }
    }
    refused.retain(|(p, _, _)| !group.members.contains(p));
    (group, refused)
}

/// Drops the outputs no one outside the group needs (a merged seed whose readers all joined
/// it is recomputed in registers instead).
fn prune_outputs(g: &Graph, live: &[bool], group: &mut Group) {
    let members = &group.members;
    let needed = |n: NodeId| {
        g.outputs.contains(&n)
            || g.graph
                .neighbors_directed(n, Direction::Outgoing)
                .any(|c| live[c.index()] && !members.contains(&c))
    };
    let outputs: Vec<(NodeId, AffineMap)> = group
        .outputs
        .iter()
        .filter(|(n, _)| needed(*n))
        .cloned()
        .collect();
    assert!(
        !outputs.is_empty(),
        "invariant: a fusion group of live nodes has a member needed outside it"
    );
    group.outputs = outputs;
}

/// Whether the group can be kept: no path leaves it and comes back (through the kernels
/// committed so far; it would have to run both before and after them), and it lowers to a
/// kernel that verifies.
fn keeps(g: &Graph, live: &[bool], st: &Grouping, group: &Group) -> bool {
    let members = &group.members;
    let units = |u: usize| &st.groups[u].members[..];
    let cycle = depends(
        g,
        live,
        &st.group_of,
        &units,
        members,
        &|n| members.contains(&n),
        true,
    );
    let reduces = members
        .iter()
        .any(|m| matches!(g.node(*m).op, Op::Reduce { .. }));
    !cycle
        && (group.reduce_axes == 0 || reduces)
        && try_lower_group(g, group).is_some_and(|l| l.kernel.verify().is_empty())
}

/// The group seeded with the merged class of `root`: the roots of its class that are still
/// free and that no other kernel separates from the seeds taken so far. The first grouping's
/// members of each root, still free, count as part of it (they will join it again), not as
/// kernels in between.
fn class_seed(g: &Graph, live: &[bool], st: &Grouping, plan: &Plan, root: NodeId) -> Option<Group> {
    let class = &plan.classes[plan.class_of[root.index()]?];
    let free = |i: usize| -> Vec<NodeId> {
        class.members[i]
            .iter()
            .copied()
            .filter(|n| !st.assigned[n.index()])
            .collect()
    };
    let first = class.roots.iter().position(|(n, _)| *n == root)?;
    let mut outputs = vec![class.roots[first].clone()];
    let mut taken: Vec<NodeId> = free(first);
    let units = |u: usize| &st.groups[u].members[..];
    for (i, (n, map)) in class.roots.iter().enumerate() {
        if i == first || st.assigned[n.index()] || outputs.len() >= MAX_OUTPUTS {
            continue;
        }
        let candidate = free(i);
        let between = depends(
            g,
            live,
            &st.group_of,
            &units,
            &taken,
            &|x| candidate.contains(&x),
            true,
        ) || depends(
            g,
            live,
            &st.group_of,
            &units,
            &candidate,
            &|x| taken.contains(&x),
            true,
        );
        if !between {
            outputs.push((*n, map.clone()));
            taken.extend(candidate);
        }
    }
    (outputs.len() > 1).then(|| Group {
        members: outputs.iter().map(|(n, _)| *n).collect(),
        outputs,
        space: class.space.clone(),
        reduce_axes: class.reduce_axes,
    })
}

/// Groups the graph under `plan`, walking from the last node back.
fn group_nodes(g: &Graph, live: &[bool], plan: &Plan) -> Grouping {
    let mut st = Grouping {
        groups: vec![],
        group_of: vec![None; g.graph.node_count()],
        assigned: live.iter().map(|l| !l).collect(),
        boundaries: vec![],
        shared_refused: false,
    };
    for &root in g.topo_order().iter().rev() {
        if st.assigned[root.index()] || !needs_kernel(g, root) {
            continue;
        }
        let Some(single) = seed(g, root) else {
            continue;
        };
        // From the most to the least ambitious; the last (one output) always lowers.
        let mut attempts: Vec<(Group, Stores)> = vec![];
        if let Some(merged) = class_seed(g, live, &st, plan, root) {
            attempts.push((merged, plan.stores));
        }
        for stores in [Stores::Shared, Stores::Requested, Stores::Seeds] {
            if stores <= plan.stores {
                attempts.push((single.clone(), stores));
            }
        }
        let last = attempts.len() - 1;
        for (i, (seeded, stores)) in attempts.into_iter().enumerate() {
            let merged = seeded.outputs.len() > 1;
            let (mut group, refused) = grow(g, live, &st, plan, stores, seeded);
            prune_outputs(g, live, &mut group);
            if i < last && (merged || group.outputs.len() > 1) && !keeps(g, live, &st, &group) {
                continue;
            }
            commit(&mut st, group, refused);
            break;
        }
    }
    // Edges into library calls and in-place updates are boundaries too.
    for id in g.graph.node_indices() {
        if let Op::Assign | Op::Library(_) = g.node(id).op {
            for p in g.graph.neighbors_directed(id, Direction::Incoming) {
                if needs_kernel(g, p)
                    && !st
                        .boundaries
                        .iter()
                        .any(|b| b.producer == p && b.consumer == id)
                {
                    let reason = format!("{} reads materialised buffers", g.node(id).op.name());
                    st.boundaries.push(Boundary {
                        producer: p,
                        consumer: id,
                        reason,
                    });
                }
            }
        }
    }
    st
}

/// Adds `group` to the grouping with the boundaries its producers left.
fn commit(st: &mut Grouping, group: Group, refused: Vec<Refusal>) {
    let index = st.groups.len();
    for m in &group.members {
        st.assigned[m.index()] = true;
        st.group_of[m.index()] = Some(index);
    }
    for (producer, consumer, reason) in refused {
        st.shared_refused |= reason == SHARED;
        if !st
            .boundaries
            .iter()
            .any(|b: &Boundary| b.producer == producer && b.consumer == consumer)
        {
            st.boundaries.push(Boundary {
                producer,
                consumer,
                reason,
            });
        }
    }
    st.groups.push(group);
}

/// The `fuse` pass.
pub fn fuse(g: &mut Graph) {
    let live = g.live();
    let first = group_nodes(
        g,
        &live,
        &Plan::alone(g.graph.node_count(), Stores::Requested),
    );
    let plan = plan_merges(g, &live, &first.groups, &first.group_of);
    let grouping = if plan.classes.is_empty() && !first.shared_refused {
        first
    } else {
        group_nodes(g, &live, &plan)
    };
    let mut groups = grouping.groups;
    groups.reverse();
    g.groups = groups;
    g.boundaries = grouping.boundaries;
}

#[cfg(test)]
mod tests {
    use super::*;
    use smelt_ir::graph::Node;
    use smelt_ir::{BinaryOp, DType, ReduceOp, Scalar, UnaryOp, View};

    fn node(op: Op, shape: &[usize]) -> Node {
        Node::contiguous(op, DType::F32, shape)
    }

    #[test]
    fn a_path_that_leaves_a_group_and_comes_back_is_a_dependency() {
        // a → b → c and a → c: a group of {a, c} would run both before and after b.
        let mut g = Graph::new();
        let x = g.add_node(node(Op::Input { slot: 0 }, &[4]), vec![]);
        let v = View::contiguous(&[4]);
        let exp = Op::Unary {
            op: UnaryOp::Exp,
            compute: DType::F32,
        };
        let add = Op::Binary {
            op: BinaryOp::Add,
            compute: DType::F32,
        };
        let a = g.add_node(node(exp.clone(), &[4]), vec![(x, v.clone())]);
        let b = g.add_node(node(exp, &[4]), vec![(a, v.clone())]);
        let c = g.add_node(node(add, &[4]), vec![(a, v.clone()), (b, v)]);
        g.outputs = vec![c];
        let live = g.live();
        let unit_of = vec![None; g.graph.node_count()];
        let units = |_: usize| -> &[NodeId] { &[] };
        let group = [a, c];
        let inside = |n: NodeId| group.contains(&n);
        assert!(depends(&g, &live, &unit_of, &units, &group, &inside, true));
        // Without b in between, the direct edge a → c is absorbed by the group.
        let pair = [a, b];
        let inside = |n: NodeId| pair.contains(&n);
        assert!(!depends(&g, &live, &unit_of, &units, &pair, &inside, true));
    }

    #[test]
    fn an_elementwise_chain_is_one_group() {
        let mut g = Graph::new();
        let x = g.add_node(node(Op::Input { slot: 0 }, &[4, 4]), vec![]);
        let c = g.add_node(
            node(
                Op::Fill {
                    value: Scalar::Float(2.0),
                },
                &[],
            ),
            vec![],
        );
        let v = View::contiguous(&[4, 4]);
        let m = g.add_node(
            node(
                Op::Binary {
                    op: BinaryOp::Mul,
                    compute: DType::F32,
                },
                &[4, 4],
            ),
            vec![(x, v.clone()), (c, View::new(vec![4, 4], vec![0, 0], 0))],
        );
        let e = g.add_node(
            node(
                Op::Unary {
                    op: UnaryOp::Exp,
                    compute: DType::F32,
                },
                &[4, 4],
            ),
            vec![(m, v.t().unwrap())],
        );
        g.outputs = vec![e];
        fuse(&mut g);
        assert_eq!(g.groups.len(), 1);
        assert_eq!(g.groups[0].members, vec![e, m]);
    }

    #[test]
    fn a_reduction_fuses_its_prologue_and_epilogue() {
        let mut g = Graph::new();
        let x = g.add_node(node(Op::Input { slot: 0 }, &[3, 5]), vec![]);
        let v = View::contiguous(&[3, 5]);
        let sq = g.add_node(
            node(
                Op::Unary {
                    op: UnaryOp::Square,
                    compute: DType::F32,
                },
                &[3, 5],
            ),
            vec![(x, v.clone())],
        );
        let s = g.add_node(
            node(
                Op::Reduce {
                    op: ReduceOp::Sum,
                    axes: 1,
                },
                &[3],
            ),
            vec![(sq, v)],
        );
        let r = g.add_node(
            node(
                Op::Unary {
                    op: UnaryOp::Sqrt,
                    compute: DType::F32,
                },
                &[3],
            ),
            vec![(s, View::contiguous(&[3]))],
        );
        g.outputs = vec![r];
        fuse(&mut g);
        assert_eq!(g.groups.len(), 1, "{:?}", g.groups);
        assert_eq!(
            (g.groups[0].space.clone(), g.groups[0].reduce_axes),
            (vec![3, 5], 1)
        );
    }

    fn unary(g: &mut Graph, op: UnaryOp, x: NodeId, view: View) -> NodeId {
        let shape = view.shape.clone();
        g.add_node(
            node(
                Op::Unary {
                    op,
                    compute: DType::F32,
                },
                &shape,
            ),
            vec![(x, view)],
        )
    }

    fn row_sum(g: &mut Graph, x: NodeId, rows: usize, cols: usize) -> NodeId {
        g.add_node(
            node(
                Op::Reduce {
                    op: ReduceOp::Sum,
                    axes: 1,
                },
                &[rows],
            ),
            vec![(x, View::contiguous(&[rows, cols]))],
        )
    }

    #[test]
    fn a_requested_member_is_stored_by_the_kernel_that_computes_it() {
        let mut g = Graph::new();
        let x = g.add_node(node(Op::Input { slot: 0 }, &[3, 5]), vec![]);
        let e = unary(&mut g, UnaryOp::Exp, x, View::contiguous(&[3, 5]));
        let s = row_sum(&mut g, e, 3, 5);
        g.outputs = vec![s, e];
        fuse(&mut g);
        assert_eq!(g.groups.len(), 1, "{:?}", g.groups);
        assert_eq!(g.groups[0].output_nodes(), vec![s, e]);
        let lowered = smelt_ir::fused::lower_group(&g, &g.groups[0]);
        assert_eq!(lowered.writes, vec![s, e]);
        assert_eq!(lowered.kernel.outputs(), 1..3);
    }

    #[test]
    fn sibling_reductions_of_the_same_rows_share_a_kernel() {
        let mut g = Graph::new();
        let x = g.add_node(node(Op::Input { slot: 0 }, &[3, 5]), vec![]);
        let s1 = row_sum(&mut g, x, 3, 5);
        let sq = unary(&mut g, UnaryOp::Square, x, View::contiguous(&[3, 5]));
        let s2 = row_sum(&mut g, sq, 3, 5);
        g.outputs = vec![s1, s2];
        fuse(&mut g);
        assert_eq!(g.groups.len(), 1, "{:?}", g.groups);
        let mut outputs = g.groups[0].output_nodes();
        outputs.sort();
        assert_eq!(outputs, vec![s1, s2]);
        assert_eq!(g.groups[0].members.len(), 3);
    }

    #[test]
    fn a_member_the_kernel_computes_only_in_part_is_not_an_output() {
        // y reads half of e; e is requested too, whole: y's kernel cannot store it.
        let mut g = Graph::new();
        let x = g.add_node(node(Op::Input { slot: 0 }, &[4, 4]), vec![]);
        let e = unary(&mut g, UnaryOp::Exp, x, View::contiguous(&[4, 4]));
        let half = View::new(vec![2, 4], vec![4, 1], 8);
        let y = unary(&mut g, UnaryOp::Neg, e, half);
        g.outputs = vec![y, e];
        fuse(&mut g);
        assert_eq!(g.groups.len(), 2, "{:?}", g.groups);
        assert!(g.groups.iter().all(|grp| grp.outputs.len() == 1));
        assert!(
            g.boundaries
                .iter()
                .any(|b| b.producer == e && b.reason.contains("whole")),
            "{:?}",
            g.boundaries
        );
    }

    #[test]
    fn covers_once_accepts_bijections_and_row_stores_only() {
        let id = AffineMap::identity(2);
        assert!(covers_once(&id, &[3, 5], 0, &[3, 5]));
        let t = AffineMap {
            coeffs: vec![vec![0, 1], vec![1, 0]],
            offset: vec![0, 0],
            inputs: 2,
        };
        assert!(covers_once(&t, &[3, 5], 0, &[5, 3]));
        // A row value stored once per row of a reduction kernel.
        assert!(covers_once(&AffineMap::projection(2, 1), &[3, 5], 1, &[3]));
        // ... but stored repeatedly in an elementwise kernel.
        assert!(!covers_once(&AffineMap::projection(2, 1), &[3, 5], 0, &[3]));
        // A part of the shape, or an offset into it.
        assert!(!covers_once(&id, &[2, 5], 0, &[3, 5]));
        let shifted = AffineMap {
            offset: vec![1, 0],
            ..id.clone()
        };
        assert!(!covers_once(&shifted, &[2, 5], 0, &[3, 5]));
        // An empty space writes nothing of a non-empty output; an empty reduced dim still
        // leaves the rows (found by smelt fuzz: x ^ -1 stored from the loop of an empty
        // diagonal of it, and a row's epilogue over an empty reduction).
        let none = AffineMap::projection(3, 3);
        assert!(!covers_once(&none, &[1, 1, 0], 0, &[1, 1, 1]));
        assert!(covers_once(&AffineMap::projection(2, 1), &[3, 0], 1, &[3]));
        assert!(!covers_once(&AffineMap::projection(2, 1), &[0, 4], 1, &[1]));
    }
}
