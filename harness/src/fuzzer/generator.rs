//! The program generator: random programs written directly as conformance steps
//! (`{"let", "op", "args"}`, FORMAT.md §3) over the vocabulary the conformance dispatcher
//! runs, so a program replays through the same code as the recorded suite and a failure is
//! already a case.
//!
//! Generation runs each candidate step at once on a scratch environment (ops are lazy, so
//! this records graph nodes and realises nothing but what the ops themselves need): the
//! step's results give the shapes, dtypes and names later steps are built from, a step that
//! raises is dropped (or, now and then, kept as the program's last step: every backend must
//! then raise the same kind of error there), and [`num`](super::num) refuses a step whose
//! values correct backends may compute differently (a comparison of transcendental results,
//! say). A program is a pure function of its seed and index.

use super::num::Num;
use super::ops;
use super::rng::Rng;
use super::rules::{Tracker, effect};
use crate::conformance::{Env, StepError, run_step};
use serde_json::{Value, json};
use smelt_frontend::{DType, Tensor};
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// One generated program.
#[derive(Clone, Debug)]
pub struct Program {
    pub seed: u64,
    pub index: u64,
    pub steps: Vec<Value>,
}

impl Program {
    /// `fuzz/s<seed>/p<index>`, the id its case is written under.
    pub fn id(&self) -> String {
        format!("fuzz/s{}/p{}", self.seed, self.index)
    }
}

/// The dtypes of inputs and how often each is drawn.
const DTYPES: [(DType, u32); 10] = [
    (DType::F32, 30),
    (DType::F64, 8),
    (DType::F16, 8),
    (DType::BF16, 8),
    (DType::I64, 12),
    (DType::I32, 8),
    (DType::I16, 3),
    (DType::I8, 4),
    (DType::U8, 4),
    (DType::Bool, 10),
];

/// Sizes of dims: small ones, 1 (broadcasts), 0 (empty tensors, rarely) and 9 and 17 (a SIMD
/// loop with a tail).
const SIZES: [(usize, u32); 10] = [
    (1, 14),
    (2, 16),
    (3, 16),
    (4, 14),
    (5, 10),
    (6, 6),
    (0, 3),
    (7, 5),
    (9, 3),
    (17, 2),
];

/// Inputs stay below this many elements (more costs time without reaching other code).
const MAX_NUMEL: usize = 256;

/// Dim names of named programs, by position of the base shape.
pub const NAMES: [&str; 4] = ["A", "B", "C", "D"];

/// Kinds of error a program may end with (a kind of FORMAT.md §6).
const ERROR_KINDS: [&str; 7] = [
    "shape", "stride", "index", "dtype", "names", "overlap", "value",
];

/// How likely a step that raised ends the program instead of being dropped.
const KEEP_ERROR: f64 = 0.04;

/// The generator's state while it builds one program.
#[derive(Debug)]
pub struct Gen {
    pub rng: Rng,
    pub env: Env,
    pub order: Vec<String>,
    pub tracker: Tracker,
    pub steps: Vec<Value>,
    /// The base shape every input is a broadcast of.
    pub base: Vec<usize>,
    /// The names of the base shape's dims in a named program.
    pub base_names: Option<Vec<Option<&'static str>>>,
    next: usize,
    ended: bool,
}

impl Gen {
    fn new(rng: Rng) -> Gen {
        Gen {
            rng,
            env: Env::new(),
            order: vec![],
            tracker: Tracker::default(),
            steps: vec![],
            base: vec![],
            base_names: None,
            next: 0,
            ended: false,
        }
    }

    /// A fresh name to bind.
    pub fn fresh(&mut self) -> String {
        self.next += 1;
        format!("t{}", self.next - 1)
    }

    pub fn t(&self, name: &str) -> &Tensor {
        &self.env[name]
    }

    pub fn num(&self, name: &str) -> Num {
        self.tracker.nums[name]
    }

    pub fn is_named(&self) -> bool {
        self.base_names.is_some()
    }

    /// A bound tensor satisfying `pred`, recent ones more often.
    pub fn pick(&mut self, pred: impl Fn(&Tensor, &Num) -> bool) -> Option<String> {
        let ok: Vec<&String> = self
            .order
            .iter()
            .filter(|n| pred(&self.env[*n], &self.tracker.nums[*n]))
            .collect();
        if ok.is_empty() {
            return None;
        }
        let i = if self.rng.chance(0.5) {
            ok.len() - 1 - self.rng.below(ok.len().min(3))
        } else {
            self.rng.below(ok.len())
        };
        Some(ok[i].clone())
    }

    pub fn any(&mut self) -> Option<String> {
        self.pick(|_, _| true)
    }

    pub fn dtype(&mut self) -> DType {
        let weights: Vec<u32> = DTYPES.iter().map(|d| d.1).collect();
        DTYPES[self.rng.weighted(&weights)].0
    }

    pub fn size(&mut self) -> usize {
        let weights: Vec<u32> = SIZES.iter().map(|d| d.1).collect();
        SIZES[self.rng.weighted(&weights)].0
    }

    /// A dim index of a tensor of `ndim` dims, negative half the time.
    pub fn dim(&mut self, ndim: usize) -> i64 {
        let n = ndim.max(1) as i64;
        let d = self.rng.range(0, n - 1);
        if self.rng.chance(0.4) { d - n } else { d }
    }

    /// A dim of `t` as an int, or (named programs) by its name when it has one.
    pub fn dim_of(&mut self, t: &str) -> Value {
        let t = self.t(t).clone();
        let d = self.dim(t.ndim());
        let names = t.names();
        let i = if d < 0 { d + t.ndim() as i64 } else { d };
        match names.get(i as usize) {
            Some(Some(n)) if self.rng.chance(0.5) => json!(n),
            _ => json!(d),
        }
    }

    /// Values for a tensor of `n` elements: multiples of 1/8 in [−5, 5] for floats (a few
    /// specials now and then), [−9, 9] for signed integers, [0, 20] for uint8.
    pub fn data(&mut self, n: usize, dtype: DType) -> Vec<Value> {
        let specials = dtype.is_float() && self.rng.chance(0.12);
        let mut v: Vec<Value> = (0..n)
            .map(|_| match dtype {
                DType::Bool => json!(self.rng.chance(0.5)),
                DType::U8 => json!(self.rng.range(0, 20)),
                DType::I8 | DType::I16 | DType::I32 | DType::I64 => json!(self.rng.range(-9, 9)),
                DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
                    json!(self.rng.range(-40, 40) as f64 / 8.0)
                }
            })
            .collect();
        if specials && n > 0 {
            for _ in 0..self.rng.range(1, 2) {
                let i = self.rng.below(n);
                v[i] =
                    self.rng
                        .pick_cloned(&[json!("nan"), json!("inf"), json!("-inf"), json!(-0.0)]);
            }
        }
        v
    }

    /// A scalar operand for a tensor of `dtype`: mostly of its own kind, sometimes of another
    /// (promotion with Python scalars).
    pub fn scalar(&mut self, dtype: DType) -> Value {
        let kind = if self.rng.chance(0.75) {
            if dtype.is_float() {
                0
            } else if dtype.is_bool() {
                2
            } else {
                1
            }
        } else {
            self.rng.below(3)
        };
        match kind {
            0 if self.rng.chance(0.03) => self.rng.pick_cloned(&[json!("nan"), json!("inf")]),
            0 => json!(self.rng.range(-16, 16) as f64 / 4.0),
            1 => json!(self.rng.range(-4, 4)),
            _ => json!(self.rng.chance(0.5)),
        }
    }

    /// A `tensor` step making a fresh input of `shape` and `dtype` (named after the base's
    /// dims in a named program); returns its name.
    pub fn input(&mut self, shape: &[usize], dtype: DType, steps: &mut Vec<Value>) -> String {
        let n = shape.iter().product();
        let name = self.fresh();
        let mut args = json!({"data": self.data(n, dtype), "shape": shape, "dtype": dtype.name()});
        if let Some(base_names) = &self.base_names {
            // Right-aligned with the base's names; dims beyond the base's are unnamed.
            let names: Vec<Value> = (0..shape.len())
                .map(|i| {
                    let from_right = shape.len() - i;
                    let n = base_names
                        .len()
                        .checked_sub(from_right)
                        .map(|j| base_names[j]);
                    n.flatten().map_or(Value::Null, |n| json!(n))
                })
                .collect();
            if names.iter().any(|n| !n.is_null()) {
                args["names"] = json!(names);
            }
        }
        steps.push(json!({"let": name, "op": "tensor", "args": args}));
        name
    }

    /// A shape that broadcasts against the base: a suffix of it, some dims 1.
    pub fn operand_shape(&mut self) -> Vec<usize> {
        let r = self.base.len();
        let drop = if self.rng.chance(0.2) {
            self.rng.below(r + 1)
        } else {
            0
        };
        self.base[drop..]
            .iter()
            .map(|&s| if self.rng.chance(0.2) { 1 } else { s })
            .collect()
    }

    /// Runs `cands` on the scratch environment and keeps them when each is admitted and runs
    /// (the last may raise when `may_fail`: then it may end the program). `false`: dropped,
    /// nothing of them remains bound.
    pub fn attempt(&mut self, cands: Vec<Value>, may_fail: bool) -> bool {
        let saved = self.tracker.nums.clone();
        let bound = self.order.len();
        let last = cands.len().saturating_sub(1);
        for (j, step) in cands.iter().enumerate() {
            let Ok(eff) = effect(step, &self.env, &self.tracker.nums) else {
                self.rollback(saved, bound);
                return false;
            };
            let ran = catch_unwind(AssertUnwindSafe(|| {
                run_step(step, &mut self.env, &mut self.order)
            }));
            match ran {
                Ok(Ok(())) => {
                    self.tracker.record(step, eff, &self.env);
                    if !self.all_comparable() {
                        self.rollback(saved, bound);
                        return false;
                    }
                }
                Ok(Err(StepError::Raised(e)))
                    if j == last
                        && may_fail
                        && ERROR_KINDS.contains(&e.kind.name())
                        && self.rng.chance(KEEP_ERROR) =>
                {
                    self.steps.extend(cands);
                    self.ended = true;
                    return true;
                }
                Ok(Err(_)) => {
                    self.rollback(saved, bound);
                    return false;
                }
                // A panic is a smelt bug: keep the step, every mode will meet it.
                Err(_) => {
                    self.steps.extend(cands);
                    self.ended = true;
                    return true;
                }
            }
        }
        self.steps.extend(cands);
        true
    }

    fn rollback(&mut self, saved: HashMap<String, Num>, bound: usize) {
        self.tracker.nums = saved;
        for name in self.order.drain(bound..) {
            self.env.remove(&name);
        }
    }

    fn all_comparable(&self) -> bool {
        self.tracker
            .nums
            .iter()
            .all(|(n, num)| self.env.get(n).is_none_or(|t| num.is_comparable(t.dtype())))
    }
}

/// Program `index` of run `seed`.
pub fn generate(seed: u64, index: u64) -> Program {
    smelt_frontend::try_set_default_dtype(DType::F32).ok();
    let mut g = Gen::new(Rng::for_program(seed, index));
    let rank = [0, 1, 1, 2, 2, 2, 3, 3, 4][g.rng.below(9)];
    let mut numel = 1;
    for _ in 0..rank {
        let s = g.size();
        let s = if numel * s > MAX_NUMEL { 1 } else { s };
        numel *= s.max(1);
        g.base.push(s);
    }
    if g.rng.chance(0.12) && rank > 0 {
        g.base_names = Some(
            NAMES[..rank]
                .iter()
                .map(|&n| (!g.rng.chance(0.15)).then_some(n))
                .collect(),
        );
    }
    let inputs = g.rng.range(1, 3);
    for i in 0..inputs {
        let shape = if i == 0 {
            g.base.clone()
        } else {
            g.operand_shape()
        };
        let dtype = g.dtype();
        let mut steps = vec![];
        g.input(&shape, dtype, &mut steps);
        g.attempt(steps, false);
    }
    let ops = g.rng.range(2, 12);
    let mut made = 0;
    let mut tries = 0;
    while made < ops && !g.ended && tries < ops * 12 {
        tries += 1;
        let Some(cands) = ops::candidate(&mut g) else {
            continue;
        };
        if g.attempt(cands, true) {
            made += 1;
        }
    }
    smelt_frontend::try_set_default_dtype(DType::F32).ok();
    Program {
        seed,
        index,
        steps: g.steps,
    }
}

/// What the generator's rules say of a program (a generated one, or one a shrink changed):
/// how each bound tensor is compared, or why the program breaks a rule (a discrete op on
/// approximate values, say), in which case the modes may differ without a bug.
pub fn analyse(steps: &[Value]) -> Result<HashMap<String, super::exec::Tol>, String> {
    smelt_frontend::try_set_default_dtype(DType::F32).ok();
    let mut env = Env::new();
    let mut order = vec![];
    let mut tracker = Tracker::default();
    let result = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
        for (i, step) in steps.iter().enumerate() {
            let eff = effect(step, &env, &tracker.nums).map_err(|e| format!("step {i}: {e}"))?;
            match run_step(step, &mut env, &mut order) {
                Ok(()) => tracker.record(step, eff, &env),
                Err(StepError::Raised(_)) => return Ok(()),
                Err(StepError::Malformed(why)) => return Err(format!("step {i}: {why}")),
            }
            for name in &order {
                if !tracker.nums[name].is_comparable(env[name].dtype()) {
                    return Err(format!("step {i}: {name} is not comparable"));
                }
            }
        }
        Ok(())
    }));
    smelt_frontend::try_set_default_dtype(DType::F32).ok();
    // A panicking step (`Err`) ends the program: nothing after it runs anywhere.
    if let Ok(r) = result {
        r?;
    }
    let dtypes: HashMap<String, DType> =
        order.iter().map(|n| (n.clone(), env[n].dtype())).collect();
    Ok(super::exec::tolerances(&tracker, &dtypes))
}
