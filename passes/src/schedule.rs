//! `schedule`: orders the kernels of a graph (one per fusion group, one per node that needs a
//! kernel outside any group) by dependency and records each buffer's last use so the runtime
//! can free it early.
//!
//! A multi-output group may depend on nodes that lie between its outputs in the graph's order,
//! so kernels are ordered as units: a unit runs once every unit it reads from has run (ties in
//! graph order of the unit's last node, which keeps single-output groups where their root is).

use smelt_ir::fused::lower_group;
use smelt_ir::lower::{lower_library, lower_node, needs_kernel};
use smelt_ir::{Graph, NodeId, Op, Schedule, Step, Work};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What one step runs: a fusion group (by index) or a single node.
#[derive(Clone, Copy, Debug)]
enum Unit {
    Group(usize),
    Node(NodeId),
}

/// Builds the schedule of `g`: one step per fusion group (per node needing a kernel when
/// `fuse` did not run), in dependency order.
pub fn schedule(g: &Graph) -> Schedule {
    let n = g.graph.node_count();
    let live = g.live();
    let order = g.topo_order();
    let mut pos = vec![0usize; n];
    for (i, id) in order.iter().enumerate() {
        pos[id.index()] = i;
    }
    let mut units: Vec<Unit> = vec![];
    let mut unit_of: Vec<Option<usize>> = vec![None; n];
    let mut key: Vec<usize> = vec![];
    for (i, group) in g.groups.iter().enumerate() {
        for m in &group.members {
            unit_of[m.index()] = Some(units.len());
        }
        key.push(
            group
                .members
                .iter()
                .map(|m| pos[m.index()])
                .max()
                .unwrap_or(0),
        );
        units.push(Unit::Group(i));
    }
    for &id in &order {
        if live[id.index()] && unit_of[id.index()].is_none() && needs_kernel(g, id) {
            unit_of[id.index()] = Some(units.len());
            key.push(pos[id.index()]);
            units.push(Unit::Node(id));
        }
    }
    // Dependencies between units, then Kahn's algorithm in graph order.
    let mut consumers: Vec<Vec<usize>> = vec![vec![]; units.len()];
    let mut waiting = vec![0usize; units.len()];
    for e in g.graph.edge_indices() {
        let (p, c) = g.graph.edge_endpoints(e).expect("edge exists");
        if let (Some(up), Some(uc)) = (unit_of[p.index()], unit_of[c.index()])
            && up != uc
            && !consumers[up].contains(&uc)
        {
            consumers[up].push(uc);
            waiting[uc] += 1;
        }
    }
    let mut ready: BinaryHeap<Reverse<(usize, usize)>> = (0..units.len())
        .filter(|&u| waiting[u] == 0)
        .map(|u| Reverse((key[u], u)))
        .collect();
    let mut steps: Vec<Step> = vec![];
    while let Some(Reverse((_, u))) = ready.pop() {
        steps.push(step(g, units[u]));
        for &c in &consumers[u] {
            waiting[c] -= 1;
            if waiting[c] == 0 {
                ready.push(Reverse((key[c], c)));
            }
        }
    }
    assert_eq!(
        steps.len(),
        units.len(),
        "invariant: the kernels of a graph (fusion groups and lone nodes) depend on each other \
         without a cycle"
    );
    for step in &mut steps {
        if let Work::Kernel(k) = &mut step.work {
            k.order_loops();
            k.merge_dims();
        }
    }
    // Last use of each buffer: free it after the step that reads it last, unless it is an
    // output or holds a realized input (whose lazy node keeps it anyway).
    let mut last: Vec<Option<usize>> = vec![None; n];
    for (i, step) in steps.iter().enumerate() {
        for r in &step.reads {
            last[r.index()] = Some(i);
        }
    }
    for (node, l) in last.iter().enumerate() {
        let id = NodeId::new(node);
        if let Some(i) = l
            && !g.outputs.contains(&id)
        {
            steps[*i].frees.push(id);
        }
    }
    Schedule { steps, nodes: n }
}

/// The step running `unit`.
fn step(g: &Graph, unit: Unit) -> Step {
    let (work, reads, writes) = match unit {
        Unit::Group(i) => {
            let lowered = lower_group(g, &g.groups[i]);
            (Work::Kernel(lowered.kernel), lowered.reads, lowered.writes)
        }
        Unit::Node(id) => {
            if let Op::Library(_) = g.node(id).op {
                let (call, reads) = lower_library(g, id);
                (Work::Library(call), reads, vec![id])
            } else {
                let lowered = lower_node(g, id);
                (Work::Kernel(lowered.kernel), lowered.reads, lowered.writes)
            }
        }
    };
    Step {
        work,
        reads,
        writes,
        frees: vec![],
    }
}
