//! `fuse`: groups graph nodes into kernels (DESIGN §5.4).
//!
//! What: walking from the last node back, each node that must be materialised roots a group;
//! a producer joins its consumers' group when every consumer is already in it, its buffer is
//! not observable, and every read of it composes with its output view into one affine map
//! (so the consumer can recompute it at the index it needs). Elementwise producers fuse
//! vertically; an elementwise chain fuses into the reduction that consumes it (prologue);
//! a reduction fuses into its elementwise consumers (epilogue) when they run over its kept
//! dims or over its whole input; several reductions over the same rows share one kernel
//! (softmax, layernorm, var: the kernel walks each row once per reduction).
//!
//! Why it is correct: a fused producer is a pure function of its index, recomputed where it
//! is read; a fused reduction is read only at the row the kernel is on (checked: its read map
//! is the projection onto the kept dims).
//!
//! Example: `relu(a*b + c)*0.5 + a` is five nodes and one kernel after `fuse`; `softmax(x)`
//! (amax, sub, exp, sum, div) is one kernel with two reductions.

use petgraph::Direction;
use smelt_ir::View;
use smelt_ir::affine::{AffineMap, common_refinement, merge_map, read_map};
use smelt_ir::graph::{Boundary, Graph, Group, Node, NodeId, Op};
use smelt_ir::lower::needs_kernel;

fn is_elementwise(op: &Op) -> bool {
    match op {
        Op::Unary { .. } | Op::Binary { .. } | Op::Where | Op::Cast => true,
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
            let space = g.inputs(root)[0].1.shape.clone();
            let outer = space.len() - axes;
            Some(Group {
                root,
                members: vec![root],
                root_map: AffineMap::projection(space.len(), outer),
                space,
                reduce_axes: *axes,
            })
        }
        Op::Unary { .. } | Op::Binary { .. } | Op::Where | Op::Cast => {
            let rank = node.out.ndim();
            Some(Group {
                root,
                members: vec![root],
                space: node.out.shape.clone(),
                reduce_axes: 0,
                root_map: AffineMap::identity(rank),
            })
        }
        Op::Input { .. } | Op::Fill { .. } | Op::Assign | Op::Library(_) => None,
    }
}

/// The map from the group's space to member `id`'s logical index, along one path of reads
/// (any path: a fused elementwise member is recomputed per read, a reduction has one row).
fn member_map(g: &Graph, group: &Group, id: NodeId, memo: &mut Memo) -> Option<AffineMap> {
    if id == group.root {
        return Some(group.root_map.clone());
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
            | Op::Library(_) => member_map(g, group, consumer, memo)?,
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
/// div/mod in the kernel). The root's map is composed with the merge of the new space.
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
    group.root_map = group.root_map.compose(&merge);
    group.space = fine;
    true
}

/// Tries to add producer `p` to `group`; returns the reason when it cannot join.
fn absorb(
    g: &Graph,
    live: &[bool],
    group: &mut Group,
    p: NodeId,
    memo: &mut Memo,
) -> Result<(), String> {
    let node = g.node(p);
    if g.outputs.contains(&p) {
        return Err("its buffer is observable (requested or held by a tensor)".into());
    }
    let consumers: Vec<NodeId> = g
        .graph
        .neighbors_directed(p, Direction::Outgoing)
        .filter(|c| live[c.index()])
        .collect();
    if consumers.iter().any(|c| !group.members.contains(c)) {
        return Err("it has consumers in other kernels".into());
    }
    // Every read must compose with the producer's output view, at the kernel's space; a read
    // that merges the producer's dims (a copying reshape) may refine the space instead.
    for e in g.graph.edges_directed(p, Direction::Outgoing) {
        let consumer = petgraph::visit::EdgeRef::target(&e);
        if !live[consumer.index()] {
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
            | Op::Library(_) => member_map(g, group, consumer, memo),
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
    match &node.op {
        op if is_elementwise(op) => {
            group.members.push(p);
            Ok(())
        }
        Op::Reduce { axes, .. } => {
            let input_space = g.inputs(p)[0].1.shape.clone();
            let outer = input_space.len() - axes;
            let kept = &input_space[..outer];
            let mut widened = group.clone();
            if group.reduce_axes == 0 && group.space == kept {
                // Epilogue over the kept dims (mean = sum / n): the space grows by the reduced dims.
                widened.space = input_space.clone();
                widened.reduce_axes = *axes;
                widened.root_map = group.root_map.widen(*axes);
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
            match member_map(g, &widened, p, memo) {
                Some(m) if m == AffineMap::projection(widened.space.len(), outer) => {
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
        Op::Assign => Err("an in-place update runs as its own kernel".into()),
        Op::Library(op) => Err(format!("{} is a library call", op.name())),
        Op::Input { .. }
        | Op::Fill { .. }
        | Op::Unary { .. }
        | Op::Binary { .. }
        | Op::Where
        | Op::Cast => Err("not a computing node".into()),
    }
}

/// The `fuse` pass.
pub fn fuse(g: &mut Graph) {
    let order = g.topo_order();
    let live = g.live();
    let mut assigned: Vec<bool> = live.iter().map(|l| !l).collect();
    let mut groups = vec![];
    let mut boundaries = vec![];
    for &root in order.iter().rev() {
        if assigned[root.index()] || !needs_kernel(g, root) {
            continue;
        }
        let Some(mut group) = seed(g, root) else {
            continue;
        };
        assigned[root.index()] = true;
        // Absorb producers breadth-first: a producer joins once all its consumers have (a
        // producer refused while one of its consumers is still queued is retried from it).
        let mut refused: Vec<(NodeId, NodeId, String)> = vec![];
        let mut memo = Memo::new();
        let mut queue = std::collections::VecDeque::from([root]);
        while let Some(m) = queue.pop_front() {
            for p in g
                .graph
                .neighbors_directed(m, Direction::Incoming)
                .collect::<Vec<_>>()
            {
                if assigned[p.index()] || matches!(g.node(p).op, Op::Input { .. } | Op::Fill { .. })
                {
                    continue;
                }
                match absorb(g, &live, &mut group, p, &mut memo) {
                    Ok(()) => {
                        assigned[p.index()] = true;
                        queue.push_back(p);
                    }
                    Err(reason) => refused.push((p, m, reason)),
                }
            }
        }
        refused.retain(|(p, _, _)| !group.members.contains(p));
        for (producer, consumer, reason) in refused {
            if !boundaries
                .iter()
                .any(|b: &Boundary| b.producer == producer && b.consumer == consumer)
            {
                boundaries.push(Boundary {
                    producer,
                    consumer,
                    reason,
                });
            }
        }
        groups.push(group);
    }
    // Edges into library calls and in-place updates are boundaries too.
    for id in g.graph.node_indices() {
        if let Op::Assign | Op::Library(_) = g.node(id).op {
            for p in g.graph.neighbors_directed(id, Direction::Incoming) {
                if needs_kernel(g, p)
                    && !boundaries
                        .iter()
                        .any(|b| b.producer == p && b.consumer == id)
                {
                    let reason = format!("{} reads materialised buffers", g.node(id).op.name());
                    boundaries.push(Boundary {
                        producer: p,
                        consumer: id,
                        reason,
                    });
                }
            }
        }
    }
    groups.reverse();
    g.groups = groups;
    g.boundaries = boundaries;
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
}
