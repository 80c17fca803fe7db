//! Random tensor programs for differential testing: inputs of every rank from 0 to 4 (empty
//! dims included), every dtype, special values (NaN, ±inf, −0) and strided layouts, and chains
//! of ops over them (elementwise, reductions, scans, softmax, in-place writes into views,
//! matmul, gather, index_put, cat, sort, argmax). `tests/check.rs` realises them under
//! `SMELT_CHECK`, where every realisation is compared with an unfused run and each kernel with
//! the reference interpreter.
//!
//! Every choice is read from bytes (the inputs' from [`Choices`], the ops' one byte each), so a
//! failing program replays from its bytes and shrinks with them (proptest shrinks bytes
//! towards 0, and choice 0 is always the simplest: rank 2, f32, contiguous, no specials, the
//! first op). Every program is valid
//! PyTorch: each op is picked so that it accepts the dtype and shape it is given, and panics
//! (a generator or smelt bug) otherwise.

use smelt_frontend::{DType, Result, Scalar, Tensor, TensorIndex};

/// A source of choices: the bytes of a string in order, then zeros.
#[derive(Debug)]
pub struct Choices<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Choices<'a> {
    pub fn new(bytes: &'a [u8]) -> Choices<'a> {
        Choices { bytes, pos: 0 }
    }

    /// The next byte (0 once the string is used up).
    pub fn byte(&mut self) -> u8 {
        let b = self.bytes.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    /// A choice among `n` (at most 256), 0 for a zero byte.
    pub fn below(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n
    }

    /// Eight bytes as a number (a seed for values too many to draw one by one).
    pub fn u64(&mut self) -> u64 {
        (0..8).fold(0, |acc, _| acc << 8 | u64::from(self.byte()))
    }
}

/// The dtypes of inputs, the simplest first.
pub const DTYPES: [DType; 10] = [
    DType::F32,
    DType::I32,
    DType::F64,
    DType::F16,
    DType::BF16,
    DType::I64,
    DType::Bool,
    DType::I16,
    DType::I8,
    DType::U8,
];

/// Ranks of inputs, the commonest first (drawn uniformly from this list).
const RANKS: [usize; 8] = [2, 1, 3, 0, 4, 2, 3, 2];

/// Sizes of dims (drawn uniformly from this list): small ones, 1 (broadcasts), 0 (empty
/// tensors, once in 16 dims) and 33 (a SIMD loop with a tail).
const SIZES: [usize; 16] = [4, 6, 1, 3, 5, 0, 7, 33, 8, 2, 12, 4, 5, 9, 16, 6];

/// Inputs stop growing at this many elements: bigger ones cost compile and interpret time
/// without reaching other code (`random_programs_agree_at_size` covers large tensors).
const MAX_NUMEL: usize = 600;

/// A shape of rank 0 to 4 with at most `MAX_NUMEL` elements.
pub fn shape(ch: &mut Choices) -> Vec<usize> {
    let rank = RANKS[ch.below(RANKS.len())];
    let mut shape = vec![];
    for _ in 0..rank {
        let size = SIZES[ch.below(SIZES.len())];
        let numel: usize = shape.iter().product();
        shape.push(if numel * size > MAX_NUMEL { 1 } else { size });
    }
    shape
}

/// Float values for special positions: NaN, the infinities and both zeros.
const SPECIALS: [f64; 5] = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0];

/// `n` values of `dtype` from `seed`: quarters in [−2, 2] for floats, [−8, 8) for signed
/// integers, [0, 16) for u8; with `specials` (floats only), that many elements, at most, are
/// NaN, ±inf or ±0. Only a few: a reduction over a row holding a NaN is NaN on every backend,
/// and NaN equal to NaN compares nothing.
pub fn values(n: usize, dtype: DType, seed: u64, specials: usize) -> Vec<Scalar> {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut vals: Vec<Scalar> = (0..n)
        .map(|_| {
            let r = next();
            match dtype {
                DType::Bool => Scalar::Bool(r % 2 == 1),
                DType::U8 => Scalar::Int((r % 16) as i64),
                DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
                    Scalar::Int((r % 16) as i64 - 8)
                }
                DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
                    Scalar::Float((r % 17) as f64 / 4.0 - 2.0)
                }
                DType::C64 | DType::C128 => Scalar::Complex(
                    (r % 17) as f64 / 4.0 - 2.0,
                    (r / 17 % 17) as f64 / 4.0 - 2.0,
                ),
            }
        })
        .collect();
    if dtype.is_float() && n > 0 {
        for _ in 0..specials {
            let r = next();
            vals[(r % n as u64) as usize] = Scalar::Float(SPECIALS[(r >> 32) as usize % 5]);
        }
    }
    vals
}

/// An input of `shape`: its dtype, values and layout drawn from `ch`. The layouts: contiguous,
/// transposed storage, a broadcast (a size-1 dim expanded), flipped, every other element of a
/// wider storage, permuted storage, and an offset into a bigger storage.
pub fn input(ch: &mut Choices, shape: &[usize]) -> Tensor {
    let dtype = DTYPES[ch.below(DTYPES.len())];
    let specials = [0, 1, 3][ch.below(3)];
    let seed = ch.u64();
    let make = |shape: &[usize]| {
        let n = shape.iter().product();
        Tensor::from_scalars(&values(n, dtype, seed, specials), shape, dtype)
    };
    let rank = shape.len();
    let dims: Vec<i64> = (0..rank as i64).collect();
    let sizes: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
    match ch.below(7) {
        1 if rank >= 2 => {
            let mut swapped = shape.to_vec();
            swapped.swap(rank - 2, rank - 1);
            make(&swapped).transpose(-2, -1)
        }
        2 if rank >= 1 => {
            let d = ch.below(rank);
            let mut one = shape.to_vec();
            one[d] = 1;
            make(&one).expand(&sizes)
        }
        3 if rank >= 1 => make(shape).flip(&[ch.below(rank) as i64]),
        4 if rank >= 1 => {
            let mut wide = shape.to_vec();
            wide[rank - 1] *= 2;
            make(&wide).slice(-1, None, None, 2)
        }
        5 if rank >= 2 => {
            // Storage in reversed dim order, viewed back in `shape`'s order.
            let reversed: Vec<usize> = shape.iter().rev().copied().collect();
            let back: Vec<i64> = dims.iter().rev().copied().collect();
            make(&reversed).permute(&back)
        }
        6 => {
            let mut bigger = shape.to_vec();
            bigger.insert(0, 2);
            make(&bigger).select(0, 1)
        }
        _ => make(shape),
    }
}

/// Unwraps the result of an op the generator chose as valid.
#[track_caller]
fn valid<T>(r: Result<T>) -> T {
    r.unwrap_or_else(|e| panic!("the generator made an invalid op: {e}"))
}

/// The category of a dtype, as the ops below treat it.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Float,
    Int,
    Bool,
}

fn kind(t: &Tensor) -> Kind {
    match t.dtype() {
        DType::Bool => Kind::Bool,
        // A float constant is an operand of complex tensors too.
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 | DType::C64 | DType::C128 => {
            Kind::Float
        }
        DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => Kind::Int,
    }
}

/// A constant of `t`'s kind: `float` for floats, `int` for integers, `true` for bool.
fn like(t: &Tensor, float: f64, int: i64) -> Scalar {
    match kind(t) {
        Kind::Float => Scalar::Float(float),
        Kind::Int => Scalar::Int(int),
        Kind::Bool => Scalar::Bool(true),
    }
}

/// Ops of [`program`].
pub const OPS: usize = 32;

/// A chain of ops over `x`, one per byte of `ops` (the op is the byte's low 7 bits modulo
/// [`OPS`]): each op keeps the shape of `x`, so that `x` and `y` (same shape, any dtype and
/// layout) can join in at any step. Returns the chain's end, the values before the steps whose
/// byte has its high bit set, and side outputs (row sums, amax, var, sort indices, argmax …),
/// so that realising them together exercises multi-output kernels.
pub fn program(ops: &[u8], x: &Tensor, y: &Tensor) -> Vec<Tensor> {
    let mut outs = vec![];
    let mut t = x.clone();
    for &op in ops {
        if op & 0x80 != 0 {
            outs.push(t.clone());
        }
        t = step(usize::from(op & 0x7f) % OPS, &t, x, y, &mut outs);
    }
    outs.push(t);
    outs
}

/// Op `op` of [`program`] on `t`.
fn step(op: usize, t: &Tensor, x: &Tensor, y: &Tensor, outs: &mut Vec<Tensor>) -> Tensor {
    let k = kind(t);
    let shape = t.shape().to_vec();
    let rank = shape.len();
    let last = shape.last().copied().unwrap_or(1);
    let first = shape.first().copied().unwrap_or(1);
    let all: &[i64] = &[];
    match op {
        0 => match k {
            Kind::Float => t * 1.5 + 0.25,
            Kind::Int => t * 3 + 1,
            Kind::Bool => t.logical_not(),
        },
        1 if rank >= 2 => t.transpose(-2, -1).exp().transpose(-2, -1),
        1 => t.exp(),
        2 => match k {
            Kind::Float => (t - t.mean(&[-1], true, None)).relu(),
            Kind::Int => (t - t.sum(&[-1], true, None)).relu(),
            Kind::Bool => t.sum(&[-1], true, None) + t,
        },
        3 => match k {
            Kind::Float => t.softmax(-1, None),
            Kind::Int => t.abs() * 3,
            Kind::Bool => t.to_dtype(DType::F32).softmax(-1, None),
        },
        4 if rank >= 1 => t + t.sum(&[0], true, None),
        4 => t + t.sum(all, false, None),
        5 => t.sigmoid() * x,
        6 => {
            let c = t.deep_clone();
            if c.numel() > 0 {
                let target = if rank >= 1 {
                    c.select(-1, 2.min(last as i64 - 1))
                } else {
                    c.clone()
                };
                match k {
                    Kind::Bool => target.fill_(true),
                    Kind::Float | Kind::Int => target.add_(like(t, 1.0, 1)),
                };
            }
            c
        }
        7 if rank >= 1 => t.flip(&[-1]).tanh(),
        7 => t.tanh(),
        8 => {
            outs.push(t.sum(&[-1], false, None));
            outs.push((t * t).sum(&[-1], false, None));
            match k {
                Kind::Bool => t.logical_not(),
                Kind::Float | Kind::Int => t.abs(),
            }
        }
        9 => {
            outs.push(t.exp());
            t * 2
        }
        10 if k == Kind::Float => {
            outs.push(t.var(&[-1], 1.0, true));
            t - t.mean(&[-1], true, None)
        }
        // amax needs a non-empty reduced dim.
        10 if rank >= 1 && first > 0 && last > 0 => {
            outs.push(t.amax(&[-1], true));
            match k {
                Kind::Bool => t.logical_xor(t.amax(&[0], true)),
                Kind::Float | Kind::Int => t - t.amax(&[0], true),
            }
        }
        10 => t.clone(),
        11 if rank >= 2 => t.maximum(x.transpose(-2, -1).contiguous().transpose(-2, -1)),
        11 => t.maximum(x.contiguous()),
        12 => t.cumsum(-1, None),
        13 if rank >= 1 => t.roll(&[1], &[-1]) + t.flip(&[0]),
        13 => t + t,
        14 => match k {
            Kind::Float => t.clamp(Some((-0.5).into()), Some(1.0.into())),
            Kind::Int => t.clamp(Some((-2i64).into()), Some(3i64.into())),
            Kind::Bool => t
                .to_dtype(DType::I32)
                .clamp(Some(0i64.into()), Some(0i64.into())),
        },
        15 => match k {
            Kind::Float => t.masked_fill(&t.gt(0.0), 0.5),
            Kind::Int => t.masked_fill(&t.gt(0i64), 0i64),
            Kind::Bool => t.masked_fill(&t.logical_not(), true),
        },
        16 => match k {
            Kind::Float => t.log_softmax(-1, None),
            Kind::Int => t.remainder(3i64),
            Kind::Bool => t.to_dtype(DType::I64).remainder(3i64),
        },
        17 => {
            let c = t.deep_clone();
            if rank >= 1 && first > 0 {
                let row = c.select(0, 0);
                match k {
                    Kind::Bool => row.fill_(false),
                    Kind::Float | Kind::Int => row.mul_(like(t, 2.0, 2)),
                };
            }
            c
        }
        18 => {
            if rank >= 1 && first > 0 {
                outs.push(t.amin(&[0], false));
            }
            match k {
                Kind::Float => outs.push(t.logsumexp(&[0], false)),
                Kind::Int | Kind::Bool => outs.push(t.sum(&[0], false, None)),
            }
            match k {
                Kind::Bool => t.logical_and(t),
                Kind::Float | Kind::Int => t.square(),
            }
        }
        19 => match k {
            Kind::Float => t.abs().sqrt(),
            Kind::Int => t * t,
            Kind::Bool => t.logical_or(y.ne(0i64)),
        },
        20 if rank >= 2 => {
            t.transpose(-2, -1).contiguous().transpose(-2, -1) + t.sum(&[-2], true, None)
        }
        20 => t + t.sum(all, false, None),
        21 => match k {
            Kind::Float => t / (t.abs() + 1.0),
            Kind::Int => t.floor_divide(2i64),
            Kind::Bool => t.to_dtype(DType::I16).floor_divide(2i64),
        },
        // matmul does not promote and refuses bool; a 0-d tensor has no rows.
        22 if rank >= 1 && k != Kind::Bool => {
            let w: Vec<Scalar> = (0..last * last)
                .map(|i| Scalar::Int(i64::from((i / last + 2 * (i % last)) % 3 == 0)))
                .collect();
            let product = t.matmul(&Tensor::from_scalars(&w, &[last, last], t.dtype()));
            if k != Kind::Float || t.dtype().is_complex() {
                return product;
            }
            // A bias row and a relu: what `fold_bias` runs inside the product.
            let bias: Vec<Scalar> = (0..last)
                .map(|i| Scalar::Float((i % 5) as f64 * 0.5 - 1.0))
                .collect();
            (product + Tensor::from_scalars(&bias, &[last], t.dtype())).relu()
        }
        22 => t.logical_or(t),
        23 if rank >= 1 => {
            let n = t.numel();
            let index: Vec<i64> = (0..n).map(|i| ((i * 7 + 3) % last) as i64).collect();
            t.gather(-1, &Tensor::from_vec(index, &shape))
        }
        23 => t.clone(),
        24 => {
            let c = t.deep_clone();
            if rank >= 1 && first > 0 {
                let rows = Tensor::from_vec(vec![0i64, first as i64 - 1], &[2]);
                c.setitem(&[TensorIndex::Tensor(rows)], like(t, -1.5, 5));
            }
            c
        }
        25 if rank >= 1 => {
            let cut = (last / 2) as i64;
            let right = last as i64 - cut;
            Tensor::cat(&[t.narrow(-1, 0, cut), y.narrow(-1, cut, right)], -1)
        }
        25 => t + y,
        26 if rank >= 1 => {
            let (values, indices) = t.sort(-1, last % 2 == 0);
            outs.push(indices);
            values
        }
        26 => t.clone(),
        27 if rank >= 1 && last > 0 && k != Kind::Bool => {
            outs.push(t.argmax(Some(-1), false));
            t.clone()
        }
        27 => t.clone(),
        28 => match k {
            Kind::Bool => t.logical_not(),
            Kind::Float | Kind::Int => t.neg(),
        },
        29 => valid(Tensor::try_where(&t.gt(0i64), t, y)),
        30 => t.ne(y),
        _ => t + y,
    }
}
