//! The whole conformance suite meets its floors (`common/ratchet.rs`) with every pass enabled
//! (tests/conformance.rs), with each pass of the pipeline disabled in turn, and with all of
//! them off.

use smelt_harness::conformance::run_file;
mod common;
use common::{assert_no_jit_refusals, ratchet};

fn suite(disabled: &[&str]) {
    smelt_passes::with_disabled(disabled, || {
        let broken: Vec<String> = ratchet::files()
            .iter()
            .filter_map(|path| {
                let r = run_file(path).expect("suite readable");
                ratchet::verdict(&r)
                    .err()
                    .map(|e| format!("with {disabled:?} disabled: {e}"))
            })
            .collect();
        assert!(broken.is_empty(), "{}", broken.join("\n\n"));
    });
    assert_no_jit_refusals();
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
