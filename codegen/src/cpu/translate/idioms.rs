//! Idioms: short instruction patterns the translator emits as one computation instead of op
//! by op, because together they are cheaper and at least as accurate.
//!
//! The one idiom so far is `1 + tanh(u)` and `1 − tanh(u)` in f32 or f64 (`add` of the
//! constant 1 and a tanh, in either order, or `sub` from 1), where nothing else reads the
//! tanh: GELU's tanh form, `0.5·x·(1 + tanh(…))`. It becomes 2 / (1 + e^(∓2u))
//! ([`math::one_plus_tanh`]): one exponential and a division instead of tanh's expm1, its
//! division and the add, 16 vector operations instead of 21. Op by op, the sum cancels where
//! tanh nears −1 (1 + tanh(−5) = 9.1e−5 comes from a tanh rounded to 6e−8 in f32, and is 0
//! beyond −9.01); the idiom is within 2 ulp of the exact sum down to the normal range
//! (`math_tests.rs`), so it differs from the reference interpreter's op-by-op answer by at
//! most that rounding of tanh, an absolute 6e−8 in f32 (1.1e−16 in f64). f16 and bf16 keep
//! the op-by-op form: rounded to their few bits, that cancellation is large enough to see.

use super::*;

/// What the translator emits for instruction `i` of a kernel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Idiom {
    /// Emitted by itself, as usual.
    Plain,
    /// Not emitted: its one reader computes from its operand.
    Absorbed,
    /// `1 + tanh(u)` (`1 − tanh(u)` when `minus`), the tanh absorbed.
    OnePlusTanh { u: usize, minus: bool },
}

/// The idiom of each instruction of `k`.
pub(super) fn idioms(k: &Kernel) -> Vec<Idiom> {
    let one = |j: usize| {
        matches!(k.body[j], Instr::Const { value, dtype }
            if matches!(dtype, DType::F32 | DType::F64) && value.as_f64() == 1.0)
    };
    // The operand of a tanh in `compute` that only instruction `i` reads.
    let lone_tanh = |j: usize, i: usize, compute: DType| {
        let Instr::Unary {
            op: UnaryOp::Tanh,
            x,
            compute: c,
        } = k.body[j]
        else {
            return None;
        };
        (c == compute && sole_reader(k, j) == Some(i)).then_some(x)
    };
    let mut out = vec![Idiom::Plain; k.body.len()];
    for (i, instr) in k.body.iter().enumerate() {
        let Instr::Binary { op, a, b, compute } = *instr else {
            continue;
        };
        if !matches!(compute, DType::F32 | DType::F64) {
            continue;
        }
        let found = if op == BinaryOp::Add && one(b) {
            lone_tanh(a, i, compute).map(|u| (a, u, false))
        } else if op == BinaryOp::Add && one(a) {
            lone_tanh(b, i, compute).map(|u| (b, u, false))
        } else if op == BinaryOp::Sub && one(a) {
            lone_tanh(b, i, compute).map(|u| (b, u, true))
        } else {
            None
        };
        if let Some((tanh, u, minus)) = found {
            out[tanh] = Idiom::Absorbed;
            out[i] = Idiom::OnePlusTanh { u, minus };
        }
    }
    out
}
