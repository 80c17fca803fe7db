//! Idioms: short instruction patterns the translator emits as one computation instead of op
//! by op, because together they are cheaper and at least as accurate.
//!
//! The first idiom is `1 + tanh(u)` and `1 − tanh(u)` in f32 or f64 (`add` of the
//! constant 1 and a tanh, in either order, or `sub` from 1), where nothing else reads the
//! tanh: GELU's tanh form, `0.5·x·(1 + tanh(…))`. It becomes 2 / (1 + e^(∓2u))
//! ([`math::one_plus_tanh`]): one exponential and a division instead of tanh's expm1, its
//! division and the add, 14 vector operations instead of 21. Op by op, the sum cancels where
//! tanh nears −1 (1 + tanh(−5) = 9.1e−5 comes from a tanh rounded to 6e−8 in f32, and is 0
//! beyond −9.01); the idiom is within 6 ulp of the exact sum down to the normal range, 4 for
//! |u| ≤ 10 (2 in f64; `math_tests.rs`), so it differs from the reference interpreter's
//! op-by-op answer by little more than that rounding of tanh, an absolute 6e−8 in f32
//! (1.1e−16 in f64). f16 and bf16 keep
//! the op-by-op form: rounded to their few bits, that cancellation is large enough to see.
//!
//! The second goes one step further along GELU: `(x · ½) · (1 ± tanh(u))`, where nothing else
//! reads the halving or the sum, is x / (1 + e^(∓2u)): the same exponential with `x` for the
//! numerator 2, which saves the halving and the last product. Op by op that is two roundings
//! (2/d, then the product; halving is exact above the subnormals) where the idiom has one; it
//! is within the first idiom's bounds of the exact value (3 ulp in f64), and may be 0 where
//! 1 ± tanh(u) is below the normal range (the op-by-op product is 0 there already).
//!
//! The third is softmax's `exp(a − max(a))` (f32, f16 or bf16), where the max is a reduction
//! of the very values `a`: the difference is at most 0 (or NaN), so `exp` skips its upper clamp
//! (`math::exp_at_most_zero`), which is the identity there: the same bits, one vector operation
//! and one constant register fewer in softmax's `exp` pass (its kernel, 16 rows of 4096 in L2:
//! 2.92 → 2.75 cycles an element).

use super::*;

/// What the translator emits for instruction `i` of a kernel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Idiom {
    /// Emitted by itself, as usual.
    Plain,
    /// Not emitted: its one reader computes from its operand.
    Absorbed,
    /// `1 + tanh(u)` (`1 − tanh(u)` when `minus`), the tanh absorbed; with `half_of`, `x`,
    /// it is `(x · ½) · (1 ± tanh(u))`, the halving and the sum absorbed too.
    OnePlusTanh {
        u: usize,
        minus: bool,
        half_of: Option<usize>,
    },
    /// `exp(a − max(a))` in f32 (or f16, bf16), the max a reduction of the same `a`: its
    /// argument is at most 0 (or NaN), so `exp` needs no upper clamp.
    ExpAtMostZero,
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
            out[i] = Idiom::OnePlusTanh {
                u,
                minus,
                half_of: None,
            };
        }
    }
    // `x · ½`, in `compute`, that only instruction `i` reads: its `x`.
    let lone_half = |j: usize, i: usize, compute: DType| {
        let Instr::Binary {
            op: BinaryOp::Mul,
            a,
            b,
            compute: c,
        } = k.body[j]
        else {
            return None;
        };
        let half =
            |h: usize| matches!(k.body[h], Instr::Const { value, .. } if value.as_f64() == 0.5);
        let x = if half(b) {
            a
        } else if half(a) {
            b
        } else {
            return None;
        };
        (c == compute && sole_reader(k, j) == Some(i)).then_some(x)
    };
    for (i, instr) in k.body.iter().enumerate() {
        let Instr::Binary {
            op: BinaryOp::Mul,
            a,
            b,
            compute,
        } = *instr
        else {
            continue;
        };
        for (h, t) in [(a, b), (b, a)] {
            let Idiom::OnePlusTanh { u, minus, .. } = out[t] else {
                continue;
            };
            if sole_reader(k, t) != Some(i) {
                continue;
            }
            if let Some(x) = lone_half(h, i, compute) {
                out[h] = Idiom::Absorbed;
                out[t] = Idiom::Absorbed;
                out[i] = Idiom::OnePlusTanh {
                    u,
                    minus,
                    half_of: Some(x),
                };
                break;
            }
        }
    }
    // softmax's exp(a − max(a)): a − m ≤ 0 when m is the max of the same values (a NaN
    // anywhere makes m NaN, and every difference NaN).
    for (i, instr) in k.body.iter().enumerate() {
        let Instr::Unary {
            op: UnaryOp::Exp,
            x: d,
            compute,
        } = *instr
        else {
            continue;
        };
        if !matches!(compute, DType::F32 | DType::F16 | DType::BF16) {
            continue;
        }
        let Instr::Binary {
            op: BinaryOp::Sub,
            a,
            b: m,
            ..
        } = k.body[d]
        else {
            continue;
        };
        if matches!(k.body[m], Instr::Reduce { op: ReduceOp::Max, x } if x == a) {
            out[i] = Idiom::ExpAtMostZero;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use smelt_ir::kernel::Arg;

    /// GELU's tanh form as eager code records it: `0.5 * x * (1 + tanh(u))`, u = 0.8·x.
    fn gelu(extra_reader: Option<usize>) -> Kernel {
        let index = || Index {
            strides: vec![1],
            offset: 0,
        };
        let f = |v: f64| Instr::Const {
            value: Scalar::Float(v),
            dtype: DType::F32,
        };
        let bin = |op, a, b| Instr::Binary {
            op,
            a,
            b,
            compute: DType::F32,
        };
        let mut body = vec![
            Instr::Load {
                arg: 0,
                index: index(),
            },
            f(0.5),
            bin(BinaryOp::Mul, 0, 1),
            f(0.8),
            bin(BinaryOp::Mul, 0, 3),
            Instr::Unary {
                op: UnaryOp::Tanh,
                x: 4,
                compute: DType::F32,
            },
            f(1.0),
            bin(BinaryOp::Add, 5, 6),
            bin(BinaryOp::Mul, 2, 7),
            Instr::Store {
                arg: 1,
                index: index(),
                x: 8,
            },
        ];
        if let Some(j) = extra_reader {
            body.push(Instr::Store {
                arg: 2,
                index: index(),
                x: j,
            });
        }
        f32_kernel(
            vec![8],
            0,
            [Access::Read, Access::Write, Access::Write],
            body,
        )
    }

    /// A kernel of three f32 arguments of 64 elements over `shape`.
    fn f32_kernel(
        shape: Vec<usize>,
        reduce_axes: usize,
        access: [Access; 3],
        body: Vec<Instr>,
    ) -> Kernel {
        let args = access
            .into_iter()
            .map(|access| Arg {
                dtype: DType::F32,
                len: 64,
                access,
            })
            .collect();
        Kernel {
            name: "idiom".into(),
            shape,
            reduce_axes,
            args,
            body,
        }
    }

    #[test]
    fn gelus_tail_is_one_idiom() {
        let found = idioms(&gelu(None));
        let absorbed: Vec<usize> = (0..found.len())
            .filter(|&i| found[i] == Idiom::Absorbed)
            .collect();
        assert_eq!(absorbed, [2, 5, 7], "the halving, the tanh and 1 + tanh");
        assert_eq!(
            found[8],
            Idiom::OnePlusTanh {
                u: 4,
                minus: false,
                half_of: Some(0)
            }
        );
    }

    /// `exp(a − m)` over rows of `a`, `m` a reduction `op` of the load `of`.
    fn exp_minus(op: ReduceOp, of: usize) -> Kernel {
        let index = |strides: Vec<isize>| Index { strides, offset: 0 };
        let body = vec![
            Instr::Load {
                arg: 0,
                index: index(vec![8, 1]),
            },
            Instr::Load {
                arg: 1,
                index: index(vec![8, 1]),
            },
            Instr::Reduce { op, x: of },
            Instr::Binary {
                op: BinaryOp::Sub,
                a: 0,
                b: 2,
                compute: DType::F32,
            },
            Instr::Unary {
                op: UnaryOp::Exp,
                x: 3,
                compute: DType::F32,
            },
            Instr::Store {
                arg: 2,
                index: index(vec![8, 1]),
                x: 4,
            },
        ];
        f32_kernel(
            vec![8, 8],
            1,
            [Access::Read, Access::Read, Access::Write],
            body,
        )
    }

    #[test]
    fn softmaxs_exp_knows_its_argument_is_at_most_zero() {
        assert_eq!(
            idioms(&exp_minus(ReduceOp::Max, 0))[4],
            Idiom::ExpAtMostZero
        );
        // The max of other values, or the min of the same: nothing is known.
        assert_eq!(idioms(&exp_minus(ReduceOp::Max, 1))[4], Idiom::Plain);
        assert_eq!(idioms(&exp_minus(ReduceOp::Min, 0))[4], Idiom::Plain);
    }

    #[test]
    fn a_value_read_elsewhere_is_not_absorbed() {
        // The halving stored too: only `1 + tanh` is an idiom.
        let found = idioms(&gelu(Some(2)));
        assert_eq!(
            found[7],
            Idiom::OnePlusTanh {
                u: 4,
                minus: false,
                half_of: None
            }
        );
        assert_eq!(found[2], Idiom::Plain);
        assert_eq!(found[8], Idiom::Plain);
        // `1 + tanh` stored too: the tanh is still absorbed into it, the product is plain.
        let found = idioms(&gelu(Some(7)));
        assert_eq!(
            found[7],
            Idiom::OnePlusTanh {
                u: 4,
                minus: false,
                half_of: None
            }
        );
        assert_eq!(found[8], Idiom::Plain);
        // The tanh stored too: nothing is an idiom.
        let found = idioms(&gelu(Some(5)));
        assert!(found.iter().all(|i| *i == Idiom::Plain), "{found:?}");
    }
}
