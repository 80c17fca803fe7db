//! The fuzzer checked: programs are a function of seed and index, the generator reaches its
//! whole vocabulary, a disagreement between modes is caught, shrunk and written as a case the
//! conformance runner replays, and the rules of `num` on small examples.

use super::exec::{FailureKind, Mode, Tol};
use super::generator::{analyse, generate};
use super::num::{Num, tolerance};
use super::shrink::reproduce;
use super::{Config, check, fuzz, report};
use crate::conformance::{Realise, run_case_guarded_with};
use smelt_frontend::{DType, Scalar};
use std::collections::BTreeSet;
use std::time::Duration;

#[test]
fn the_same_seed_makes_the_same_programs() {
    for i in 0..40 {
        let a = generate(7, i);
        let b = generate(7, i);
        assert_eq!(a.steps, b.steps, "program {i} of seed 7");
    }
    let differ = (0..40).filter(|&i| generate(7, i).steps != generate(8, i).steps);
    assert!(differ.count() > 35, "seeds 7 and 8 make other programs");
}

/// Every op the generator knows, by family; each must show up in a few thousand programs.
const VOCABULARY: &[&str] = &[
    // creation
    "tensor",
    "zeros",
    "ones",
    "full",
    "arange",
    "linspace",
    "eye",
    "zeros_like",
    "ones_like",
    "full_like",
    "set_default_dtype",
    "tril",
    "triu",
    // views and copies
    "permute",
    "transpose",
    "t",
    "view",
    "reshape",
    "flatten",
    "unflatten",
    "ravel",
    "unfold",
    "diagonal",
    "movedim",
    "squeeze",
    "unsqueeze",
    "expand",
    "expand_as",
    "broadcast_to",
    "narrow",
    "select",
    "as_strided",
    "getitem",
    "contiguous",
    "clone",
    "detach",
    "to",
    "view_as",
    "reshape_as",
    "flip",
    "roll",
    "repeat",
    "split",
    "chunk",
    "tensor_split",
    "unbind",
    // elementwise
    "neg",
    "abs",
    "sign",
    "exp",
    "expm1",
    "exp2",
    "log",
    "log2",
    "log1p",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "square",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sigmoid",
    "relu",
    "erf",
    "floor",
    "ceil",
    "round",
    "trunc",
    "logical_not",
    "bitwise_not",
    "isnan",
    "isinf",
    "isfinite",
    "add",
    "sub",
    "mul",
    "div",
    "floor_divide",
    "remainder",
    "fmod",
    "pow",
    "maximum",
    "minimum",
    "atan2",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "where",
    "clamp",
    "masked_fill",
    // reductions
    "sum",
    "mean",
    "prod",
    "amax",
    "amin",
    "max",
    "min",
    "argmax",
    "argmin",
    "all",
    "any",
    "count_nonzero",
    "var",
    "std",
    "logsumexp",
    "softmax",
    "log_softmax",
    "cumsum",
    "cumprod",
    "sort",
    // joins and indexing
    "cat",
    "stack",
    "gather",
    "index_select",
    "take",
    "masked_select",
    "nonzero",
    // matmul family
    "matmul",
    "mm",
    "bmm",
    "mv",
    "dot",
    "outer",
    "addmm",
    // in place
    "add_",
    "sub_",
    "mul_",
    "div_",
    "neg_",
    "abs_",
    "exp_",
    "clamp_",
    "copy_",
    "fill_",
    "zero_",
    "masked_fill_",
    "setitem",
    // named
    "refine_names",
    "rename",
    "align_to",
    "align_as",
];

#[test]
fn the_generator_reaches_its_whole_vocabulary() {
    let mut seen = BTreeSet::new();
    let mut named_args = 0;
    for i in 0..3000 {
        for step in generate(11, i).steps {
            seen.insert(step["op"].as_str().unwrap_or("").to_string());
            let args = &step["args"];
            named_args += usize::from(args.get("names").is_some() || args.get("out_dim").is_some());
        }
    }
    let missing: Vec<&&str> = VOCABULARY
        .iter()
        .filter(|op| !seen.contains(**op))
        .collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");
    assert!(named_args > 100, "{named_args} steps with names");
}

#[test]
fn generated_programs_agree_in_every_mode() {
    for i in 0..60 {
        let p = generate(3, i);
        if let Err(f) = check(&p.steps, &Mode::available()) {
            panic!("program {i}: {f}\n{:#?}", p.steps);
        }
    }
}

/// A mode that is off by one in one value (`Mode::Skewed`) is caught, the program shrinks to
/// a case that still fails, and the case the fuzzer writes (the oracle's values) passes the
/// conformance runner on the real backends, both ways of realising.
#[test]
fn a_wrong_value_is_caught_shrunk_and_written_as_a_case() {
    let modes = [Mode::Reference, Mode::Skewed];
    let (index, steps, failure) = (0..200)
        .find_map(|i| {
            let p = generate(5, i);
            check(&p.steps, &modes).err().map(|f| (i, p.steps, f))
        })
        .expect("some program has a float value to skew");
    assert_eq!(failure.kind, FailureKind::Value, "{failure}");
    assert_eq!(failure.mode, Mode::Skewed);
    let mut config = Config::new(5);
    config.modes = modes.to_vec();
    config.shrink_budget = Duration::from_secs(60);
    let r = report(&config, index, steps.clone(), failure.clone(), true);
    assert!(r.shrunk.steps.len() <= steps.len());
    assert!(r.shrunk.complete, "shrinking finished within its budget");
    let again = reproduce(&r.shrunk.steps, &failure).expect("the shrunk program still fails");
    assert_eq!(again.signature(), failure.signature());
    // One float tensor suffices to show a skewed float value.
    assert_eq!(r.shrunk.steps.len(), 1, "{:#?}", r.shrunk.steps);
    for realise in [Realise::EachWhenRead, Realise::Together] {
        let replay = run_case_guarded_with(&r.case, realise);
        assert_eq!(replay.failure, None, "{}", r.case);
    }
    assert_eq!(r.case["id"], format!("fuzz/s5/p{index}"));
}

#[test]
fn a_run_counts_and_summarises() {
    let mut config = Config::new(9);
    config.count = Some(20);
    config.progress_secs = 0;
    let mut out = vec![];
    let s = fuzz(&config, &mut out).expect("writes to a vector");
    let text = String::from_utf8(out).expect("utf-8");
    assert_eq!(s.programs, 20);
    assert_eq!(s.passed + s.failed, 20);
    assert!(
        text.ends_with(&format!("{} passed, {} failed\n", s.passed, s.failed)),
        "{text}"
    );
    assert!(text.contains("programs/s"), "{text}");
    config.json = true;
    let mut out = vec![];
    fuzz(&config, &mut out).expect("writes to a vector");
    let last = String::from_utf8(out).expect("utf-8");
    let summary: serde_json::Value =
        serde_json::from_str(last.lines().last().expect("a summary line")).expect("JSON");
    assert_eq!(summary["programs"], 20);
}

#[test]
fn sums_of_grid_values_are_exact_while_the_grid_fits() {
    let eighths = Num::of_values(&[Scalar::Float(-4.875), Scalar::Float(2.5)]);
    assert!(eighths.exact);
    let g = eighths.grid.expect("on the 1/8 grid");
    assert_eq!((g.k, g.mag), (3, 4.875));
    // 4.875 · 8 · 1000 < 2^24: a sum of 1000 of them is exact in f32, and in f16 (which
    // accumulates in f32) exact up to its one rounding, off the grid.
    let tracker_step = serde_json::json!({"op": "sum", "args": {"self": "$x"}});
    let mut env = crate::conformance::Env::new();
    let mut nums = std::collections::HashMap::new();
    for (dtype, on_grid) in [(DType::F32, true), (DType::F16, false)] {
        let x = smelt_frontend::Tensor::zeros(&[1000], Some(dtype));
        env.insert("x".into(), x);
        nums.insert("x".to_string(), eighths.rounded(dtype));
        let e = super::rules::effect(&tracker_step, &env, &nums).expect("sum is admitted");
        assert!(e.results[0].exact, "{dtype}");
        assert_eq!(e.results[0].grid.is_some(), on_grid, "{dtype}");
        assert!(e.results[0].is_comparable(dtype), "{dtype}");
    }
}

#[test]
fn discrete_ops_on_approximate_values_are_refused() {
    let step =
        |op: &str| serde_json::json!({"let": "y", "op": op, "args": {"self": "$x", "other": 0.5}});
    let mut env = crate::conformance::Env::new();
    env.insert("x".into(), smelt_frontend::Tensor::zeros(&[3], None));
    let exact = Num::of_values(&[Scalar::Float(1.5)]);
    let exp = serde_json::json!({"let": "e", "op": "exp", "args": {"self": "$x"}});
    let nums = std::collections::HashMap::from([("x".to_string(), exact)]);
    let approx = super::rules::effect(&exp, &env, &nums)
        .expect("exp is admitted")
        .results[0];
    assert!(!approx.exact);
    let approx_nums =
        std::collections::HashMap::from([("x".to_string(), approx.rounded(DType::F32))]);
    for op in ["gt", "eq", "floor_divide", "remainder"] {
        assert!(
            super::rules::effect(&step(op), &env, &nums).is_ok(),
            "{op} of exact values"
        );
        assert!(
            super::rules::effect(&step(op), &env, &approx_nums).is_err(),
            "{op} of exp"
        );
    }
    // Arithmetic on approximate values is fine, within the tolerance.
    let mul = super::rules::effect(&step("mul"), &env, &approx_nums).expect("mul of exp");
    assert!(mul.results[0].is_comparable(DType::F32));
    let (rtol, atol) = tolerance(DType::F32);
    assert_eq!((rtol, atol), (2e-4, 2e-4));
}

#[test]
fn analysis_gives_each_bound_tensor_its_comparison() {
    let steps: Vec<serde_json::Value> = serde_json::from_str(
        r#"[{"let": "a", "op": "tensor", "args": {"data": [1.5, -2.0], "shape": [2], "dtype": "float32"}},
            {"let": "b", "op": "exp", "args": {"self": "$a"}},
            {"let": "c", "op": "gt", "args": {"self": "$a", "other": 0}},
            {"let": "d", "op": "gt", "args": {"self": "$b", "other": 1.0}}]"#,
    )
    .expect("JSON");
    assert!(analyse(&steps).is_err(), "a comparison of exp is refused");
    let tols = analyse(&steps[..3]).expect("admitted");
    assert_eq!(tols["a"], Tol::Exact);
    assert_eq!(tols["b"], Tol::Within(2e-4, 2e-4));
    assert_eq!(tols["c"], Tol::Exact);
}
