//! `smelt fuzz`'s regression cases and its command line. `tests/fuzz_cases/*.jsonl` are cases
//! the fuzzer wrote for bugs it found (differential: their expectations are smelt's reference
//! mode's, not PyTorch's); each passes the conformance runner, realising each tensor when it is
//! read and all of them in one graph, and its program agrees in every mode. The command line
//! runs long runs in batches of child processes: a crash ends a batch, is reported as a failed
//! program, and the run goes on.

use smelt_harness::conformance::{Realise, run_file_with};
use smelt_harness::fuzzer::{check, exec::Mode};
use std::path::PathBuf;
use std::process::Command;
mod common;
use common::assert_no_jit_refusals;

fn case_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_cases");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_fuzz_case_passes_the_conformance_runner() {
    let files = case_files();
    assert!(!files.is_empty(), "no tests/fuzz_cases/*.jsonl");
    for path in files {
        for realise in [Realise::EachWhenRead, Realise::Together] {
            let result = run_file_with(&path, realise).expect("readable");
            let failures: Vec<String> = result
                .cases
                .iter()
                .filter_map(|c| c.failure.as_ref().map(|f| format!("{}: {f}", c.id)))
                .collect();
            assert!(
                failures.is_empty() && result.total() > 0,
                "{} ({realise:?}):\n{}",
                result.file,
                failures.join("\n")
            );
        }
    }
    assert_no_jit_refusals();
}

#[test]
fn every_fuzz_case_agrees_in_every_mode() {
    for path in case_files() {
        let text = std::fs::read_to_string(&path).expect("readable");
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let case: serde_json::Value = serde_json::from_str(line).expect("JSON");
            let steps = case["steps"].as_array().expect("steps").clone();
            if let Err(f) = check(&steps, &Mode::available()) {
                panic!("{}: {f}", case["id"]);
            }
        }
    }
}

fn smelt(args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_smelt"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("the smelt binary runs");
    (
        out.status.success(),
        String::from_utf8(out.stdout).expect("UTF-8 output"),
    )
}

#[test]
fn a_crashing_program_fails_its_batch_and_the_run_goes_on() {
    let out = std::env::temp_dir().join(format!("smelt-fuzz-crash-{}", std::process::id()));
    let dir = out.to_str().expect("UTF-8 path");
    let (ok, text) = smelt(
        &[
            "fuzz", "--seed", "1", "--count", "12", "--batch", "5", "--out", dir,
        ],
        &[("SMELT_FUZZ_ABORT_AT", "7")],
    );
    assert!(!ok, "a crash fails the run:\n{text}");
    assert!(
        text.contains("FAIL seed 1 program 7: crash"),
        "the program that was running is named:\n{text}"
    );
    assert!(text.ends_with("11 passed, 1 failed\n"), "{text}");
    assert!(text.contains("12 programs"), "{text}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn json_output_ends_with_a_summary_and_replay_compares_modes() {
    let (ok, text) = smelt(&["fuzz", "--seed", "4", "--count", "15", "--json"], &[]);
    assert!(ok, "{text}");
    let last: serde_json::Value =
        serde_json::from_str(text.lines().last().expect("a line")).expect("JSON summary");
    assert_eq!(last["programs"], 15);
    assert_eq!(last["passed"], 15);
    assert!(
        last["programs_per_second"]
            .as_f64()
            .is_some_and(|r| r > 0.0)
    );
    let file = case_files().into_iter().next().expect("a case file");
    let (ok, text) = smelt(
        &["fuzz", "--replay", file.to_str().expect("UTF-8 path")],
        &[],
    );
    assert!(ok, "{text}");
    assert!(text.ends_with(" passed, 0 failed\n"), "{text}");
}

/// CI's fixed-seed batch (docs/testing.md): the first 1,000 programs of seed 1, each in every
/// mode this machine has, agree (the debug build: 5 s of CPU, 32 s on a 2-core machine at load
/// average 13).
#[test]
fn the_fixed_seed_batch_passes() {
    let out = std::env::temp_dir().join(format!("smelt-fuzz-batch-{}", std::process::id()));
    let dir = out.to_str().expect("UTF-8 path");
    let (ok, text) = smelt(
        &["fuzz", "--seed", "1", "--count", "1000", "--out", dir],
        &[],
    );
    let _ = std::fs::remove_dir_all(&out);
    assert!(ok, "{text}");
    assert!(text.contains("seed 1: 1000 programs"), "{text}");
    assert!(text.ends_with("\n1000 passed, 0 failed\n"), "{text}");
}
