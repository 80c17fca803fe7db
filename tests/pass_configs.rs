//! The whole conformance suite passes with every pass enabled (tests/conformance.rs) and with
//! each pass of the pipeline disabled in turn, and with all of them off.

use smelt::conformance::run_file;
use std::path::PathBuf;

fn suite(disabled: &[&str]) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance");
    smelt_passes::with_disabled(disabled, || {
        for file in [
            "views",
            "creation",
            "elementwise",
            "promotion",
            "reductions",
            "indexing",
            "matmul",
            "inplace",
            "programs",
            "named",
        ] {
            let r = run_file(&dir.join(format!("{file}.jsonl"))).expect("suite readable");
            let first = r.cases.iter().find(|c| c.failure.is_some());
            assert_eq!(
                r.passed(),
                r.total(),
                "{file} with {disabled:?} disabled: first failure {first:?}"
            );
        }
    });
}

#[test]
fn every_pass_can_be_disabled() {
    for (name, _) in smelt_passes::PIPELINE {
        suite(&[name]);
    }
}

#[test]
fn all_passes_disabled() {
    let all: Vec<&str> = smelt_passes::PIPELINE.iter().map(|(n, _)| *n).collect();
    suite(&all);
}
