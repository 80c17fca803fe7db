//! Helpers shared by the integration tests (`mod common;`).

// Each test binary compiles this module and uses part of it.
#![allow(dead_code)]

use proptest::prelude::ProptestConfig;

pub mod ratchet;

/// Panics if the cpu JIT has refused a kernel in this process: the cpu backend ran it on the
/// reference interpreter, and a comparison with the reference then compared the interpreter
/// with itself. Tests that compare end-to-end results call it after realising.
pub fn assert_no_jit_refusals() {
    let n = smelt_runtime::refused_kernels();
    assert_eq!(
        n, 0,
        "the cpu JIT refused {n} kernels, which ran on the reference interpreter instead \
         (SMELT_DUMP=kernels names them)"
    );
}

/// `ci` cases, unless `PROPTEST_CASES` asks for a longer soak
/// (`PROPTEST_CASES=20000 cargo test --release --test NAME`).
pub fn cases(ci: u32) -> ProptestConfig {
    let default = ProptestConfig::default();
    ProptestConfig {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            default.cases
        } else {
            ci
        },
        ..default
    }
}
