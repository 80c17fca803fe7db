//! `SMELT_CHECK=1` (this test binary sets it for its whole process): every realisation also
//! runs with every pass off and compares. Replays the conformance suite and the workloads
//! through that path, and random programs (`smelt_harness::fuzz`: every rank from 0 to 4, empty dims,
//! every dtype, specials, strided inputs; elementwise ops, reductions, scans, in-place writes
//! into views, matmul, gather, index_put, cat, sort, argmax) whose several outputs are realised
//! together (multi-output kernels).

use proptest::prelude::*;
use smelt::prelude::*;
use smelt_harness::fuzz::{Choices, input, program, shape};
use std::sync::Once;
mod common;
use common::{assert_no_jit_refusals, cases, ratchet};

fn enable_check() {
    static ONCE: Once = Once::new();
    // SAFETY: `set_var` races only with concurrent reads of the environment; the variable is
    // set once, under `Once`, and smelt reads it only while realizing, after this returns.
    ONCE.call_once(|| unsafe { std::env::set_var("SMELT_CHECK", "1") });
}

/// Every conformance file meets its floor (`common/ratchet.rs`) under `SMELT_CHECK` too: a
/// kernel that differs from the reference, or a fused run from the unfused one, fails its case.
/// `tests/fixtures/sweep215.jsonl` (see `tests/sweep215.rs`) passes whole under `SMELT_CHECK`.
#[test]
fn sweep215_fixture_passes_under_check() {
    enable_check();
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep215.jsonl");
    let r = smelt_harness::conformance::run_file(&path).expect("fixture readable");
    let failures: Vec<String> = r
        .cases
        .iter()
        .filter_map(|c| c.failure.as_ref().map(|f| format!("  {}: {f}", c.id)))
        .collect();
    assert!(
        failures.is_empty(),
        "under SMELT_CHECK:\n{}",
        failures.join("\n")
    );
    assert_no_jit_refusals();
}

#[test]
fn conformance_suite_passes_under_check() {
    enable_check();
    let broken: Vec<String> = ratchet::files()
        .iter()
        .filter_map(|path| {
            let r = smelt_harness::conformance::run_file(path).expect("suite readable");
            ratchet::verdict(&r)
                .err()
                .map(|e| format!("under SMELT_CHECK: {e}"))
        })
        .collect();
    assert!(broken.is_empty(), "{}", broken.join("\n\n"));
    assert_no_jit_refusals();
}

#[test]
fn workloads_pass_under_check() {
    enable_check();
    for name in smelt_harness::workloads::all_names() {
        let w = smelt_harness::workloads::build(name, 32).expect("known workload");
        w.output
            .try_realize()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    assert_no_jit_refusals();
}

/// Realises the outputs `build` makes (afresh each time) together under every configuration:
/// all passes on, and each pass off in turn; `SMELT_CHECK` compares each realisation with the
/// every-pass-off run.
fn agree_under_every_config(build: &dyn Fn() -> Vec<Tensor>) -> Result<(), TestCaseError> {
    let mut configs: Vec<Vec<&str>> = vec![vec![]];
    configs.extend(smelt_passes::PIPELINE.iter().map(|(name, _)| vec![*name]));
    for disabled in configs {
        let outs = build();
        let refs: Vec<&Tensor> = outs.iter().collect();
        let r = smelt_passes::with_disabled(&disabled, || smelt::realize(&refs));
        prop_assert!(r.is_ok(), "{disabled:?}: {:?}", r.err());
    }
    assert_no_jit_refusals();
    Ok(())
}

/// The program `inputs` and `ops` describe (`smelt_harness::fuzz`): a shape and two inputs of that
/// shape (each of its own dtype, values and layout) from `inputs`, then one op per byte of
/// `ops`.
fn fuzzed(inputs: &[u8], ops: &[u8]) -> Vec<Tensor> {
    let mut ch = Choices::new(inputs);
    let shape = shape(&mut ch);
    let (x, y) = (input(&mut ch, &shape), input(&mut ch, &shape));
    program(ops, &x, &y)
}

/// Bytes that choose a program's shape and inputs (`smelt_harness::fuzz::input` reads about a dozen
/// per input).
fn input_bytes() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 32)
}

proptest! {
    #![proptest_config(cases(24))]
    /// Programs on [130, 264]: big enough for the code paths small tensors never take (column
    /// reductions in blocks of 256 rows, full reductions split into parallel blocks, transposed
    /// 4×4 blocks over whole tiles, rows split across threads), in every dtype and layout.
    #[test]
    fn random_programs_agree_at_size(inputs in input_bytes(), ops in proptest::collection::vec(any::<u8>(), 1..6)) {
        enable_check();
        let mut ch = Choices::new(&inputs);
        let shape = [130, 264];
        let (x, y) = (input(&mut ch, &shape), input(&mut ch, &shape));
        let mut outs = program(&ops, &x, &y);
        let end = outs[outs.len() - 1].clone();
        let empty: &[i64] = &[];
        outs.push(end.sum(empty, false, None));
        outs.push(end.amax(&[0], false));
        let refs: Vec<&Tensor> = outs.iter().collect();
        let r = smelt::realize(&refs);
        prop_assert!(r.is_ok(), "{:?}", r.err());
        assert_no_jit_refusals();
    }
}

proptest! {
    #![proptest_config(cases(256))]
    /// Random programs (`smelt_harness::fuzz`) under every pass configuration.
    #[test]
    fn random_programs_agree_under_every_config(inputs in input_bytes(), ops in proptest::collection::vec(any::<u8>(), 1..9)) {
        enable_check();
        agree_under_every_config(&|| fuzzed(&inputs, &ops))?;
    }
}
