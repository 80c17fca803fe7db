//! A schedule: the kernels of one realisation in dependency order, each naming the graph
//! nodes whose buffers it reads and the nodes whose buffers it produces (several for a
//! multi-output kernel), plus the buffers that die after each step.

use crate::graph::NodeId;
use crate::kernel::Work;
use std::fmt::{self, Write as _};

/// One kernel launch.
#[derive(Clone, Debug)]
pub struct Step {
    pub work: Work,
    /// Producer of each read argument, in argument order.
    pub reads: Vec<NodeId>,
    /// The nodes whose buffers the output arguments are, in output-argument order (one for a
    /// library call; one or more for a kernel).
    pub writes: Vec<NodeId>,
    /// Buffers no later step reads and no one requested: free them after this step.
    pub frees: Vec<NodeId>,
}

#[derive(Clone, Debug, Default)]
pub struct Schedule {
    pub steps: Vec<Step>,
    /// Number of graph nodes (buffers are indexed by node).
    pub nodes: usize,
}

impl Schedule {
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for (i, step) in self.steps.iter().enumerate() {
            let reads: Vec<String> = step
                .reads
                .iter()
                .map(|n| format!("%{}", n.index()))
                .collect();
            let writes: Vec<String> = step
                .writes
                .iter()
                .map(|n| format!("%{}", n.index()))
                .collect();
            let _ = writeln!(
                s,
                "step {i}: {} <- {}({})",
                writes.join(", "),
                step.work.name(),
                reads.join(", ")
            );
            for line in step.work.to_text().lines() {
                let _ = writeln!(s, "  {line}");
            }
        }
        s
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}
