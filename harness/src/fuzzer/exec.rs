//! Running a program in each mode and comparing what the modes observed.
//!
//! A mode is a way of realising: the default pipeline on the cpu backend (`fused`), every
//! fusion pass off on the cpu backend (`unfused`), every fusion pass off on the reference
//! interpreter (`reference`, the oracle: the plainest schedule on the plainest backend), and
//! the default pipeline on a CUDA device when there is one (`cuda`). Each runs the program's
//! steps through the conformance dispatcher on a fresh environment, realises every bound
//! tensor together (one graph), then reads each tensor's metadata and values. The choice of
//! passes and backend is thread-local (`smelt_passes::with_disabled`,
//! `smelt_runtime::with_host_target`, `smelt_frontend::with_default_device`), so the
//! realisations an op makes by itself (`nonzero`, a mask's count) run in the mode too.

use super::rules::Tracker;
use crate::conformance::{Env, StepError, panic_message, run_step};
use serde_json::Value;
use smelt_frontend::{DType, Device, Scalar, Target, Tensor};
use std::collections::HashMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// A way of realising a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    Fused,
    Unfused,
    Reference,
    Cuda(usize),
    /// Tests only: `fused` with one value of the last float tensor moved by one, a stand-in
    /// for a backend bug (the fuzzer must catch it, shrink it and write a case for it).
    #[cfg(test)]
    Skewed,
}

impl Mode {
    pub fn name(self) -> String {
        match self {
            Mode::Fused => "fused".into(),
            Mode::Unfused => "unfused".into(),
            Mode::Reference => "reference".into(),
            Mode::Cuda(n) => format!("cuda:{n}"),
            #[cfg(test)]
            Mode::Skewed => "skewed".into(),
        }
    }

    /// `fused`, `unfused`, `reference` or `cuda:N`.
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "fused" => Some(Mode::Fused),
            "unfused" => Some(Mode::Unfused),
            "reference" => Some(Mode::Reference),
            _ => s.strip_prefix("cuda:")?.parse().ok().map(Mode::Cuda),
        }
    }

    /// The oracle first, then the host modes, then each CUDA device this process can use.
    pub fn available() -> Vec<Mode> {
        let mut modes = vec![Mode::Reference, Mode::Fused, Mode::Unfused];
        modes.extend((0..smelt_runtime::cuda::device_count()).map(Mode::Cuda));
        modes
    }

    /// Runs `f` in this mode on the current thread.
    pub fn within<R>(self, f: impl FnOnce() -> R) -> R {
        let unfused = smelt_frontend::UNFUSED_DISABLES;
        match self {
            Mode::Fused => smelt_runtime::with_host_target(Target::Cpu, f),
            Mode::Unfused => smelt_passes::with_disabled(unfused, || {
                smelt_runtime::with_host_target(Target::Cpu, f)
            }),
            Mode::Reference => smelt_passes::with_disabled(unfused, || {
                smelt_runtime::with_host_target(Target::Reference, f)
            }),
            Mode::Cuda(n) => smelt_frontend::with_default_device(Device::Cuda(n), f),
            #[cfg(test)]
            Mode::Skewed => smelt_runtime::with_host_target(Target::Cpu, f),
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// What a mode observed of one bound tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    pub name: String,
    pub shape: Vec<usize>,
    pub stride: Vec<isize>,
    pub offset: usize,
    pub contiguous: bool,
    pub dtype: DType,
    pub names: Vec<Option<String>>,
    /// The earlier-bound names sharing its storage.
    pub shares: Vec<String>,
    /// Its values in row-major order, or why they could not be read.
    pub values: Result<Vec<Scalar>, String>,
}

/// Why a program stopped before its end.
#[derive(Clone, Debug, PartialEq)]
pub enum Stop {
    /// Step `step` raised an error of `kind`.
    Raised {
        step: usize,
        kind: String,
        message: String,
    },
    /// Step `step` was malformed (a generator bug).
    Malformed { step: usize, why: String },
    /// smelt panicked at step `step` (`None`: while realising or reading values).
    Panicked {
        step: Option<usize>,
        message: String,
    },
}

/// What one mode observed of one program.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub mode: Mode,
    pub stop: Option<Stop>,
    /// The error of the joint realisation after the last step, if it failed.
    pub realise: Option<(String, String)>,
    pub tensors: Vec<Observed>,
}

impl Outcome {
    pub fn panicked(&self) -> bool {
        matches!(self.stop, Some(Stop::Panicked { .. }))
    }
}

/// Runs `steps` in `mode`; a panic is caught and recorded.
pub fn run(steps: &[Value], mode: Mode) -> Outcome {
    let mut outcome = Outcome {
        mode,
        stop: None,
        realise: None,
        tensors: vec![],
    };
    let mut at = None;
    let caught = catch_unwind(AssertUnwindSafe(|| {
        mode.within(|| run_in(steps, &mut outcome, &mut at))
    }));
    smelt_frontend::try_set_default_dtype(DType::F32).ok();
    #[cfg(test)]
    if mode == Mode::Skewed
        && let Some(t) = outcome
            .tensors
            .iter_mut()
            .rev()
            .find(|t| t.dtype.is_float() && t.values.as_ref().is_ok_and(|v| !v.is_empty()))
        && let Ok(values) = &mut t.values
    {
        values[0] = Scalar::Float(values[0].as_f64() + 1.0);
    }
    if let Err(panic) = caught {
        outcome.stop = Some(Stop::Panicked {
            step: at,
            message: panic_message(&*panic),
        });
        outcome.tensors.clear();
    }
    outcome
}

fn run_in(steps: &[Value], outcome: &mut Outcome, at: &mut Option<usize>) {
    smelt_frontend::try_set_default_dtype(DType::F32).ok();
    let mut env = Env::new();
    let mut order: Vec<String> = vec![];
    for (i, step) in steps.iter().enumerate() {
        *at = Some(i);
        match run_step(step, &mut env, &mut order) {
            Ok(()) => {}
            Err(StepError::Raised(e)) => {
                outcome.stop = Some(Stop::Raised {
                    step: i,
                    kind: e.kind.name().to_string(),
                    message: e.message,
                });
                break;
            }
            Err(StepError::Malformed(why)) => {
                outcome.stop = Some(Stop::Malformed { step: i, why });
                break;
            }
        }
    }
    *at = None;
    let all: Vec<&Tensor> = order.iter().filter_map(|n| env.get(n)).collect();
    if let Err(e) = smelt_frontend::realize(&all) {
        outcome.realise = Some((e.kind.name().to_string(), e.message));
    }
    outcome.tensors = observe(&env, &order);
}

/// Every bound tensor's metadata and values, in binding order.
pub fn observe(env: &Env, order: &[String]) -> Vec<Observed> {
    order
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let t = &env[name];
            Observed {
                name: name.clone(),
                shape: t.shape().to_vec(),
                stride: t.stride(),
                offset: t.storage_offset(),
                contiguous: t.is_contiguous(),
                dtype: t.dtype(),
                names: t.names(),
                shares: order[..i]
                    .iter()
                    .filter(|o| env[*o].shares_storage(t))
                    .cloned()
                    .collect(),
                values: t.try_to_scalars().map_err(|e| e.to_string()),
            }
        })
        .collect()
}

/// How a mode disagreed with the oracle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// smelt panicked.
    Panic,
    /// An error (or none) where the oracle had none (or another kind, or at another step).
    Error,
    /// Shape, strides, offset, contiguity, dtype, names or storage sharing differ.
    Metadata,
    /// Values differ beyond the tolerance.
    Value,
}

impl FailureKind {
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::Panic => "panic",
            FailureKind::Error => "error",
            FailureKind::Metadata => "metadata",
            FailureKind::Value => "value",
        }
    }
}

/// A disagreement: its kind, the mode that disagreed (with the oracle), and what differed.
#[derive(Clone, Debug)]
pub struct Failure {
    pub kind: FailureKind,
    pub mode: Mode,
    pub oracle: Mode,
    pub detail: String,
}

impl Failure {
    /// What a shrunk program must still show to count as the same failure.
    pub fn signature(&self) -> (FailureKind, Mode) {
        (self.kind, self.mode)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kind == FailureKind::Panic {
            write!(f, "panic in {}: {}", self.mode, self.detail)
        } else {
            write!(
                f,
                "{} mismatch, {} vs {}: {}",
                self.kind.name(),
                self.mode,
                self.oracle,
                self.detail
            )
        }
    }
}

/// How values of one bound tensor are compared: exactly, or within (rtol, atol).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tol {
    Exact,
    Within(f64, f64),
}

/// The comparison of each bound tensor, from what the tracker knows of its values.
pub fn tolerances(tracker: &Tracker, dtypes: &HashMap<String, DType>) -> HashMap<String, Tol> {
    tracker
        .nums
        .iter()
        .map(|(name, num)| {
            let dtype = dtypes.get(name).copied().unwrap_or(DType::F32);
            let tol = if num.exact || !dtype.is_float() {
                Tol::Exact
            } else {
                let (rtol, atol) = super::num::tolerance(dtype);
                Tol::Within(rtol, atol)
            };
            (name.clone(), tol)
        })
        .collect()
}

/// Does `got` match `exp` (FORMAT.md §5: NaN matches NaN, infinities exactly, the sign of
/// zero unchecked)?
pub fn value_matches(got: Scalar, exp: Scalar, dtype: DType, tol: Tol) -> bool {
    if !dtype.is_float() {
        return got == exp || got.as_f64() == exp.as_f64();
    }
    let (g, e) = (got.as_f64(), exp.as_f64());
    if e.is_nan() || g.is_nan() {
        return e.is_nan() && g.is_nan();
    }
    if e.is_infinite() || g.is_infinite() {
        return g == e;
    }
    match tol {
        Tol::Exact => g == e,
        Tol::Within(rtol, atol) => (g - e).abs() <= atol + rtol * e.abs(),
    }
}

/// The first way `got` disagrees with the oracle's `exp`, if any.
pub fn compare(exp: &Outcome, got: &Outcome, tols: &HashMap<String, Tol>) -> Option<Failure> {
    let fail = |kind, detail: String| {
        Some(Failure {
            kind,
            mode: got.mode,
            oracle: exp.mode,
            detail,
        })
    };
    for o in [got, exp] {
        if let Some(Stop::Panicked { step, message }) = &o.stop {
            let at = step.map_or("realising".to_string(), |s| format!("step {s}"));
            return Some(Failure {
                kind: FailureKind::Panic,
                mode: o.mode,
                oracle: exp.mode,
                detail: format!("{at}: {message}"),
            });
        }
    }
    let stop = |o: &Outcome| match &o.stop {
        Some(Stop::Raised { step, kind, .. }) => Some((*step, kind.clone())),
        Some(Stop::Malformed { step, .. }) => Some((*step, "malformed".to_string())),
        Some(Stop::Panicked { .. }) | None => None,
    };
    if stop(exp) != stop(got) {
        let show = |o: &Outcome| match &o.stop {
            Some(Stop::Raised {
                step,
                kind,
                message,
            }) => format!("{kind} at step {step} ({message})"),
            Some(Stop::Malformed { step, why }) => format!("malformed step {step}: {why}"),
            _ => "no error".to_string(),
        };
        return fail(
            FailureKind::Error,
            format!(
                "{} raised {}, {} {}",
                got.mode,
                show(got),
                exp.mode,
                show(exp)
            ),
        );
    }
    let kind_of = |o: &Outcome| o.realise.as_ref().map(|r| r.0.clone());
    if kind_of(exp) != kind_of(got) {
        let show = |o: &Outcome| {
            o.realise
                .as_ref()
                .map_or("realised".to_string(), |(k, m)| format!("{k} error ({m})"))
        };
        return fail(
            FailureKind::Error,
            format!(
                "realising all: {} {}, {} {}",
                got.mode,
                show(got),
                exp.mode,
                show(exp)
            ),
        );
    }
    if exp.tensors.len() != got.tensors.len() {
        return fail(
            FailureKind::Metadata,
            format!(
                "{} bound tensors, oracle {}",
                got.tensors.len(),
                exp.tensors.len()
            ),
        );
    }
    for (e, g) in exp.tensors.iter().zip(&got.tensors) {
        let meta = |what: &str, a: String, b: String| {
            fail(
                FailureKind::Metadata,
                format!("{}: {what} {a}, oracle {b}", e.name),
            )
        };
        if e.name != g.name {
            return meta("name", g.name.clone(), e.name.clone());
        }
        if e.shape != g.shape {
            return meta("shape", format!("{:?}", g.shape), format!("{:?}", e.shape));
        }
        if e.stride != g.stride {
            return meta(
                "stride",
                format!("{:?}", g.stride),
                format!("{:?}", e.stride),
            );
        }
        if e.offset != g.offset {
            return meta("storage_offset", g.offset.to_string(), e.offset.to_string());
        }
        if e.contiguous != g.contiguous {
            return meta(
                "is_contiguous",
                g.contiguous.to_string(),
                e.contiguous.to_string(),
            );
        }
        if e.dtype != g.dtype {
            return meta("dtype", g.dtype.to_string(), e.dtype.to_string());
        }
        if e.names != g.names {
            return meta("names", format!("{:?}", g.names), format!("{:?}", e.names));
        }
        if e.shares != g.shares {
            return meta(
                "shares storage with",
                format!("{:?}", g.shares),
                format!("{:?}", e.shares),
            );
        }
    }
    for (e, g) in exp.tensors.iter().zip(&got.tensors) {
        let tol = tols.get(&e.name).copied().unwrap_or(Tol::Exact);
        match (&e.values, &g.values) {
            (Ok(ev), Ok(gv)) => {
                if ev.len() != gv.len() {
                    return fail(
                        FailureKind::Value,
                        format!("{}: {} values, oracle {}", e.name, gv.len(), ev.len()),
                    );
                }
                for (i, (x, y)) in ev.iter().zip(gv).enumerate() {
                    if !value_matches(*y, *x, e.dtype, tol) {
                        return fail(
                            FailureKind::Value,
                            format!(
                                "{}[{i}] = {}, oracle {} ({}, {})",
                                e.name,
                                show_scalar(*y),
                                show_scalar(*x),
                                e.dtype,
                                match tol {
                                    Tol::Exact => "exact".to_string(),
                                    Tol::Within(r, a) => format!("rtol {r:e}, atol {a:e}"),
                                }
                            ),
                        );
                    }
                }
            }
            (Err(a), Err(b)) if a.split(':').next() == b.split(':').next() => {}
            (ev, gv) => {
                let show = |v: &Result<Vec<Scalar>, String>| match v {
                    Ok(_) => "values".to_string(),
                    Err(e) => e.clone(),
                };
                return fail(
                    FailureKind::Error,
                    format!("{}: reading gave {}, oracle {}", e.name, show(gv), show(ev)),
                );
            }
        }
    }
    None
}

fn show_scalar(s: Scalar) -> String {
    match s {
        Scalar::Float(x) => format!("{x:?}"),
        Scalar::Int(i) => i.to_string(),
        Scalar::Bool(b) => b.to_string(),
    }
}
