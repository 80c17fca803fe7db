//! The conformance runner: replays the PyTorch-recorded cases of `shared/conformance`
//! (format: FORMAT.md) through smelt's public API and compares every observable field.

// JSON values are matched partially on purpose; the no-wildcard rule is for smelt's IR enums.
#![allow(clippy::wildcard_enum_match_arm)]

pub(crate) mod args;
pub(crate) mod dispatch;
mod sparse;

pub(crate) use args::Env;
use args::{Args, scalar_of};
use serde_json::Value;
use smelt_frontend::{DType, Scalar, Tensor};
use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

/// The outcome of one case.
#[derive(Clone, Debug)]
pub struct CaseResult {
    pub id: String,
    /// `None` when it passed; otherwise what differed.
    pub failure: Option<String>,
}

/// Totals of one file.
#[derive(Clone, Debug)]
pub struct FileResult {
    pub file: String,
    pub cases: Vec<CaseResult>,
}

impl FileResult {
    pub fn passed(&self) -> usize {
        self.cases.iter().filter(|c| c.failure.is_none()).count()
    }
    pub fn total(&self) -> usize {
        self.cases.len()
    }
}

/// Runs every case of one `.jsonl` file.
pub fn run_file(path: &Path) -> std::io::Result<FileResult> {
    run_file_with(path, Realise::EachWhenRead)
}

/// [`run_file`], realising as `realise` says.
pub fn run_file_with(path: &Path, realise: Realise) -> std::io::Result<FileResult> {
    let text = std::fs::read_to_string(path)?;
    // A panic is a bug the runner reports as a failing case; keep its backtrace off the output.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let cases = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, line)| match serde_json::from_str::<Value>(line) {
            Ok(case) => run_case_guarded_with(&case, realise),
            Err(e) => CaseResult {
                id: format!("line {}", i + 1),
                failure: Some(format!("malformed JSON: {e}")),
            },
        })
        .collect();
    std::panic::set_hook(hook);
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(FileResult { file, cases })
}

/// Runs every `*.jsonl` file of `dir`, sorted by name.
pub fn run_dir(dir: &Path) -> std::io::Result<Vec<FileResult>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files.iter().map(|p| run_file(p)).collect()
}

/// When the values of a case's tensors are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Realise {
    /// Each expected tensor when its values are checked, in `expect` order (the recorded
    /// suite: one realisation per tensor).
    EachWhenRead,
    /// Every bound tensor in one realisation after the last step (one graph, so kernels that
    /// fuse across the tensors; how `smelt fuzz` runs its programs).
    Together,
}

/// Runs one case; a panic inside smelt is caught and reported as a failure (it is a bug).
pub fn run_case_guarded(case: &Value) -> CaseResult {
    run_case_guarded_with(case, Realise::EachWhenRead)
}

/// [`run_case_guarded`], realising as `realise` says.
pub fn run_case_guarded_with(case: &Value, realise: Realise) -> CaseResult {
    let id = case
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    let result = catch_unwind(AssertUnwindSafe(|| run_case(case, realise)));
    smelt_frontend::try_set_default_dtype(DType::F32).ok();
    let failure = match result {
        Ok(Ok(())) => None,
        Ok(Err(msg)) => Some(msg),
        Err(panic) => Some(format!("PANIC: {}", panic_message(&*panic))),
    };
    CaseResult { id, failure }
}

/// The message a panic carried (`panic!` with a literal or a formatted string).
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Why a step did not run: smelt raised an error (the kind a case can expect), or the step
/// itself is malformed (a harness or case bug).
#[derive(Clone, Debug)]
pub(crate) enum StepError {
    Raised(smelt_frontend::Error),
    Malformed(String),
}

/// Runs `step` on `env`: dispatches its op and binds its results to the step's `let` names
/// (pushed onto `order`, the binding order).
pub(crate) fn run_step(
    step: &Value,
    env: &mut Env,
    order: &mut Vec<String>,
) -> Result<(), StepError> {
    let op = step
        .get("op")
        .and_then(Value::as_str)
        .ok_or_else(|| StepError::Malformed("step has no op".into()))?;
    let empty = serde_json::Map::new();
    let map = step
        .get("args")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let tensors = dispatch::run_op(op, &Args { op, map, env }).map_err(StepError::Raised)?;
    let lets = let_names(step);
    if lets.len() > tensors.len() {
        return Err(StepError::Malformed(format!(
            "{op} returned {} tensors for {} names",
            tensors.len(),
            lets.len()
        )));
    }
    for (name, t) in lets.into_iter().zip(tensors) {
        order.push(name.clone());
        env.insert(name, t);
    }
    Ok(())
}

/// The names a step binds, in order.
pub(crate) fn let_names(step: &Value) -> Vec<String> {
    match step.get("let") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(names)) => names
            .iter()
            .filter_map(|n| n.as_str().map(String::from))
            .collect(),
        _ => vec![],
    }
}

fn run_case(case: &Value, realise: Realise) -> Result<(), String> {
    smelt_frontend::try_set_default_dtype(DType::F32).map_err(|e| e.to_string())?;
    let steps = case
        .get("steps")
        .and_then(Value::as_array)
        .ok_or("case has no steps")?;
    let expected_error = case.get("error").filter(|e| !e.is_null());
    let mut env = Env::new();
    let mut order: Vec<String> = vec![];
    for (i, step) in steps.iter().enumerate() {
        let op = step.get("op").and_then(Value::as_str).unwrap_or("?");
        match run_step(step, &mut env, &mut order) {
            Ok(()) => {}
            Err(StepError::Malformed(why)) => return Err(format!("step {i} ({op}): {why}")),
            Err(StepError::Raised(e)) => {
                let Some(exp) = expected_error else {
                    return Err(format!("step {i} ({op}) raised unexpectedly: {e}"));
                };
                let exp_step = exp.get("step").and_then(Value::as_u64).unwrap_or(u64::MAX) as usize;
                let exp_kind = exp.get("kind").and_then(Value::as_str).unwrap_or("?");
                if exp_step != i || exp_kind != e.kind.name() {
                    return Err(format!(
                        "step {i} ({op}) raised {} ({e}); expected {exp_kind} at step {exp_step}",
                        e.kind.name()
                    ));
                }
                return check_realised(case, &env, &order, realise);
            }
        }
    }
    if let Some(exp) = expected_error {
        return Err(format!("expected error {exp} but every step succeeded"));
    }
    check_realised(case, &env, &order, realise)
}

fn check_realised(
    case: &Value,
    env: &Env,
    order: &[String],
    realise: Realise,
) -> Result<(), String> {
    if realise == Realise::Together {
        let all: Vec<&Tensor> = order.iter().filter_map(|n| env.get(n)).collect();
        smelt_frontend::realize(&all).map_err(|e| format!("realising every tensor: {e}"))?;
    }
    check_expect(case, env, order)
}

fn check_expect(case: &Value, env: &Env, order: &[String]) -> Result<(), String> {
    let Some(expect) = case.get("expect").and_then(Value::as_object) else {
        return Ok(());
    };
    for (name, exp) in expect {
        let t = env.get(name).ok_or_else(|| format!("{name}: not bound"))?;
        check_tensor(name, t, exp, env, order)?;
    }
    Ok(())
}

pub(crate) fn ints(v: Option<&Value>) -> Option<Vec<i64>> {
    v?.as_array()?.iter().map(Value::as_i64).collect()
}

fn check_tensor(
    name: &str,
    t: &Tensor,
    exp: &Value,
    env: &Env,
    order: &[String],
) -> Result<(), String> {
    if exp.get("layout").is_some() || t.is_sparse() {
        return sparse::check_tensor(name, t, exp, env, order);
    }
    let shape: Vec<i64> = t.shape().iter().map(|&s| s as i64).collect();
    if let Some(e) = ints(exp.get("shape"))
        && e != shape
    {
        return Err(format!("{name}: shape {shape:?}, expected {e:?}"));
    }
    let stride: Vec<i64> = t.stride().iter().map(|&s| s as i64).collect();
    if let Some(e) = ints(exp.get("stride"))
        && e != stride
    {
        return Err(format!(
            "{name}: stride {stride:?}, expected {e:?} (shape {shape:?})"
        ));
    }
    if let Some(e) = exp.get("storage_offset").and_then(Value::as_i64)
        && e != t.storage_offset() as i64
    {
        return Err(format!(
            "{name}: storage_offset {}, expected {e}",
            t.storage_offset()
        ));
    }
    if let Some(e) = exp.get("is_contiguous").and_then(Value::as_bool)
        && e != t.is_contiguous()
    {
        return Err(format!(
            "{name}: is_contiguous {}, expected {e}",
            t.is_contiguous()
        ));
    }
    if let Some(e) = exp.get("dtype").and_then(Value::as_str)
        && e != t.dtype().name()
    {
        return Err(format!("{name}: dtype {}, expected {e}", t.dtype()));
    }
    if let Some(e) = exp.get("is_conj").and_then(Value::as_bool)
        && e != t.is_conj()
    {
        return Err(format!("{name}: is_conj {}, expected {e}", t.is_conj()));
    }
    check_shares(name, t, exp, env, order)?;
    if let Some(e) = exp.get("names").and_then(Value::as_array) {
        let expected: Vec<Option<&str>> = e.iter().map(Value::as_str).collect();
        let names = t.names();
        let got: Vec<Option<&str>> = names.iter().map(Option::as_deref).collect();
        if got != expected {
            return Err(format!("{name}: names {got:?}, expected {expected:?}"));
        }
    }
    if let Some(values) = exp.get("values").and_then(Value::as_array) {
        let rtol = exp.get("rtol").and_then(Value::as_f64).unwrap_or(0.0);
        let atol = exp.get("atol").and_then(Value::as_f64).unwrap_or(0.0);
        let got = t
            .try_to_scalars()
            .map_err(|e| format!("{name}: realize failed: {e}"))?;
        check_values(
            name,
            ("values", "value"),
            &got,
            values,
            t.dtype(),
            (rtol, atol),
        )?;
    }
    Ok(())
}

/// `got` against the recorded `want`, element by element ([`value_matches`]); the messages
/// name `name` and the list and item labels (`values` / `value[i]`).
pub(crate) fn check_values(
    name: &str,
    (list, item): (&str, &str),
    got: &[Scalar],
    want: &[Value],
    dtype: DType,
    (rtol, atol): (f64, f64),
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{name}: {} {list}, expected {}",
            got.len(),
            want.len()
        ));
    }
    for (i, (g, e)) in got.iter().zip(want).enumerate() {
        if !value_matches(*g, e, dtype, rtol, atol) {
            return Err(format!(
                "{name}: {item}[{i}] = {g}, expected {e} (dtype {dtype})"
            ));
        }
    }
    Ok(())
}

/// `shares_storage_with`: exactly the earlier-bound names whose tensor shares a storage with
/// `t` (a sparse tensor has two, its indices' and its values').
pub(crate) fn check_shares(
    name: &str,
    t: &Tensor,
    exp: &Value,
    env: &Env,
    order: &[String],
) -> Result<(), String> {
    if let Some(e) = exp.get("shares_storage_with").and_then(Value::as_array) {
        let expected: BTreeSet<&str> = e.iter().filter_map(Value::as_str).collect();
        let pos = order.iter().position(|n| n == name).unwrap_or(order.len());
        let got: BTreeSet<&str> = order[..pos]
            .iter()
            .filter(|other| env.get(*other).is_some_and(|o| o.shares_storage(t)))
            .map(String::as_str)
            .collect();
        if got != expected {
            return Err(format!(
                "{name}: shares storage with {got:?}, expected {expected:?}"
            ));
        }
    }
    Ok(())
}

pub(crate) fn value_matches(got: Scalar, exp: &Value, dtype: DType, rtol: f64, atol: f64) -> bool {
    if dtype.is_complex() {
        return complex_matches(got, exp, rtol, atol);
    }
    let Some(e) = scalar_of(exp) else {
        return false;
    };
    if dtype == DType::Bool {
        return got.as_bool() == e.as_bool();
    }
    if !dtype.is_float() {
        return got.as_i64() == e.as_i64() && !matches!(e, Scalar::Float(x) if x.fract() != 0.0);
    }
    float_matches(got.as_f64(), e.as_f64(), rtol, atol)
}

fn float_matches(g: f64, x: f64, rtol: f64, atol: f64) -> bool {
    if x.is_nan() {
        return g.is_nan();
    }
    if x.is_infinite() {
        return g == x;
    }
    (g - x).abs() <= atol + rtol * x.abs()
}

/// FORMAT.md §5: an expected `[re, im]` pair matches within `atol + rtol·|exp|` by the
/// complex modulus, or part by part by the float rules when a part is non-finite.
fn complex_matches(got: Scalar, exp: &Value, rtol: f64, atol: f64) -> bool {
    let Some(e) = args::element_of(exp) else {
        return false;
    };
    let ((gr, gi), (er, ei)) = (got.as_complex(), e.as_complex());
    if !er.is_finite() || !ei.is_finite() {
        return float_matches(gr, er, rtol, atol) && float_matches(gi, ei, rtol, atol);
    }
    (gr - er).hypot(gi - ei) <= atol + rtol * er.hypot(ei)
}
