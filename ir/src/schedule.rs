//! A schedule: the kernels of one realisation in dependency order, each naming the graph
//! nodes whose buffers it reads and the nodes whose buffers it produces (several for a
//! multi-output kernel), plus the buffers that die after each step.

use crate::graph::NodeId;
use crate::kernel::Work;
use std::any::Any;
use std::fmt::{self, Write as _};
use std::sync::{Arc, OnceLock};

/// What a backend worked out about a step's kernel at its first launch (that it verifies, its
/// compiled code), kept for the later launches of the same schedule: a plan from the plan
/// cache pays for it once. A clone starts empty, so a copy that is edited never sees what was
/// worked out for the original.
#[derive(Default)]
pub struct LaunchMemo(OnceLock<Arc<dyn Any + Send + Sync>>);

impl LaunchMemo {
    /// What `init` works out, computed at the first call. `None` when another backend's kind of
    /// memo is already here (a schedule run on two backends): the caller works it out itself.
    pub fn get_or_init<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Option<Arc<T>> {
        self.0
            .get_or_init(|| Arc::new(init()))
            .clone()
            .downcast::<T>()
            .ok()
    }
}

impl Clone for LaunchMemo {
    fn clone(&self) -> LaunchMemo {
        LaunchMemo::default()
    }
}

impl fmt::Debug for LaunchMemo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "LaunchMemo(set)"
        } else {
            "LaunchMemo(empty)"
        })
    }
}

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
    /// The backend's launch preparation, once per schedule.
    pub memo: LaunchMemo,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_memo_is_worked_out_once_and_a_clone_starts_empty() {
        let memo = LaunchMemo::default();
        let mut calls = 0;
        assert_eq!(
            memo.get_or_init(|| {
                calls += 1;
                7u32
            })
            .as_deref(),
            Some(&7)
        );
        assert_eq!(
            memo.get_or_init(|| {
                calls += 1;
                8u32
            })
            .as_deref(),
            Some(&7)
        );
        assert_eq!(calls, 1);
        // Another backend's kind of memo is not handed out as this one.
        assert_eq!(memo.get_or_init(|| "other").as_deref(), None);
        assert_eq!(memo.clone().get_or_init(|| 9u32).as_deref(), Some(&9));
    }
}
