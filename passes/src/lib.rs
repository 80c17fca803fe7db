//! smelt's graph passes and scheduler: graph IR in, an ordered list of kernels out.
//! The pipeline is a list of named passes (DESIGN §5); issue 4 fills it.

pub mod fuse;
pub mod schedule;

pub use schedule::schedule;

use smelt_ir::Graph;

/// A graph pass: a named rewrite that preserves results.
pub type Pass = fn(&mut Graph);

/// The pass pipeline, in order. Without `fuse` every op is its own kernel.
pub const PIPELINE: &[(&str, Pass)] = &[("fuse", fuse::fuse)];

/// Runs every pass of [`PIPELINE`] not disabled by `SMELT_DISABLE`, verifying the graph after
/// each in debug builds.
pub fn optimize(g: &mut Graph) {
    let disabled = std::env::var("SMELT_DISABLE").unwrap_or_default();
    for (name, pass) in PIPELINE {
        if disabled.split(',').any(|d| d.trim() == *name) {
            continue;
        }
        pass(g);
        if cfg!(debug_assertions) {
            let errors = g.verify();
            assert!(
                errors.is_empty(),
                "invariant: graph verifies after pass {name}: {errors:?}"
            );
        }
    }
}
