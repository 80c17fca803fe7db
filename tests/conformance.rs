//! Replays every file of `../shared/conformance` (PyTorch-recorded cases) through the public
//! API. Each file meets its floor (`common/ratchet.rs`): every case where its feature has
//! landed, elsewhere a count that only ever rises, so progress lands and regressions fail. No
//! case may panic, and the cpu JIT must compile every kernel the cases run.

use smelt_harness::conformance::{FileResult, run_file};
use std::path::Path;
mod common;
use common::assert_no_jit_refusals;
use common::ratchet::{FLOORS, files, suite_dir, verdict};

fn run(path: &Path) -> FileResult {
    let result = run_file(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
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
        "{}: smelt panicked on {} cases:\n{}",
        result.file,
        panics.len(),
        panics.join("\n")
    );
    assert_no_jit_refusals();
    result
}

#[test]
fn every_file_meets_its_floor() {
    let files = files();
    assert!(!files.is_empty(), "no *.jsonl in {}", suite_dir().display());
    let broken: Vec<String> = files
        .iter()
        .filter_map(|path| verdict(&run(path)).err())
        .collect();
    assert!(broken.is_empty(), "{}", broken.join("\n\n"));
}

#[test]
fn every_floor_names_a_file_of_the_suite() {
    let dir = suite_dir();
    for (name, _) in FLOORS {
        assert!(
            dir.join(name).is_file(),
            "tests/common/ratchet.rs has a floor for {name}, which is not in {}",
            dir.display()
        );
    }
}
