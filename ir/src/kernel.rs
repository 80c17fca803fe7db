//! Kernel IR: an iteration space, buffer arguments, and a small SSA body of loads, scalar ops,
//! optional reductions and stores. Sizes and strides are data, so one kernel structure
//! serves every size. Codegen and the reference interpreter match on [`Instr`] only.
//!
//! Arguments: the read buffers first, then one output (`Write` or `Update`) per buffer the
//! kernel produces, in output order. A kernel may have several outputs (a fused group that
//! stores more than one node); each is a distinct buffer stored by at least one `Store`.

use crate::random::RandomDist;
use crate::{BinaryOp, DType, LibraryOp, ReduceOp, Scalar, UnaryOp, View};
use std::fmt::{self, Write as _};

/// An SSA value: the index of the instruction that produced it.
pub type ValueId = usize;

/// How a kernel uses one buffer argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    Read,
    /// A fresh output buffer.
    Write,
    /// An output that starts as a copy of argument `from` (an in-place update of a storage
    /// version; the runtime reuses `from`'s memory when nothing else reads it).
    Update {
        from: usize,
    },
}

/// One buffer argument.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Arg {
    pub dtype: DType,
    pub len: usize,
    pub access: Access,
}

/// An affine address: `offset + Σ index[d]·strides[d]` over the kernel's iteration dims.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Index {
    pub strides: Vec<isize>,
    pub offset: isize,
}

/// Where an instruction runs in a reduction kernel (see [`Kernel::levels`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Row,
    Element,
}

/// One kernel instruction.
#[derive(Clone, Debug, PartialEq)]
pub enum Instr {
    /// Reads argument `arg` at `index`; the value has the argument's dtype.
    Load {
        arg: usize,
        index: Index,
    },
    Const {
        value: Scalar,
        dtype: DType,
    },
    /// `x` must already have dtype `compute`.
    Unary {
        op: UnaryOp,
        x: ValueId,
        compute: DType,
    },
    /// `a` and `b` must already have dtype `compute`.
    Binary {
        op: BinaryOp,
        a: ValueId,
        b: ValueId,
        compute: DType,
    },
    /// `cond` is bool; `a` and `b` have the same dtype.
    Where {
        cond: ValueId,
        a: ValueId,
        b: ValueId,
    },
    Cast {
        x: ValueId,
        to: DType,
    },
    /// Combines `x` over the kernel's reduced (trailing) dims; the result is row-level (see
    /// [`Kernel::levels`]). A kernel may hold several, evaluated in body order.
    Reduce {
        op: ReduceOp,
        x: ValueId,
    },
    /// Writes `x` (of the argument's dtype) to argument `arg` at `index`.
    Store {
        arg: usize,
        index: Index,
        x: ValueId,
    },
    /// The draw of `dist` for a tensor of `dtype` (`random.rs`) at position `index` (the
    /// random tensor's buffer position at the kernel's point) of the draw `offset` under
    /// `seed` (both int64 values, read from the generator state's buffer); its value has
    /// `dist.value_dtype(dtype)`.
    Random {
        dist: RandomDist,
        dtype: DType,
        seed: ValueId,
        offset: ValueId,
        index: Index,
    },
}

impl Instr {
    /// The index of a load or store (its address) or of a random draw (its position); `None`
    /// for every other instruction.
    pub fn index(&self) -> Option<&Index> {
        match self {
            Instr::Load { index, .. }
            | Instr::Store { index, .. }
            | Instr::Random { index, .. } => Some(index),
            Instr::Const { .. }
            | Instr::Unary { .. }
            | Instr::Binary { .. }
            | Instr::Where { .. }
            | Instr::Cast { .. }
            | Instr::Reduce { .. } => None,
        }
    }

    /// [`Self::index`], mutable: what a change of the iteration space (loop order) rewrites.
    pub fn index_mut(&mut self) -> Option<&mut Index> {
        match self {
            Instr::Load { index, .. }
            | Instr::Store { index, .. }
            | Instr::Random { index, .. } => Some(index),
            Instr::Const { .. }
            | Instr::Unary { .. }
            | Instr::Binary { .. }
            | Instr::Where { .. }
            | Instr::Cast { .. }
            | Instr::Reduce { .. } => None,
        }
    }

    /// The argument a load reads or a store writes; `None` for every other instruction.
    pub fn arg(&self) -> Option<usize> {
        match self {
            Instr::Load { arg, .. } | Instr::Store { arg, .. } => Some(*arg),
            Instr::Const { .. }
            | Instr::Unary { .. }
            | Instr::Binary { .. }
            | Instr::Where { .. }
            | Instr::Cast { .. }
            | Instr::Reduce { .. }
            | Instr::Random { .. } => None,
        }
    }

    /// The SSA values the instruction reads.
    pub fn operands(&self) -> Vec<ValueId> {
        match self {
            Instr::Load { .. } | Instr::Const { .. } => vec![],
            Instr::Unary { x, .. }
            | Instr::Cast { x, .. }
            | Instr::Reduce { x, .. }
            | Instr::Store { x, .. } => vec![*x],
            Instr::Binary { a, b, .. } => vec![*a, *b],
            Instr::Where { cond, a, b } => vec![*cond, *a, *b],
            Instr::Random { seed, offset, .. } => vec![*seed, *offset],
        }
    }
}

/// A kernel: loops over `shape`, of which the trailing `reduce_axes` dims are reduced.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub name: String,
    pub shape: Vec<usize>,
    pub reduce_axes: usize,
    pub args: Vec<Arg>,
    pub body: Vec<Instr>,
}

impl Kernel {
    /// A kernel copying view `src` of a buffer of `src_len` elements into view `dst` (of the
    /// same shape) of a fresh buffer of `dst_len` elements, both of `dtype`: how a backend
    /// gives a library routine a layout it can read (a matmul operand cuBLAS cannot take). The
    /// views' readings apply (a conjugate source is copied conjugated); a complex dtype is
    /// copied as its two parts.
    pub fn copy(dtype: DType, src: &View, src_len: usize, dst: &View, dst_len: usize) -> Kernel {
        assert_eq!(src.shape, dst.shape, "invariant: a copy keeps the shape");
        let index = |v: &View| Index {
            strides: v.strides.to_vec(),
            offset: v.offset as isize,
        };
        let (storage, parts) = (dtype.storage(), dtype.parts());
        let mut body = vec![];
        let part = |body: &mut Vec<Instr>, k: isize, negate: bool| {
            let at = |v: &View| {
                if parts == 2 {
                    crate::complex::part_index(&index(v), k)
                } else {
                    index(v)
                }
            };
            body.push(Instr::Load {
                arg: 0,
                index: at(src),
            });
            let mut x = body.len() - 1;
            if negate {
                body.push(Instr::Unary {
                    op: UnaryOp::Neg,
                    x,
                    compute: storage,
                });
                x = body.len() - 1;
            }
            body.push(Instr::Store {
                arg: 1,
                index: at(dst),
                x,
            });
        };
        // A write through `dst` stores the transform of the value; composing it with `src`'s.
        let (conj, neg) = (src.read.conj != dst.read.conj, src.read.neg != dst.read.neg);
        if parts == 2 {
            part(&mut body, 0, neg);
            part(&mut body, 1, neg != conj);
        } else {
            part(&mut body, 0, neg);
        }
        let mut k = Kernel {
            name: format!("copy_{dtype}"),
            shape: src.shape.to_vec(),
            reduce_axes: 0,
            args: vec![
                Arg {
                    dtype: storage,
                    len: src_len * parts,
                    access: Access::Read,
                },
                Arg {
                    dtype: storage,
                    len: dst_len * parts,
                    access: Access::Write,
                },
            ],
            body,
        };
        k.order_loops();
        k.merge_dims();
        k
    }

    /// How many leading arguments are read-only inputs; the rest are outputs.
    pub fn read_args(&self) -> usize {
        self.args
            .iter()
            .position(|a| a.access != Access::Read)
            .unwrap_or(self.args.len())
    }

    /// The output arguments' positions, in output order.
    pub fn outputs(&self) -> std::ops::Range<usize> {
        self.read_args()..self.args.len()
    }

    /// The dtype of every SSA value, in body order (`None` for stores).
    pub fn value_dtypes(&self) -> Vec<Option<DType>> {
        let mut out: Vec<Option<DType>> = Vec::with_capacity(self.body.len());
        for instr in &self.body {
            let t = match instr {
                Instr::Load { arg, .. } => Some(self.args[*arg].dtype),
                Instr::Const { dtype, .. } => Some(*dtype),
                Instr::Unary { op, compute, .. } => Some(op.result_dtype(*compute)),
                Instr::Binary { op, compute, .. } => Some(op.result_dtype(*compute)),
                Instr::Where { a, .. } => out[*a],
                Instr::Cast { to, .. } => Some(*to),
                Instr::Reduce { x, .. } => out[*x],
                Instr::Store { .. } => None,
                Instr::Random { dist, dtype, .. } => Some(dist.value_dtype(*dtype)),
            };
            out.push(t);
        }
        out
    }

    /// Which SSA values are never negative: a bool or `uint8` value, or a float that is +0,
    /// −0, positive, +∞ or NaN but never below zero and never −∞ (`None`-typed stores are
    /// `false`). A sum of such values has no cancellation and every partial sum is at most the
    /// whole, so the CPU backend may add a few of them in f32 before its f64 accumulators
    /// (`codegen/src/cpu/translate/rows.rs`): the result moves by a few units in the last
    /// place at most, and overflows only where the whole sum does. The rules are local and
    /// conservative: `|x|`, `x²`, `exp`, `sqrt`, `sigmoid`, `relu`; sums, products, maxima and
    /// selections of such values; `pow` by an even integer constant, or of such a value by a
    /// constant ≥ 0. Division is not among them (`x / −0` is −∞).
    pub fn nonnegative(&self) -> Vec<bool> {
        let dtypes = self.value_dtypes();
        let mut out: Vec<bool> = Vec::with_capacity(self.body.len());
        let konst = |v: ValueId| {
            if let Instr::Const { value, .. } = self.body[v] {
                Some(value.as_f64())
            } else {
                None
            }
        };
        // Ops not named here are not known to be non-negative: an op added later is `false`
        // until a rule says otherwise.
        for (i, instr) in self.body.iter().enumerate() {
            let unsigned = matches!(dtypes[i], Some(DType::Bool | DType::U8));
            let float = dtypes[i].is_some_and(|d| d.is_float());
            let known = match *instr {
                Instr::Const { value, .. } => value.as_f64() >= 0.0,
                Instr::Unary { op, x, .. } => {
                    use UnaryOp as U;
                    matches!(op, U::Abs | U::Square | U::Exp | U::Exp2 | U::Sqrt)
                        || matches!(op, U::Sigmoid | U::Relu)
                        || matches!(op, U::Floor | U::Ceil | U::Round | U::Trunc) && out[x]
                }
                Instr::Binary { op, a, b, .. } => {
                    let both = out[a] && out[b];
                    let even_power = |e: f64| e.is_finite() && e % 2.0 == 0.0;
                    op == BinaryOp::Mul && (a == b || both)
                        || matches!(op, BinaryOp::Add | BinaryOp::Minimum) && both
                        || op == BinaryOp::Maximum && (out[a] || out[b])
                        || op == BinaryOp::Pow
                            && konst(b).is_some_and(|e| even_power(e) || out[a] && e >= 0.0)
                }
                Instr::Where { a, b, .. } => out[a] && out[b],
                Instr::Cast { x, .. } => out[x],
                // An empty row's maximum is −∞.
                Instr::Reduce { op, x } => {
                    matches!(op, ReduceOp::Sum | ReduceOp::Prod | ReduceOp::Min) && out[x]
                }
                Instr::Load { .. } | Instr::Random { .. } | Instr::Store { .. } => false,
            };
            out.push(unsigned || float && known);
        }
        out
    }

    /// Chooses the loop order of an elementwise kernel (one without reduced dims, whose points
    /// may run in any order): the dim along which the most loads and stores are contiguous
    /// (stride exactly 1) becomes the innermost, so those accesses stream and vectorise;
    /// the other dims keep their order. Ties keep the current innermost dim. For example
    /// `a.t() + b` stored in `a.t()`'s layout reads `a` and writes the output contiguously
    /// along dim 0, so dim 0 moves inside and only `b` is read across rows.
    pub fn order_loops(&mut self) {
        let rank = self.shape.len();
        if self.reduce_axes > 0 || rank < 2 {
            return;
        }
        // Memory accesses only: a random draw's position costs the same in any order.
        let unit = |d: usize| {
            self.body
                .iter()
                .filter(|i| i.arg().is_some())
                .filter(|i| i.index().is_some_and(|index| index.strides[d] == 1))
                .count()
        };
        let last = rank - 1;
        let best = (0..rank)
            .filter(|&d| self.shape[d] > 1)
            .max_by_key(|&d| (unit(d), d == last))
            .unwrap_or(last);
        if best == last || unit(best) <= unit(last) {
            return;
        }
        let mut order: Vec<usize> = (0..rank).filter(|&d| d != best).collect();
        order.push(best);
        self.shape = order.iter().map(|&d| self.shape[d]).collect();
        for index in self.body.iter_mut().filter_map(Instr::index_mut) {
            index.strides = order.iter().map(|&d| index.strides[d]).collect();
        }
    }

    /// Merges neighbouring dims that every load, store and random draw walks as one (PyTorch's
    /// TensorIterator coalesces its dims by the same rule): dims `d` and `d + 1`, both kept or
    /// both reduced, merge when each index has `strides[d] == strides[d + 1] · shape[d + 1]`, or
    /// one of the two has a single position. The points and the order they are visited in do
    /// not change, only how many loops walk them: `permute(0, 2, 3, 1)` of an `[N, C, H, W]`
    /// tensor becomes one transpose of `[H·W, C]` blocks, tiled along `H·W`, instead of
    /// blocks `W` rows high; a dense `[B, M, N]` elementwise kernel becomes one of `[B·M, N]`.
    /// Merging stops at two dims: the cpu backend splits dim 0 among its threads and streams
    /// the stores of a kernel with rows only (`smelt_codegen::cpu::streaming_candidate`), where
    /// each row's vector stores start at an aligned element. Kernels over no points (a dim of
    /// size 0) keep their dims.
    pub fn merge_dims(&mut self) {
        if self.shape.contains(&0) {
            return;
        }
        let mut d = self.shape.len();
        while d >= 2 && self.shape.len() > 2 {
            d -= 1;
            let (a, b) = (d - 1, d);
            let outer = self.shape.len() - self.reduce_axes;
            let (na, nb) = (self.shape[a], self.shape[b]);
            let joins = |index: &Index| {
                na == 1 || nb == 1 || index.strides[a] == index.strides[b] * nb as isize
            };
            if (a < outer) != (b < outer) || !self.body.iter().filter_map(Instr::index).all(joins) {
                continue;
            }
            for index in self.body.iter_mut().filter_map(Instr::index_mut) {
                if nb == 1 && na != 1 {
                    index.strides.remove(b);
                } else {
                    index.strides.remove(a);
                }
            }
            self.shape[a] = na * nb;
            self.shape.remove(b);
            if b >= outer {
                self.reduce_axes -= 1;
            }
        }
    }

    /// Whether the stores to argument `arg` write every one of its `len` elements: some store's
    /// index maps the iteration space onto `0..len` with no gap (a dense layout, in any dim
    /// order; dims of size 1 or stride 0 just repeat a point). A runtime may then hand that
    /// output memory with stale contents instead of zeroing it.
    pub fn overwrites(&self, arg: usize) -> bool {
        let len = self.args[arg].len;
        self.body.iter().any(|instr| {
            let Instr::Store { arg: a, index, .. } = instr else {
                return false;
            };
            if *a != arg || index.offset != 0 {
                return false;
            }
            let mut dims: Vec<(isize, usize)> = index
                .strides
                .iter()
                .zip(&self.shape)
                .filter(|&(&s, &n)| s != 0 && n > 1)
                .map(|(&s, &n)| (s, n))
                .collect();
            dims.sort_unstable();
            let mut next = 1usize;
            for (s, n) in dims {
                if s != next as isize {
                    return false;
                }
                next *= n;
            }
            next == len
        })
    }

    /// Positions of the reduction instructions, in body order.
    pub fn reduces(&self) -> Vec<usize> {
        (0..self.body.len())
            .filter(|&i| matches!(self.body[i], Instr::Reduce { .. }))
            .collect()
    }

    /// Whether each instruction varies along the reduced dims (`Element`) or is uniform over
    /// a row (`Row`): loads that move along a reduced dim and everything computed from them are
    /// element-level; constants, reductions and what is computed from them alone are row-level.
    /// A kernel runs row-level instructions once per kept point and element-level ones in
    /// passes over the reduced dims: one pass per reduction (the row is walked again, from
    /// cache) and a final pass for element-level stores.
    pub fn levels(&self) -> Vec<Level> {
        let outer = self.shape.len() - self.reduce_axes;
        // An access moves along the reduced dims when it has a stride on one of them that has
        // more than one position, or none (over an empty row, a reduced dim of size 0: such an
        // access addresses elements of an empty tensor and never runs).
        let walks = |index: &Index| {
            index.strides[outer..]
                .iter()
                .zip(&self.shape[outer..])
                .any(|(&s, &n)| s != 0 && n != 1)
        };
        // Over an empty row a load with no stride there is a row-shaped operand of what follows
        // the reduction (a mask, a bias): it runs once per row like the stores of the row's
        // result, so the reduction's identity and what is computed from it are written. But a
        // view of an empty tensor may have been given no stride on its empty dims too (any
        // strides address nothing there); such a load is recognised by reaching outside its
        // buffer (the empty tensor has none), and never runs: its values only ever meet a
        // reduction over nothing.
        let empty_row = self.shape[outer..].contains(&0);
        let inside = |arg: usize, index: &Index| {
            let (mut lo, mut hi) = (index.offset, index.offset);
            for (&s, &n) in index.strides[..outer].iter().zip(&self.shape[..outer]) {
                let reach = s * (n.max(1) as isize - 1);
                if reach < 0 {
                    lo += reach;
                } else {
                    hi += reach;
                }
            }
            lo >= 0 && (hi as usize) < self.args[arg].len
        };
        let moves = |arg: usize, index: &Index| walks(index) || (empty_row && !inside(arg, index));
        let mut levels: Vec<Level> = Vec::with_capacity(self.body.len());
        for instr in &self.body {
            let of = |v: ValueId| levels[v];
            let level = match instr {
                Instr::Load { arg, index } => {
                    if moves(*arg, index) {
                        Level::Element
                    } else {
                        Level::Row
                    }
                }
                Instr::Const { .. } | Instr::Reduce { .. } => Level::Row,
                Instr::Unary { x, .. } | Instr::Cast { x, .. } => of(*x),
                Instr::Binary { a, b, .. } => of(*a).max(of(*b)),
                Instr::Where { cond, a, b } => of(*cond).max(of(*a)).max(of(*b)),
                // A random value varies with its position, as a load does (it reads no
                // buffer, so over an empty row one with no stride there may run per row).
                Instr::Random {
                    seed,
                    offset,
                    index,
                    ..
                } => {
                    let at = if walks(index) {
                        Level::Element
                    } else {
                        Level::Row
                    };
                    at.max(of(*seed)).max(of(*offset))
                }
                Instr::Store { arg, index, x } => {
                    if moves(*arg, index) {
                        Level::Element
                    } else {
                        of(*x)
                    }
                }
            };
            levels.push(level);
        }
        levels
    }

    /// Checks typing, SSA order, arity of indices and that every access stays inside its buffer;
    /// lists every violation.
    pub fn verify(&self) -> Vec<String> {
        let mut errors = vec![];
        let types = self.value_dtypes();
        let n = self.shape.len();
        if self.reduce_axes > n {
            errors.push(format!("reduce_axes {} > rank {n}", self.reduce_axes));
        }
        let check_index = |errors: &mut Vec<String>, i: usize, arg: usize, index: &Index| {
            if arg >= self.args.len() {
                errors.push(format!("%{i}: argument {arg} does not exist"));
                return;
            }
            if index.strides.len() != n {
                errors.push(format!(
                    "%{i}: index has {} strides for rank {n}",
                    index.strides.len()
                ));
                return;
            }
            if self.shape.iter().product::<usize>() == 0 {
                return;
            }
            let (mut lo, mut hi) = (index.offset, index.offset);
            for (&s, &st) in self.shape.iter().zip(&index.strides) {
                let span = (s as isize - 1) * st;
                if span < 0 { lo += span } else { hi += span }
            }
            if lo < 0 || hi as usize >= self.args[arg].len {
                errors.push(format!(
                    "%{i}: index reaches [{lo}, {hi}] outside buffer of {}",
                    self.args[arg].len
                ));
            }
        };
        let expect = |errors: &mut Vec<String>, i: usize, v: ValueId, t: Option<DType>| {
            if v >= i {
                errors.push(format!("%{i}: uses %{v} before it is defined"));
            } else if types[v] != t {
                errors.push(format!(
                    "%{i}: %{v} has type {:?}, expected {:?}",
                    types[v], t
                ));
            }
        };
        for (a, arg) in self.args.iter().enumerate() {
            if arg.dtype.is_complex() {
                errors.push(format!(
                    "argument {a} is {}: buffers hold real parts",
                    arg.dtype
                ));
            }
        }
        let mut reduces = 0;
        for (i, instr) in self.body.iter().enumerate() {
            let complex_compute = matches!(
                instr,
                Instr::Unary { compute, .. } | Instr::Binary { compute, .. } if compute.is_complex()
            );
            if types[i].is_some_and(DType::is_complex) || complex_compute {
                errors.push(format!(
                    "%{i} is complex: kernel values are real (complex ones are split in two)"
                ));
            }
            match instr {
                Instr::Load { arg, index } => check_index(&mut errors, i, *arg, index),
                Instr::Const { .. } => {}
                Instr::Unary { x, compute, .. } => expect(&mut errors, i, *x, Some(*compute)),
                Instr::Binary { a, b, compute, .. } => {
                    expect(&mut errors, i, *a, Some(*compute));
                    expect(&mut errors, i, *b, Some(*compute));
                }
                Instr::Where { cond, a, b } => {
                    expect(&mut errors, i, *cond, Some(DType::Bool));
                    if *a < i {
                        expect(&mut errors, i, *b, types[*a]);
                    }
                }
                Instr::Cast { x, .. } => {
                    if *x >= i {
                        errors.push(format!("%{i}: uses %{x} before it is defined"));
                    }
                }
                Instr::Reduce { x, .. } => {
                    reduces += 1;
                    if *x >= i {
                        errors.push(format!("%{i}: uses %{x} before it is defined"));
                    }
                }
                Instr::Random {
                    dist,
                    dtype,
                    seed,
                    offset,
                    index,
                } => {
                    if !dist.draws(*dtype) {
                        errors.push(format!("%{i}: draws {} as {dtype}", dist.name()));
                    }
                    expect(&mut errors, i, *seed, Some(DType::I64));
                    expect(&mut errors, i, *offset, Some(DType::I64));
                    if index.strides.len() != n {
                        errors.push(format!(
                            "%{i}: index has {} strides for rank {n}",
                            index.strides.len()
                        ));
                    }
                }
                Instr::Store { arg, index, x } => {
                    check_index(&mut errors, i, *arg, index);
                    if let Some(a) = self.args.get(*arg) {
                        if a.access == Access::Read {
                            errors.push(format!("%{i}: stores to read-only argument {arg}"));
                        }
                        expect(&mut errors, i, *x, Some(a.dtype));
                    }
                }
            }
        }
        if (reduces > 0) != (self.reduce_axes > 0) {
            errors.push("reduce_axes and Reduce instructions disagree".to_string());
        }
        self.verify_outputs(&mut errors);
        errors
    }

    /// Outputs follow the reads, there is at least one, each is stored, and no two share
    /// memory (two updates of the same source would both take its buffer).
    fn verify_outputs(&self, errors: &mut Vec<String>) {
        let outputs = self.outputs();
        if outputs.is_empty() {
            errors.push("kernel has no output argument".to_string());
        }
        let mut sources = vec![];
        for a in outputs {
            match self.args[a].access {
                Access::Read => errors.push(format!(
                    "argument {a} is read-only but follows an output (reads come first)"
                )),
                Access::Write => {}
                Access::Update { from } => {
                    if from >= self.read_args() {
                        errors.push(format!(
                            "argument {a} updates argument {from}, which is not a read argument"
                        ));
                    } else if self.args[from].dtype != self.args[a].dtype {
                        errors.push(format!(
                            "argument {a} updates argument {from} of another dtype"
                        ));
                    }
                    if sources.contains(&from) {
                        errors.push(format!(
                            "argument {a} aliases another output: both update argument {from}"
                        ));
                    }
                    sources.push(from);
                }
            }
            let stored = self
                .body
                .iter()
                .any(|i| matches!(i, Instr::Store { arg, .. } if *arg == a));
            if !stored {
                errors.push(format!("output argument {a} is never stored"));
            }
        }
    }

    /// Stable text form (`docs/ir.md`).
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "kernel {} space {} reduce {}",
            self.name,
            crate::view::fmt_list(&self.shape),
            self.reduce_axes
        );
        for (i, a) in self.args.iter().enumerate() {
            let access = match a.access {
                Access::Read => "read".to_string(),
                Access::Write => "write".to_string(),
                Access::Update { from } => format!("update from a{from}"),
            };
            let _ = writeln!(s, "  a{i}: {}[{}] {access}", a.dtype, a.len);
        }
        let types = self.value_dtypes();
        for (i, instr) in self.body.iter().enumerate() {
            let ty = types[i].map(|t| format!(" : {t}")).unwrap_or_default();
            let text = match instr {
                Instr::Load { arg, index } => format!("load a{arg}{}", fmt_index(index)),
                Instr::Const { value, dtype } => format!("const {value} {dtype}"),
                Instr::Unary { op, x, .. } => format!("{} %{x}", op.name()),
                Instr::Binary { op, a, b, .. } => format!("{} %{a}, %{b}", op.name()),
                Instr::Where { cond, a, b } => format!("where %{cond}, %{a}, %{b}"),
                Instr::Cast { x, to } => format!("cast %{x} to {to}"),
                Instr::Reduce { op, x } => format!("reduce_{} %{x}", op.name()),
                Instr::Store { arg, index, x } => format!("store a{arg}{}, %{x}", fmt_index(index)),
                Instr::Random {
                    dist,
                    dtype,
                    seed,
                    offset,
                    index,
                } => format!(
                    "random_{} {dtype} %{seed}, %{offset}{}",
                    dist.name(),
                    fmt_index(index)
                ),
            };
            let _ = writeln!(s, "  %{i} = {text}{ty}");
        }
        s
    }
}

/// A call of a library routine: what it reads (dtype and view per input) and writes.
#[derive(Clone, Debug, PartialEq)]
pub struct LibraryCall {
    pub op: LibraryOp,
    pub inputs: Vec<(DType, View)>,
    pub dtype: DType,
    pub len: usize,
    pub out: View,
}

impl LibraryCall {
    pub fn to_text(&self) -> String {
        let ins: Vec<String> = self
            .inputs
            .iter()
            .enumerate()
            .map(|(i, (d, v))| format!("a{i}: {d}{v}"))
            .collect();
        format!(
            "library {} ({}) -> {}[{}] out {}\n",
            self.op.name(),
            ins.join(", "),
            self.dtype,
            self.len,
            self.out
        )
    }
}

/// What one schedule step runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Work {
    Kernel(Kernel),
    Library(LibraryCall),
}

impl Work {
    pub fn name(&self) -> String {
        match self {
            Work::Kernel(k) => k.name.clone(),
            Work::Library(c) => c.op.name(),
        }
    }
    pub fn to_text(&self) -> String {
        match self {
            Work::Kernel(k) => k.to_text(),
            Work::Library(c) => c.to_text(),
        }
    }
}

fn fmt_index(index: &Index) -> String {
    format!(
        "[{}+{}]",
        index
            .strides
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(","),
        index.offset
    )
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel over `shape` that copies argument 0 into argument 1 through `out` strides.
    fn copy(shape: &[usize], out: Vec<isize>, offset: isize, len: usize) -> Kernel {
        let n = shape.len();
        Kernel {
            name: "copy".into(),
            shape: shape.to_vec(),
            reduce_axes: 0,
            args: vec![
                Arg {
                    dtype: DType::F32,
                    len: shape.iter().product(),
                    access: Access::Read,
                },
                Arg {
                    dtype: DType::F32,
                    len,
                    access: Access::Write,
                },
            ],
            body: vec![
                Instr::Load {
                    arg: 0,
                    index: Index {
                        strides: vec![0; n],
                        offset: 0,
                    },
                },
                Instr::Store {
                    arg: 1,
                    index: Index {
                        strides: out,
                        offset,
                    },
                    x: 0,
                },
            ],
        }
    }

    #[test]
    fn overwrites_needs_a_dense_store() {
        assert!(copy(&[4, 3], vec![3, 1], 0, 12).overwrites(1));
        assert!(
            copy(&[4, 3], vec![1, 4], 0, 12).overwrites(1),
            "any dim order"
        );
        assert!(copy(&[4, 1, 3], vec![3, 7, 1], 0, 12).overwrites(1));
        assert!(copy(&[4, 3], vec![1, 0], 0, 4).overwrites(1), "repeats");
        assert!(!copy(&[4, 3], vec![4, 1], 0, 16).overwrites(1), "a gap");
        assert!(!copy(&[4, 3], vec![3, 1], 1, 13).overwrites(1), "an offset");
        assert!(!copy(&[2, 3], vec![3, 1], 0, 12).overwrites(1), "too short");
        assert!(copy(&[], vec![], 0, 1).overwrites(1));
        assert!(!copy(&[0, 3], vec![3, 1], 0, 0).overwrites(1));
    }

    /// A kernel over `shape` (its last `reduce_axes` dims reduced) loading argument 0 at
    /// `load` strides and storing into argument 1 at `store` strides.
    fn load_store(shape: &[usize], reduce_axes: usize, load: &[isize], store: &[isize]) -> Kernel {
        let arg = |access| Arg {
            dtype: DType::F32,
            len: shape.iter().product(),
            access,
        };
        let index = |strides: &[isize]| Index {
            strides: strides.to_vec(),
            offset: 0,
        };
        Kernel {
            name: "load_store".into(),
            shape: shape.to_vec(),
            reduce_axes,
            args: vec![arg(Access::Read), arg(Access::Write)],
            body: vec![
                Instr::Load {
                    arg: 0,
                    index: index(load),
                },
                Instr::Store {
                    arg: 1,
                    index: index(store),
                    x: 0,
                },
            ],
        }
    }

    /// The shape, reduced dims and load and store strides after `merge_dims`.
    fn merged(k: Kernel) -> (Vec<usize>, usize, Vec<isize>, Vec<isize>) {
        let mut k = k;
        k.merge_dims();
        let strides = |i: usize| k.body[i].index().expect("an access").strides.clone();
        (k.shape.clone(), k.reduce_axes, strides(0), strides(1))
    }

    #[test]
    fn merge_dims_joins_the_dims_every_access_walks_as_one() {
        // `x.permute(0, 2, 3, 1).contiguous()` of [32, 64, 56, 56]: H and W walk as one.
        let permute = load_store(
            &[32, 56, 56, 64],
            0,
            &[200704, 56, 1, 3136],
            &[200704, 3584, 64, 1],
        );
        assert_eq!(
            merged(permute),
            (
                vec![32, 3136, 64],
                0,
                vec![200704, 1, 3136],
                vec![200704, 64, 1]
            )
        );
        let dense = load_store(&[2, 4, 3], 0, &[12, 3, 1], &[12, 3, 1]);
        assert_eq!(
            merged(dense),
            (vec![2, 12], 0, vec![12, 1], vec![12, 1]),
            "two dims stay"
        );
        let transposed = load_store(&[4, 3], 0, &[1, 4], &[3, 1]);
        assert_eq!(
            merged(transposed),
            (vec![4, 3], 0, vec![1, 4], vec![3, 1]),
            "a transpose keeps both dims"
        );
        let ones = load_store(&[2, 4, 1, 3], 0, &[12, 3, 0, 1], &[12, 3, 7, 1]);
        assert_eq!(
            merged(ones),
            (vec![2, 12], 0, vec![12, 1], vec![12, 1]),
            "a dim of one position joins whatever its stride"
        );
        let broadcast = load_store(&[4, 3], 0, &[0, 1], &[3, 1]);
        assert_eq!(
            merged(broadcast),
            (vec![4, 3], 0, vec![0, 1], vec![3, 1]),
            "a row read again for every row"
        );
        // `x.sum((2, 3))` of a contiguous [2, 3, 4, 5]: kept dims join, reduced dims join,
        // never a kept dim with a reduced one.
        let sum = load_store(&[2, 3, 4, 5], 2, &[60, 20, 5, 1], &[3, 1, 0, 0]);
        assert_eq!(merged(sum), (vec![6, 20], 1, vec![20, 1], vec![1, 0]));
        let empty = load_store(&[0, 3], 0, &[3, 1], &[3, 1]);
        assert_eq!(merged(empty), (vec![0, 3], 0, vec![3, 1], vec![3, 1]));
    }

    /// Over an empty reduced dim a store of the row's result stays row-level (the identity is
    /// written), but a store that moves along that dim never runs, whatever its value.
    #[test]
    fn stores_along_an_empty_reduced_dim_are_element_level() {
        let store = |strides: Vec<isize>| Instr::Store {
            arg: 0,
            index: Index { strides, offset: 0 },
            x: 1,
        };
        let k = Kernel {
            name: "empty_row".into(),
            shape: vec![3, 0],
            reduce_axes: 1,
            args: vec![Arg {
                dtype: DType::F32,
                len: 3,
                access: Access::Write,
            }],
            body: vec![
                Instr::Const {
                    value: Scalar::Float(0.0),
                    dtype: DType::F32,
                },
                Instr::Reduce {
                    op: ReduceOp::Sum,
                    x: 0,
                },
                store(vec![1, 0]),
                store(vec![0, 1]),
            ],
        };
        assert_eq!(
            k.levels(),
            [Level::Row, Level::Row, Level::Row, Level::Element]
        );
    }

    /// Over an empty reduced dim, a row-shaped operand of what follows the reduction is still
    /// loaded once per row (found by smelt fuzz: `prod(empty).masked_fill_(mask, -1)` and a
    /// `where` after an empty sum left their output unwritten), while a load of the empty
    /// input itself never runs, even where its view has no stride on the empty dim (it would
    /// read outside its buffer: `logsumexp` of an empty [2, 0] crashed the cpu backend).
    #[test]
    fn row_operands_over_an_empty_reduced_dim_are_row_level() {
        let arg = |len, access| Arg {
            dtype: DType::F32,
            len,
            access,
        };
        let index = |strides: Vec<isize>| Index { strides, offset: 0 };
        let k = Kernel {
            name: "empty_row_epilogue".into(),
            shape: vec![2, 0],
            reduce_axes: 1,
            args: vec![
                arg(2, Access::Read),
                arg(0, Access::Read),
                arg(2, Access::Write),
            ],
            body: vec![
                Instr::Load {
                    arg: 0,
                    index: index(vec![1, 0]),
                },
                Instr::Load {
                    arg: 1,
                    index: index(vec![1, 0]),
                },
                Instr::Load {
                    arg: 1,
                    index: index(vec![1, 1]),
                },
                Instr::Reduce {
                    op: ReduceOp::Sum,
                    x: 1,
                },
                Instr::Binary {
                    op: BinaryOp::Add,
                    a: 0,
                    b: 3,
                    compute: DType::F32,
                },
                Instr::Store {
                    arg: 2,
                    index: index(vec![1, 0]),
                    x: 4,
                },
            ],
        };
        assert_eq!(
            k.levels(),
            [
                Level::Row,
                Level::Element,
                Level::Element,
                Level::Row,
                Level::Row,
                Level::Row
            ]
        );
    }

    /// The sign rules of [`Kernel::nonnegative`]: squares, `exp`, `|x|` and what sums,
    /// multiplies or selects them are never negative; a load, a difference, a quotient, an
    /// odd power and a negative constant may be.
    #[test]
    fn nonnegative_follows_squares_and_exponentials() {
        let f = DType::F32;
        let un = |op, x| Instr::Unary { op, x, compute: f };
        let bin = |op, a, b| Instr::Binary {
            op,
            a,
            b,
            compute: f,
        };
        let konst = |v: f64| Instr::Const {
            value: Scalar::Float(v),
            dtype: f,
        };
        let k = Kernel {
            name: "signs".into(),
            shape: vec![4],
            reduce_axes: 0,
            args: vec![Arg {
                dtype: f,
                len: 4,
                access: Access::Read,
            }],
            body: vec![
                Instr::Load {
                    arg: 0,
                    index: Index {
                        strides: vec![1],
                        offset: 0,
                    },
                },
                konst(2.0),
                konst(3.0),
                konst(-1.0),
                bin(BinaryOp::Pow, 0, 1),
                bin(BinaryOp::Pow, 0, 2),
                bin(BinaryOp::Mul, 0, 0),
                un(UnaryOp::Exp, 0),
                bin(BinaryOp::Add, 4, 7),
                bin(BinaryOp::Sub, 4, 7),
                bin(BinaryOp::Div, 4, 7),
                bin(BinaryOp::Maximum, 0, 1),
                bin(BinaryOp::Mul, 0, 7),
                Instr::Where {
                    cond: 0,
                    a: 6,
                    b: 8,
                },
                Instr::Where {
                    cond: 0,
                    a: 6,
                    b: 3,
                },
                bin(BinaryOp::Pow, 7, 2),
                un(UnaryOp::Abs, 9),
                un(UnaryOp::Tanh, 7),
            ],
        };
        let want = [
            false, true, true, false, true, false, true, true, true, false, false, true, false,
            true, false, true, true, false,
        ];
        assert_eq!(k.nonnegative(), want);
    }
}
