//! Which groups of a first grouping should share one kernel (part of `fuse`), and the
//! dependency test that keeps kernels acyclic.
//!
//! Two groups merge when
//! - their iteration spaces agree: equal space and reduced dims, or one is elementwise over
//!   the kept dims of the other's reduction (it becomes that kernel's row-level epilogue);
//! - merging saves memory traffic: they read a common buffer (horizontal fusion: `x.sum(1)`
//!   and `(x*x).sum(1)` then read `x` once), or one reads the other's output (that buffer is
//!   then computed in registers, and stored only if someone else needs it). Constants are not
//!   buffers: two groups that only share a constant stay apart;
//! - no third kernel lies on a path between them (merging would make a cycle: the merged
//!   kernel would have to run both before and after the third);
//! - the merged kernel stores at most [`MAX_OUTPUTS`] outputs.
//!
//! The merges are a plan: `fuse` groups the graph again, seeding each merged set of roots
//! together, and checks the result before keeping it.

use super::{MAX_OUTPUTS, Stores};
use petgraph::Direction;
use smelt_ir::affine::AffineMap;
use smelt_ir::graph::{Graph, Group, NodeId, Op};
use std::collections::HashSet;

/// Roots of first-grouping groups that should grow as one kernel, with the space they share
/// and each root's map from it.
#[derive(Clone, Debug)]
pub(super) struct Class {
    pub roots: Vec<(NodeId, AffineMap)>,
    /// The members of each root's first-grouping group (parallel to `roots`).
    pub members: Vec<Vec<NodeId>>,
    pub space: Vec<usize>,
    pub reduce_axes: usize,
}

/// What a grouping may do: the merged classes to seed together, and which members may be
/// stored besides the seeds.
#[derive(Clone, Debug)]
pub(super) struct Plan {
    pub classes: Vec<Class>,
    /// The class each root belongs to (only classes of two or more).
    pub class_of: Vec<Option<usize>>,
    pub stores: Stores,
}

impl Plan {
    /// No merges.
    pub fn alone(nodes: usize, stores: Stores) -> Plan {
        Plan {
            classes: vec![],
            class_of: vec![None; nodes],
            stores,
        }
    }
}

/// Whether a path of graph edges leads from the nodes `from` to a node where `to` holds.
/// Kernels are the units of order: reaching any node of a kernel (`unit_of`, whose nodes
/// `unit_nodes` lists) continues from all of its nodes, since the kernel runs after all its
/// inputs and before all readers of any of its outputs. With `via_third`, edges from `from`
/// straight into `to` do not count (merging the two absorbs them); only paths through some
/// other node do. `from` and `to` may overlap (a group asking whether a path leaves it and
/// comes back): a `to` node counts when the path reaches it again, though it started there.
pub(super) fn depends<'a>(
    g: &Graph,
    live: &[bool],
    unit_of: &[Option<usize>],
    unit_nodes: &dyn Fn(usize) -> &'a [NodeId],
    from: &[NodeId],
    to: &dyn Fn(NodeId) -> bool,
    via_third: bool,
) -> bool {
    let mut seen: HashSet<NodeId> = HashSet::new();
    let mut start: Vec<NodeId> = vec![];
    for &f in from {
        if seen.insert(f) {
            start.push(f);
        }
        if let Some(u) = unit_of[f.index()] {
            start.extend(unit_nodes(u).iter().copied().filter(|&n| seen.insert(n)));
        }
    }
    let mut stack: Vec<NodeId> = vec![];
    for &s in &start {
        for c in g.graph.neighbors_directed(s, Direction::Outgoing) {
            let direct = via_third && to(c);
            if !direct && !seen.contains(&c) {
                stack.push(c);
            }
        }
    }
    while let Some(v) = stack.pop() {
        if !live[v.index()] {
            continue;
        }
        // Before the `seen` test: a start node that is also a `to` node is reached again.
        if to(v) {
            return true;
        }
        if !seen.insert(v) {
            continue;
        }
        if let Some(u) = unit_of[v.index()] {
            stack.extend(unit_nodes(u).iter().copied().filter(|n| !seen.contains(n)));
        }
        stack.extend(
            g.graph
                .neighbors_directed(v, Direction::Outgoing)
                .filter(|&n| to(n) || !seen.contains(&n)),
        );
    }
    false
}

/// The space two classes share: `(space, reduce_axes, widen_a, widen_b)`, where a widened
/// side is elementwise over the other's kept dims and its maps gain the reduced dims.
fn join(a: &Class, b: &Class) -> Option<(Vec<usize>, usize, bool, bool)> {
    let kept = |c: &Class| c.space[..c.space.len() - c.reduce_axes].to_vec();
    if a.space == b.space && a.reduce_axes == b.reduce_axes {
        Some((a.space.clone(), a.reduce_axes, false, false))
    } else if a.reduce_axes == 0 && b.reduce_axes > 0 && a.space == kept(b) {
        Some((b.space.clone(), b.reduce_axes, true, false))
    } else if b.reduce_axes == 0 && a.reduce_axes > 0 && b.space == kept(a) {
        Some((a.space.clone(), a.reduce_axes, false, true))
    } else {
        None
    }
}

/// Merge classes over the groups of a first grouping (`group_of`: each node's group).
struct Classes<'g> {
    g: &'g Graph,
    live: &'g [bool],
    /// Each group's class (the index of its representative group).
    rep: Vec<usize>,
    /// Per representative: the class, its nodes and how many outputs it stores.
    classes: Vec<Option<Class>>,
    nodes: Vec<Vec<NodeId>>,
    outputs: Vec<usize>,
    /// Each node's class.
    unit_of: Vec<Option<usize>>,
}

impl Classes<'_> {
    /// Merges the classes of groups `a` and `b` when the rules of this module allow it.
    fn try_merge(&mut self, a: usize, b: usize) {
        let (ca, cb) = (self.rep[a], self.rep[b]);
        if ca == cb {
            return;
        }
        let (Some(class_a), Some(class_b)) = (&self.classes[ca], &self.classes[cb]) else {
            panic!("invariant: a representative group holds its class")
        };
        let Some((space, reduce_axes, widen_a, widen_b)) = join(class_a, class_b) else {
            return;
        };
        if self.outputs[ca] + self.outputs[cb] > MAX_OUTPUTS {
            return;
        }
        let nodes = &self.nodes;
        let units = |u: usize| &nodes[u][..];
        let (na, nb) = (&nodes[ca], &nodes[cb]);
        let in_a = |n: NodeId| self.unit_of[n.index()] == Some(ca);
        let in_b = |n: NodeId| self.unit_of[n.index()] == Some(cb);
        if depends(self.g, self.live, &self.unit_of, &units, na, &in_b, true)
            || depends(self.g, self.live, &self.unit_of, &units, nb, &in_a, true)
        {
            return;
        }
        let widen = |roots: Vec<(NodeId, AffineMap)>, yes: bool| -> Vec<(NodeId, AffineMap)> {
            if yes {
                let extra = reduce_axes;
                roots
                    .into_iter()
                    .map(|(n, m)| (n, m.widen(extra)))
                    .collect()
            } else {
                roots
            }
        };
        let class_a = self.classes[ca].take().expect("checked above");
        let class_b = self.classes[cb].take().expect("checked above");
        let mut roots = widen(class_a.roots, widen_a);
        roots.extend(widen(class_b.roots, widen_b));
        let mut members = class_a.members;
        members.extend(class_b.members);
        self.classes[ca] = Some(Class {
            roots,
            members,
            space,
            reduce_axes,
        });
        let moved = std::mem::take(&mut self.nodes[cb]);
        for n in &moved {
            self.unit_of[n.index()] = Some(ca);
        }
        self.nodes[ca].extend(moved);
        self.outputs[ca] += self.outputs[cb];
        for r in &mut self.rep {
            if *r == cb {
                *r = ca;
            }
        }
    }
}

/// Plans the merges among `groups` (a first grouping; `group_of` gives each node's group).
pub(super) fn plan_merges(
    g: &Graph,
    live: &[bool],
    groups: &[Group],
    group_of: &[Option<usize>],
) -> Plan {
    let mut c = Classes {
        g,
        live,
        rep: (0..groups.len()).collect(),
        classes: groups
            .iter()
            .map(|grp| {
                Some(Class {
                    roots: vec![grp.outputs[0].clone()],
                    members: vec![grp.members.clone()],
                    space: grp.space.clone(),
                    reduce_axes: grp.reduce_axes,
                })
            })
            .collect(),
        nodes: groups.iter().map(|grp| grp.members.clone()).collect(),
        outputs: groups.iter().map(|grp| grp.outputs.len()).collect(),
        unit_of: group_of.to_vec(),
    };
    for p in g.topo_order() {
        if !live[p.index()] {
            continue;
        }
        let mut readers: Vec<usize> = vec![];
        for r in g
            .graph
            .neighbors_directed(p, Direction::Outgoing)
            .filter(|r| live[r.index()])
            .filter_map(|r| group_of[r.index()])
        {
            if Some(r) != group_of[p.index()] && !readers.contains(&r) {
                readers.push(r);
            }
        }
        // One reads the other's output.
        if let Some(w) = group_of[p.index()] {
            for &r in &readers {
                c.try_merge(w, r);
            }
        }
        // Both read the same buffer (a constant is no buffer: kernels inline it).
        if !matches!(g.node(p).op, Op::Fill { .. }) {
            for i in 1..readers.len() {
                for j in 0..i {
                    c.try_merge(readers[j], readers[i]);
                }
            }
        }
    }
    let mut plan = Plan::alone(g.graph.node_count(), Stores::Shared);
    for class in c.classes.into_iter().flatten() {
        if class.roots.len() < 2 {
            continue;
        }
        for (n, _) in &class.roots {
            plan.class_of[n.index()] = Some(plan.classes.len());
        }
        plan.classes.push(class);
    }
    plan
}
