//! `schedule`: orders the kernels of a graph (one per node that needs one, for now) by
//! dependency and records each buffer's last use so the runtime can free it early.

use smelt_ir::fused::lower_group;
use smelt_ir::lower::{lower_library, lower_node, needs_kernel};
use smelt_ir::{Graph, NodeId, Op, Schedule, Step, Work};

/// Builds the schedule of `g`: one step per fusion group (per node needing a kernel when
/// `fuse` did not run), in topological order of the group roots.
pub fn schedule(g: &Graph) -> Schedule {
    let mut steps: Vec<Step> = vec![];
    let mut fused_member = vec![false; g.graph.node_count()];
    let mut group_of = vec![None; g.graph.node_count()];
    for (i, group) in g.groups.iter().enumerate() {
        for m in &group.members {
            fused_member[m.index()] = true;
        }
        group_of[group.root.index()] = Some(i);
    }
    let live = g.live();
    for id in g.topo_order() {
        if !live[id.index()] {
            continue;
        }
        if let Some(i) = group_of[id.index()] {
            let lowered = lower_group(g, &g.groups[i]);
            let (reads, writes) = lowered.inputs.split_at(lowered.inputs.len() - 1);
            steps.push(Step {
                work: Work::Kernel(lowered.kernel),
                reads: reads.to_vec(),
                writes: writes[0],
                frees: vec![],
            });
            continue;
        }
        if fused_member[id.index()] || !needs_kernel(g, id) {
            continue;
        }
        if let Op::Library(_) = g.node(id).op {
            let (call, reads) = lower_library(g, id);
            steps.push(Step {
                work: Work::Library(call),
                reads,
                writes: id,
                frees: vec![],
            });
            continue;
        }
        let lowered = lower_node(g, id);
        let (reads, writes) = lowered.inputs.split_at(lowered.inputs.len() - 1);
        steps.push(Step {
            work: Work::Kernel(lowered.kernel),
            reads: reads.to_vec(),
            writes: writes[0],
            frees: vec![],
        });
    }
    for step in &mut steps {
        if let Work::Kernel(k) = &mut step.work {
            k.order_loops();
        }
    }
    // Last use of each buffer: free it after the step that reads it last, unless it is an
    // output or holds a realized input (whose lazy node keeps it anyway).
    let mut last: Vec<Option<usize>> = vec![None; g.graph.node_count()];
    for (i, step) in steps.iter().enumerate() {
        for r in &step.reads {
            last[r.index()] = Some(i);
        }
    }
    for (n, l) in last.iter().enumerate() {
        let id = NodeId::new(n);
        if let Some(i) = l
            && !g.outputs.contains(&id)
        {
            steps[*i].frees.push(id);
        }
    }
    Schedule {
        steps,
        nodes: g.graph.node_count(),
    }
}
