//! The conformance ratchet: which files of `../shared/conformance` exist (walked, so a new file
//! is picked up) and how many of each file's cases must pass.

use smelt_harness::conformance::FileResult;
use std::path::PathBuf;

/// How many of a file's cases must pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Floor {
    /// Every case: the file's feature has landed.
    All,
    /// Exactly this many (a feature that has not landed): a run that passes more fails until
    /// the floor is raised to match, so the count only ever rises; one that passes fewer is a
    /// regression.
    Passing(usize),
}

/// Every conformance file and its floor. A file without an entry fails the suite (with the
/// count to enter): a file that nobody enrolled would be checked for panics only.
pub const FLOORS: &[(&str, Floor)] = &[
    ("complex.jsonl", Floor::All),
    ("creation.jsonl", Floor::All),
    ("elementwise.jsonl", Floor::All),
    ("indexing.jsonl", Floor::All),
    ("inplace.jsonl", Floor::All),
    ("matmul.jsonl", Floor::All),
    ("named.jsonl", Floor::All),
    ("programs.jsonl", Floor::All),
    ("promotion.jsonl", Floor::All),
    ("reductions.jsonl", Floor::All),
    ("sparse.jsonl", Floor::All),
    ("views.jsonl", Floor::All),
];

pub fn suite_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance")
}

/// Every `*.jsonl` file of the suite, sorted by name.
pub fn files() -> Vec<PathBuf> {
    let dir = suite_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
}

/// The first failures of `result`, one per line.
pub fn failures(result: &FileResult) -> String {
    result
        .cases
        .iter()
        .filter_map(|c| c.failure.as_ref().map(|f| format!("  {}: {f}", c.id)))
        .take(40)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `result` meets its file's floor; otherwise what to do about it.
pub fn verdict(result: &FileResult) -> Result<(), String> {
    let (name, passed, total) = (&result.file, result.passed(), result.total());
    let floor = FLOORS
        .iter()
        .find(|(f, _)| f == name)
        .map(|(_, floor)| *floor);
    match floor {
        None => Err(format!(
            "{name}: no floor in tests/common/ratchet.rs; {passed}/{total} pass: enter \
             (\"{name}\", Floor::Passing({passed})), or Floor::All once every case passes"
        )),
        Some(Floor::All) if passed == total => Ok(()),
        Some(Floor::Passing(n)) if passed == n => Ok(()),
        Some(Floor::Passing(n)) if passed > n => Err(format!(
            "{name}: {passed}/{total} pass, more than the floor of {n}: raise it to {passed} \
             (Floor::All once every case passes)"
        )),
        Some(Floor::All) => Err(format!(
            "{name}: {passed}/{total} pass, where every case must; first failures:\n{}",
            failures(result)
        )),
        Some(Floor::Passing(n)) => Err(format!(
            "{name}: {passed}/{total} pass, below the floor of {n}: a regression; first \
             failures:\n{}",
            failures(result)
        )),
    }
}
