//! Replays `../shared/conformance` (PyTorch-recorded cases) through the public API, one test
//! per file. Files whose issue has landed must pass in full; the others assert a floor that
//! only ever rises (a ratchet), so progress lands and regressions fail. No case may panic.

use smelt::conformance::{FileResult, run_file};
use std::path::PathBuf;
mod common;
use common::assert_no_jit_refusals;

fn suite_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance")
}

fn run(file: &str) -> FileResult {
    let path = suite_dir().join(file);
    let result = run_file(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let panics: Vec<String> = result
        .cases
        .iter()
        .filter_map(|c| {
            c.failure
                .as_ref()
                .filter(|f| f.starts_with("PANIC"))
                .map(|f| format!("{}: {f}", c.id))
        })
        .collect();
    assert!(
        panics.is_empty(),
        "{file}: smelt panicked on {} cases:\n{}",
        panics.len(),
        panics.join("\n")
    );
    assert_no_jit_refusals();
    result
}

fn failures(result: &FileResult) -> String {
    result
        .cases
        .iter()
        .filter_map(|c| c.failure.as_ref().map(|f| format!("  {}: {f}", c.id)))
        .take(40)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every case of `file` passes.
fn all_pass(file: &str) {
    let r = run(file);
    assert_eq!(
        r.passed(),
        r.total(),
        "{file}: {}/{} passed; first failures:\n{}",
        r.passed(),
        r.total(),
        failures(&r)
    );
}

#[test]
fn views() {
    all_pass("views.jsonl");
}

#[test]
fn creation() {
    all_pass("creation.jsonl");
}

#[test]
fn elementwise() {
    all_pass("elementwise.jsonl");
}

#[test]
fn promotion() {
    all_pass("promotion.jsonl");
}

#[test]
fn reductions() {
    all_pass("reductions.jsonl");
}

#[test]
fn indexing() {
    all_pass("indexing.jsonl");
}

#[test]
fn matmul() {
    all_pass("matmul.jsonl");
}

#[test]
fn inplace() {
    all_pass("inplace.jsonl");
}

#[test]
fn programs() {
    all_pass("programs.jsonl");
}

#[test]
fn named() {
    all_pass("named.jsonl");
}
