//! smelt's graph passes and scheduler: graph IR in, an ordered list of kernels out.
//!
//! The pipeline is data ([`PIPELINE`]): each pass is a named function in a file of the same
//! name, can be disabled with `SMELT_DISABLE=name,…`, is followed by the graph verifier in
//! tests and debug builds, and with `SMELT_DUMP=passes` the graph is printed after each pass
//! (or `(unchanged)`).

pub mod eliminate_copies;
pub mod fold_bias;
pub mod fuse;
pub mod propagate_layout;
pub mod schedule;
pub mod simplify;

pub use schedule::schedule;

use smelt_ir::{Graph, NodeId};

/// A graph pass: a named rewrite that preserves results.
pub type Pass = fn(&mut Graph);

/// The pass pipeline, in order. Without `fuse` every op is its own kernel ("unfused").
pub const PIPELINE: &[(&str, Pass)] = &[
    ("simplify", simplify::simplify),
    ("eliminate_copies", eliminate_copies::eliminate_copies),
    ("propagate_layout", propagate_layout::propagate_layout),
    ("fold_bias", fold_bias::fold_bias),
    ("fuse", fuse::fuse),
];

thread_local! {
    static DISABLED_HERE: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Names of passes disabled through `SMELT_DISABLE`, plus those disabled on this thread by
/// [`with_disabled`].
pub fn disabled_by_env() -> Vec<String> {
    let mut names: Vec<String> = std::env::var("SMELT_DISABLE")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    DISABLED_HERE.with(|d| names.extend(d.borrow().iter().cloned()));
    names
}

/// Runs `f` with the passes `names` disabled on this thread (tests use it to run the same
/// programs under every pass configuration in parallel).
pub fn with_disabled<R>(names: &[&str], f: impl FnOnce() -> R) -> R {
    struct Restore(Vec<String>);
    impl Drop for Restore {
        fn drop(&mut self) {
            DISABLED_HERE.with(|d| *d.borrow_mut() = std::mem::take(&mut self.0));
        }
    }
    let previous = DISABLED_HERE.with(|d| d.replace(names.iter().map(|n| n.to_string()).collect()));
    let _restore = Restore(previous);
    f()
}

/// Runs every pass of [`PIPELINE`] not disabled by `SMELT_DISABLE`.
pub fn optimize(g: &mut Graph) {
    optimize_with(g, &disabled_by_env());
}

/// Runs every pass of [`PIPELINE`] whose name is not in `disabled`, verifying the graph after
/// each in debug builds and dumping it when `SMELT_DUMP` contains `passes`.
pub fn optimize_with(g: &mut Graph, disabled: &[String]) {
    let dump = smelt_ir::dump_requested("passes");
    for (name, pass) in PIPELINE {
        if disabled.iter().any(|d| d == name) {
            continue;
        }
        let before = if dump { Some(describe(g)) } else { None };
        pass(g);
        if cfg!(debug_assertions) {
            let errors = g.verify();
            assert!(
                errors.is_empty(),
                "invariant: graph verifies after pass {name}: {errors:?}"
            );
        }
        if let Some(before) = before {
            let after = describe(g);
            if after == before {
                eprintln!("after {name}: (unchanged)");
            } else {
                eprintln!("after {name}:\n{after}");
            }
        }
    }
}

/// The graph's text with its fusion groups: `kernel %outputs… = [%members…] space … reduce k`.
pub fn describe(g: &Graph) -> String {
    let mut s = g.to_text();
    for group in &g.groups {
        let ids = |nodes: &[NodeId]| {
            nodes
                .iter()
                .map(|m| format!("%{}", m.index()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        s.push_str(&format!(
            "kernel {} = [{}] space {:?} reduce {}\n",
            ids(&group.output_nodes()),
            ids(&group.members),
            group.space,
            group.reduce_axes
        ));
    }
    s
}
