//! Replays `tests/fixtures/sweep215.jsonl`: PyTorch 2.15's behaviour on the semantics sweep's
//! edge cases (zero-size dims through reductions, copies, views and elementwise ops; ravel,
//! flatten, reshape, view and unflatten of 0-dim, 1-dim, expanded, stepped and empty inputs;
//! in-place writes with internal, full, partial, disjoint and too-hard overlap; integer
//! division by zero), recorded once by `scripts/sweep215.py` in the format of
//! `../shared/conformance/FORMAT.md`. Every case must pass, none may panic, and the cpu JIT must
//! compile every kernel the cases run. `tests/check.rs` replays the file under `SMELT_CHECK`.

use smelt_harness::conformance::run_file;
use std::path::PathBuf;
mod common;
use common::assert_no_jit_refusals;

pub fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep215.jsonl")
}

#[test]
fn every_sweep_case_passes() {
    let r = run_file(&fixture()).expect("tests/fixtures/sweep215.jsonl is readable");
    assert!(r.total() > 500, "only {} cases in {}", r.total(), r.file);
    let failures: Vec<String> = r
        .cases
        .iter()
        .filter_map(|c| c.failure.as_ref().map(|f| format!("  {}: {f}", c.id)))
        .collect();
    assert!(
        failures.is_empty(),
        "{}: {}/{} pass; failures:\n{}",
        r.file,
        r.passed(),
        r.total(),
        failures.join("\n")
    );
    assert_no_jit_refusals();
}
