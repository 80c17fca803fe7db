//! The short-lived half of the cranelift backend: renders one kernel as one function with one
//! `match` over kernel IR instructions, driving loops and reduction passes exactly as the
//! reference interpreter does (row-level instructions once per kept point, one pass over the
//! reduced dims per reduction, a final pass for element-level stores).
//!
//! Values live in registers by dtype: f32/f16/bf16 as `f32` (f16 and bf16 values rounded to
//! their dtype after every op), f64 as `f64`, integers at their width, bool as `i8` 0/1. Float
//! reductions accumulate in f64 and integer ones in wrapping i64, as the interpreter does, so
//! results match it bit for bit for a row walked in order. In an elementwise SIMD loop the
//! kernel's values are 128-bit vectors of its one register dtype (`f32x4`, `f64x2`, `i32x4`,
//! `i64x2`, [`Vectors`]; f16 and bf16 share f32's lanes, `halves.rs`) and bools are lane masks
//! of the same lane width. A kernel of several of those dtypes (type promotion, casts) runs
//! in SIMD too, each value a vector of its own dtype, four elements a step when all are 32
//! bits wide and two otherwise ([`Translator::mixed_lanes`]). Reduction passes run on `f32x4`.

mod columns;
mod halves;
mod idioms;
mod random;
mod rows;
mod scalar;
mod tiles;

pub(crate) use columns::{column_block_rows, columns};
pub(crate) use rows::{Reread, Stash, reread_plan, stash_plan};
pub use tiles::is_transposing_load;

use super::helpers::{binary_code, unary_code};
use super::inline_math;
use super::jit::Unsupported;
use super::math::{self, Fallback};
use super::prefetch;
use super::stream;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    BlockArg, ConstantData, Endianness, FuncRef, InstBuilder, MemFlagsData, StackSlot,
    StackSlotData, StackSlotKind, Type, Value, types,
};
use cranelift_codegen::isa::TargetFrontendConfig;
use cranelift_frontend::{FunctionBuilder, Variable};
use smelt_ir::kernel::{Access, Index, Instr, Kernel, Level};
use smelt_ir::scalar::round_float;
use smelt_ir::scalar_ops::reduce_identity;
use smelt_ir::{BinaryOp, DType, REAL_KERNELS, ReduceOp, Scalar, UnaryOp};
use std::collections::HashMap;

type Result<T> = std::result::Result<T, Unsupported>;

/// Lanes of an f32 SIMD value (the reduction passes, column and tiled walks).
const LANES: i64 = 4;
/// Vectors per trip of an unrolled elementwise SIMD loop: two, so the loop pays its
/// bookkeeping once per two vectors.
const ROW_VECTORS: i64 = 2;
/// Elements per trip of a SIMD pass over a reduction's row: four vectors, so a max or min
/// keeps four f32x4 accumulators in flight and a sum adds four vectors in f64 before its one
/// loop-carried add, enough to cover the add's latency (with two vectors a trip, a row pass
/// waited on its accumulators).
const PASS_LANES: i64 = 16;
/// The helpers as callable references inside the function being built (order of `HELPERS`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Helpers {
    unary_f64: FuncRef,
    binary_f64: FuncRef,
    unary_i64: FuncRef,
    binary_i64: FuncRef,
    random: FuncRef,
}

impl Helpers {
    pub(crate) fn from_refs(r: &[FuncRef]) -> Helpers {
        Helpers {
            unary_f64: r[0],
            binary_f64: r[1],
            unary_i64: r[2],
            binary_i64: r[3],
            random: r[4],
        }
    }
}

fn unsupported<T>(why: impl Into<String>) -> Result<T> {
    Err(Unsupported(why.into()))
}

/// The 128-bit SIMD form of an elementwise kernel's values: f32x4, f64x2, i32x4 or i64x2,
/// with bools as lane masks of the same lane width (all ones for true, as compares give them).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Vectors {
    /// The vector type.
    ty: Type,
}

impl Vectors {
    /// The vector form of `dtype` values, if SIMD loops support it.
    fn of(dtype: DType) -> Option<Vectors> {
        let ty = match dtype {
            DType::F32 => types::F32X4,
            DType::F64 => types::F64X2,
            DType::I32 => types::I32X4,
            DType::I64 => types::I64X2,
            DType::F16 | DType::BF16 | DType::I16 | DType::I8 | DType::U8 | DType::Bool => {
                return None;
            }
            DType::C64 | DType::C128 => panic!("{REAL_KERNELS}"),
        };
        Some(Vectors { ty })
    }

    fn lanes(self) -> i64 {
        i64::from(self.ty.lane_count())
    }

    /// The lane masks compares produce: the integer vector of the same lane width.
    fn mask(self) -> Type {
        self.ty.as_int()
    }

    /// Whether `op` computed in `dtype` has a vector form worth running: every binary op
    /// (division-like ops and integer pow call their helper once per lane) but atan2 over
    /// integers and the i64 product ([`Vectors::slow_product`]).
    fn has_binary(dtype: DType, op: BinaryOp) -> bool {
        dtype.is_float()
            || !(op == BinaryOp::Atan2 || (op == BinaryOp::Mul && Self::slow_product(dtype)))
    }

    /// Whether products of `dtype` stay scalar: an i64x2 multiply is `vpmullq`, three µops
    /// with a 15-cycle latency on Intel cores (and a longer emulation without AVX-512DQ). On
    /// this project's Xeon the fused `(relu(a·b + c)·2 − a).maximum(b)` in i64 ran 1.3–1.8×
    /// slower in i64x2 than in scalar code (`cargo bench --bench workloads -- dtypes`).
    fn slow_product(dtype: DType) -> bool {
        dtype == DType::I64
    }

    /// Whether `op` over bools is a bit operation on lane masks (and, or, xor, equality).
    fn has_mask_op(op: BinaryOp) -> bool {
        matches!(
            op,
            BinaryOp::LogicalAnd
                | BinaryOp::BitAnd
                | BinaryOp::Mul
                | BinaryOp::Minimum
                | BinaryOp::LogicalOr
                | BinaryOp::BitOr
                | BinaryOp::Add
                | BinaryOp::Maximum
                | BinaryOp::Ne
                | BinaryOp::LogicalXor
                | BinaryOp::BitXor
                | BinaryOp::Sub
                | BinaryOp::Eq
        )
    }
}

/// Whether `dtype` is held in registers as another (f16 and bf16 as f32): loaded as bits and
/// converted, converted back to bits to store.
fn is_half(dtype: DType) -> bool {
    register_dtype(dtype) != dtype
}

/// The dtype whose registers hold `dtype`'s values: its compute dtype (f16 and bf16 in f32).
fn register_dtype(dtype: DType) -> DType {
    dtype.compute_dtype()
}

/// The register type of a scalar value of `dtype`.
fn ty(dtype: DType) -> Type {
    match dtype {
        DType::F16 | DType::BF16 | DType::F32 => types::F32,
        DType::F64 => types::F64,
        DType::I64 => types::I64,
        DType::I32 => types::I32,
        DType::I16 => types::I16,
        DType::I8 | DType::U8 | DType::Bool => types::I8,
        DType::C64 | DType::C128 => panic!("{REAL_KERNELS}"),
    }
}

/// Per instruction of `k`: whether it is a bf16 load whose every reader quiets a signaling NaN
/// itself: adds, subtracts, multiplies or divides it as a float, sums it (in f64 lanes, whose
/// widening quiets, from a zero that the first add meets), or widens it to f32 (the same
/// register, no instruction) for readers that all quiet in turn (layernorm's `x.float()` read
/// by its mean and its centring). Such arithmetic gives the bits quieting on the load would
/// (x86 returns the first NaN operand, quieted, whether or not it was quiet before, and a bf16
/// result rounds, which quiets again), so the load widens with a shift alone instead of the
/// select [`Translator::bf16_bits_to_f32`] adds. A load that reaches a store, another cast, a
/// comparison, a max or min, or a math routine keeps the select.
fn quieted_by_use(k: &Kernel) -> Vec<bool> {
    let n = k.body.len();
    let dtypes = k.value_dtypes();
    let (mut read, mut other) = (vec![false; n], vec![false; n]);
    // Readers come after what they read: in reverse, a cast's own readers are all seen first.
    for (i, instr) in k.body.iter().enumerate().rev() {
        let quiets = match instr {
            Instr::Binary {
                op: BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div,
                compute,
                ..
            } => compute.is_float(),
            Instr::Reduce {
                op: ReduceOp::Sum,
                x,
            } => dtypes[*x].is_some_and(|d| d.is_float()),
            Instr::Cast { x, to: DType::F32 } => {
                dtypes[*x] == Some(DType::BF16) && read[i] && !other[i]
            }
            Instr::Load { .. }
            | Instr::Store { .. }
            | Instr::Const { .. }
            | Instr::Unary { .. }
            | Instr::Binary { .. }
            | Instr::Where { .. }
            | Instr::Cast { .. }
            | Instr::Reduce { .. }
            | Instr::Random { .. } => false,
        };
        for x in instr.operands() {
            read[x] = true;
            other[x] |= !quiets;
        }
    }
    let bf16_load =
        |i: &Instr| matches!(i, Instr::Load { arg, .. } if k.args[*arg].dtype == DType::BF16);
    (0..n)
        .map(|i| bf16_load(&k.body[i]) && read[i] && !other[i])
        .collect()
}

/// Per instruction of `k`: whether it is a load whose every reader is a random draw reading it
/// as its seed or offset. Such a load is one int64 of the generator's state: it stays a scalar
/// in SIMD code and does not choose the lanes.
fn random_state_loads(k: &Kernel) -> Vec<bool> {
    let mut state = vec![false; k.body.len()];
    let mut other = vec![false; k.body.len()];
    for instr in &k.body {
        match instr {
            Instr::Random { seed, offset, .. } => {
                state[*seed] = true;
                state[*offset] = true;
            }
            Instr::Load { .. }
            | Instr::Store { .. }
            | Instr::Const { .. }
            | Instr::Unary { .. }
            | Instr::Binary { .. }
            | Instr::Where { .. }
            | Instr::Cast { .. }
            | Instr::Reduce { .. } => {
                for x in instr.operands() {
                    other[x] = true;
                }
            }
        }
    }
    k.body
        .iter()
        .enumerate()
        .map(|(i, instr)| matches!(instr, Instr::Load { .. }) && state[i] && !other[i])
        .collect()
}

fn sole_reader(k: &Kernel, i: usize) -> Option<usize> {
    let mut readers = (0..k.body.len()).filter(|&j| k.body[j].operands().contains(&i));
    readers.next().filter(|_| readers.next().is_none())
}

fn is_signed(dtype: DType) -> bool {
    matches!(dtype, DType::I8 | DType::I16 | DType::I32 | DType::I64)
}

fn mem() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

/// The flags of a bitcast between vector types of different lanes: little-endian lane order,
/// so lane 0 is the lowest bytes whatever the host.
fn little() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

/// Renders one kernel.
pub(crate) struct Translator<'a, 'f> {
    b: FunctionBuilder<'f>,
    k: &'a Kernel,
    types: Vec<Option<DType>>,
    levels: Vec<Level>,
    h: Helpers,
    simd: bool,
    /// The 128-bit vector form of the kernel's values in SIMD loops ([`Vectors`]).
    v: Vectors,
    /// Whether the instructions being emitted now are in a SIMD loop body.
    vector: bool,
    /// Whether they are in the unrolled trip of [`Self::inner_vector`] (all
    /// [`PASS_LANES`] / [`LANES`] vectors of the trip, in order), not its one-vector loop.
    in_trip: bool,
    bufs: Vec<Value>,
    sizes: Vec<Value>,
    /// Per instruction with an index: its strides and offset.
    index: Vec<Option<(Vec<Value>, Value)>>,
    begin: Value,
    end: Value,
    zero: Value,
    /// See [`stash_plan`].
    stash: Option<Stash>,
    /// An instruction `eval` leaves alone because its value was loaded instead (the stash).
    skip: Option<usize>,
    /// See [`reread_plan`].
    reread: Option<Reread>,
    /// The scratch row the reread value waits in, after the stash's row.
    reread_row: Option<Value>,
    /// In a pass that reads the reread value back: its instruction, which `eval` leaves alone.
    rereading: Option<usize>,
    /// Per indexed instruction, while a row runs: the byte address of its index at the
    /// row's outer dims (`< bases_level`) and offset, computed once per row ([`Self::set_bases`]).
    bases: Vec<Option<Value>>,
    bases_level: usize,
    /// Per load, in the vector step being emitted: its value when it was read already, as a
    /// row of a 4×4 block read as columns and transposed ([`Self::quad`],
    /// [`Self::line_block`]).
    given: Vec<Option<Value>>,
    /// Per transposing load, the stack slot a line block keeps its transposed rows in
    /// ([`Self::line_block`]), made at its first use.
    block_slots: Vec<Option<StackSlot>>,
    /// In a pass over a row: the element-level instructions the pass needs
    /// (`Kernel::element_cone`); the others are not emitted.
    live: Option<Vec<bool>>,
    /// The dim a SIMD value's lanes run along: the innermost, or in a column reduction
    /// ([`Translator::columns`]) the innermost kept dim.
    lane_dim: usize,
    /// Per instruction: a load only random draws read, as their seed or offset (scalars in
    /// every kind of loop, [`random_state_loads`]).
    random_state: Vec<bool>,
    /// Per instruction: a bf16 load only quieting arithmetic reads ([`quieted_by_use`]).
    quieted: Vec<bool>,
    /// Whether a reduction kernel's passes run on f32x4 along the reduced dim
    /// ([`Translator::vectorizable_rows`]).
    row_simd: bool,
    /// While a SIMD pass over a row runs after the row's first pass: per streamed input, the
    /// byte address of the next row's start and the element size. Each trip of the pass loads
    /// one byte of the next row at its own offset, so the next row's cache lines are in flight
    /// while this row computes from cache (see [`Self::next_row_touches`]).
    touches: Option<Vec<(Value, i64)>>,
    /// Whether streamed loads prefetch [`prefetch::ahead`] bytes ahead (`prefetch.rs`).
    prefetch: bool,
    /// Set while the loads of a SIMD trip's first vector are emitted: each contiguous one
    /// prefetches then, once a trip.
    prefetch_here: bool,
    /// Whether a reduction kernel runs in columns ([`Translator::columns`]).
    column_mode: bool,
    /// For an elementwise kernel whose values are of several register dtypes
    /// ([`Translator::mixed_lanes`]): the elements per SIMD step, 4 or 2. Each value is then
    /// a vector of its own dtype ([`Translator::vty`]).
    mixed: Option<i64>,
    /// Per instruction: emitted by itself, absorbed into its reader, or the head of an idiom
    /// ([`idioms::idioms`]).
    idioms: Vec<idioms::Idiom>,
    /// The math routines' vector constants, made once before each SIMD loop nest.
    consts: math::Consts,
    /// Whether full f32x4 output stores are streaming stores (`stream.rs`; the kernel's
    /// streaming variant). The stash never streams: it is stored on its own (`stash_store`).
    streaming: bool,
    /// In a streaming variant with a stash, or where the output cannot hold the stash: the
    /// scratch row that holds it instead (`scratch_row`).
    scratch: Option<Value>,
    /// Each f32 value [`Translator::bf16_by_shift`] made, with the zero-extended bf16 bits it
    /// was shifted from: a store takes those bits back (their def dominates the value's)
    /// instead of shifting down again.
    bf16_bits: HashMap<Value, Value>,
}
impl<'a, 'f> Translator<'a, 'f> {
    pub(crate) fn new(
        mut b: FunctionBuilder<'f>,
        k: &'a Kernel,
        h: Helpers,
        simd: bool,
        prefetch: bool,
        streaming: bool,
    ) -> Self {
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let p = b.block_params(entry).to_vec();
        let (bufs_ptr, sizes_ptr, strides_ptr) = (p[0], p[1], p[2]);
        let rank = k.shape.len();
        let flags = MemFlagsData::trusted().with_readonly();
        let bufs = (0..k.args.len())
            .map(|i| b.ins().load(types::I64, flags, bufs_ptr, (8 * i) as i32))
            .collect();
        // A streaming variant stashes in a scratch row of its own, as does a kernel whose
        // output cannot hold the stash; its address follows the arguments' (`rows.rs`,
        // `stash_address`).
        // The reread row follows the stash's (reserved whenever there is a stash, used or not:
        // `scratch_row`).
        let stash = stash_plan(k);
        let reread = reread_plan(k);
        let stash_in_scratch = stash.is_some_and(|st| streaming || st.in_scratch);
        let scratch_base = (stash_in_scratch || reread.is_some()).then(|| {
            let at = (8 * k.args.len()) as i32;
            b.ins().load(types::I64, flags, bufs_ptr, at)
        });
        let scratch = scratch_base.filter(|_| stash_in_scratch);
        let sizes: Vec<Value> = (0..rank)
            .map(|d| b.ins().load(types::I64, flags, sizes_ptr, (8 * d) as i32))
            .collect();
        let reread_row = reread.and_then(|_| {
            let base = scratch_base?;
            Some(match stash {
                Some(st) => {
                    let row = *sizes.last()?;
                    let shift = st.dtype.size().trailing_zeros() as i64;
                    let bytes = b.ins().ishl_imm_s(row, shift);
                    b.ins().iadd(base, bytes)
                }
                None => base,
            })
        });
        let mut slot = 0;
        let mut index = vec![];
        for instr in &k.body {
            index.push(instr.index().map(|_| {
                let base = slot * (rank + 1);
                slot += 1;
                let at = |b: &mut FunctionBuilder<'f>, j: usize| {
                    b.ins()
                        .load(types::I64, flags, strides_ptr, (8 * (base + j)) as i32)
                };
                let strides = (0..rank).map(|d| at(&mut b, d)).collect();
                let offset = at(&mut b, rank);
                (strides, offset)
            }));
        }
        let zero = b.ins().iconst(types::I64, 0);
        Translator {
            types: k.value_dtypes(),
            levels: k.levels(),
            b,
            k,
            h,
            simd,
            v: Vectors::of(DType::F32).expect("f32 has a vector form"),
            vector: false,
            in_trip: false,
            bufs,
            sizes,
            index,
            begin: p[3],
            end: p[4],
            zero,
            stash,
            scratch,
            skip: None,
            reread,
            reread_row,
            rereading: None,
            bases: vec![None; k.body.len()],
            bases_level: 0,
            given: vec![None; k.body.len()],
            block_slots: vec![None; k.body.len()],
            live: None,
            lane_dim: k.shape.len().saturating_sub(1),
            random_state: random_state_loads(k),
            quieted: quieted_by_use(k),
            row_simd: false,
            touches: None,
            prefetch,
            prefetch_here: false,
            column_mode: false,
            mixed: None,
            idioms: idioms::idioms(k),
            consts: math::Consts::new(entry),
            streaming,
            bf16_bits: HashMap::new(),
        }
    }

    /// Emits the whole function.
    pub(crate) fn translate(mut self, target: TargetFrontendConfig) -> Result<()> {
        if self.simd {
            self.row_simd = self.vectorizable_rows();
            self.column_mode = columns(self.k);
            let elementwise = self.elementwise_vectors();
            if let Some(v) = elementwise {
                self.v = v;
            } else {
                self.mixed = self.mixed_lanes();
            }
            if !(elementwise.is_some() || self.mixed.is_some() || self.row_simd || self.column_mode)
            {
                return unsupported("no SIMD form");
            }
        }
        let rank = self.k.shape.len();
        let mut point = vec![self.zero; rank];
        let mut vals = vec![None; self.k.body.len()];
        self.outer(0, &mut point, &mut vals)?;
        if self.streaming {
            // Streaming stores are weakly ordered: make them visible before returning.
            self.b.ins().fence();
        }
        self.b.ins().return_(&[]);
        self.b.seal_all_blocks();
        self.b.finalize(target);
        Ok(())
    }

    /// The vector form the innermost loop runs in, if it can run in SIMD: an elementwise
    /// kernel whose values are all of one dtype with a [`Vectors`] form, bools aside (lane
    /// masks, loaded and stored as bytes), whose loads and stores are contiguous or broadcast
    /// along the innermost dim.
    fn elementwise_vectors(&self) -> Option<Vectors> {
        if self.k.reduce_axes > 0 || self.k.shape.is_empty() {
            return None;
        }
        let dtype = self
            .types
            .iter()
            .zip(&self.random_state)
            .filter(|(_, state)| !**state)
            .find_map(|(t, _)| t.filter(|&t| t != DType::Bool))?;
        let lanes = register_dtype(dtype);
        let v = Vectors::of(lanes)?;
        (0..self.k.body.len())
            .all(|i| self.vector_instr(i, lanes))
            .then_some(v)
    }

    /// Whether instruction `i` has a vector form in a loop along the innermost dim whose
    /// values are held in `lanes` (f32, f64, i32 or i64; f16 and bf16 in f32's) or are bools.
    fn vector_instr(&self, i: usize, lanes: DType) -> bool {
        let fits = |d: DType| register_dtype(d) == lanes;
        let t = self.types[i];
        let is = |v: usize, d: DType| self.types[v] == Some(d);
        let fits_value = |v: usize| self.types[v].is_some_and(fits);
        // Float ops may read bools (as lane masks); integer ops read their own dtype only.
        let fits_or_bool = |v: usize| fits_value(v) || (lanes.is_float() && is(v, DType::Bool));
        let inner = |index: &Index| index.strides.last().copied();
        match &self.k.body[i] {
            // A random draw's seed or offset: a scalar load.
            Instr::Load { .. } if self.random_state[i] => true,
            // A strided load gathers its lanes (bools only contiguous or broadcast); a strided
            // store has no vector form.
            Instr::Load { index, .. } => {
                t.is_some_and(fits)
                    || (t == Some(DType::Bool) && matches!(inner(index), Some(0 | 1)))
            }
            Instr::Store { index, x, .. } => {
                (fits_value(*x) || is(*x, DType::Bool)) && inner(index) == Some(1)
            }
            Instr::Const { dtype: c, .. } => fits(*c) || *c == DType::Bool,
            // Every unary op has one (f64 and integer transcendentals call their helper once
            // per lane); over bools, the ones that are bit operations on masks.
            Instr::Unary { x, compute, .. } if *compute == DType::Bool => is(*x, DType::Bool),
            Instr::Unary { op, x, compute } => {
                fits(*compute)
                    && fits_or_bool(*x)
                    && !(*op == UnaryOp::Square && Vectors::slow_product(lanes))
            }
            Instr::Binary { op, a, compute, .. } if *compute == DType::Bool => {
                is(*a, DType::Bool) && Vectors::has_mask_op(*op)
            }
            Instr::Binary { op, a, compute, .. } => {
                fits(*compute) && fits_or_bool(*a) && Vectors::has_binary(lanes, *op)
            }
            Instr::Where { a, .. } => fits_value(*a),
            // Casts between the lanes' dtypes (f16, bf16 and f32 in f32 lanes) and to or from
            // bool keep the lanes.
            Instr::Cast { x, to } => {
                (fits_value(*x) && (*to == DType::Bool || fits(*to)))
                    || (is(*x, DType::Bool) && fits(*to))
            }
            // Float draws run inline (f32, f16 and bf16 in f32 lanes, f64 in f64's); integer
            // bits call their helper from scalar code.
            instr @ Instr::Random { .. } => Self::random_has_vector_form(instr, lanes),
            Instr::Reduce { .. } => false,
        }
    }

    /// The elements per SIMD step of an elementwise kernel whose values are of several of
    /// f32 (f16 and bf16 held as f32), f64, i32, i64 and bool, if every instruction has a
    /// vector form there ([`Self::mixed_instr`]): four when every dtype is 32 bits wide, else
    /// two, where an f32 or i32 value fills the low half of its vector (loaded and stored 8
    /// bytes at a time, so nothing past the row is read). Every value is a vector of its own
    /// dtype ([`Self::vty`]); bool masks are converted to the width their user needs.
    fn mixed_lanes(&self) -> Option<i64> {
        if self.k.reduce_axes > 0 || self.k.shape.is_empty() {
            return None;
        }
        let wide = |d: DType| matches!(d, DType::F64 | DType::I64);
        if !(0..self.k.body.len()).all(|i| self.mixed_instr(i)) {
            return None;
        }
        let lanes = if self.types.iter().flatten().any(|&d| wide(d)) {
            2
        } else {
            4
        };
        Some(lanes)
    }

    /// Whether instruction `i` has a vector form in a mixed-dtype loop ([`Self::mixed_lanes`]):
    /// its values are of those dtypes, an op's operands are held as its compute dtype (or are
    /// bools, for a bool op), and a cast is between floats, from i32 or i64 to a float, between
    /// i32 and i64, or to or from bool. Casts from a float to an integer stay scalar (their
    /// out-of-range results follow the interpreter's i64 conversion, not the vector one).
    fn mixed_instr(&self, i: usize) -> bool {
        let lanes = |d: DType| {
            matches!(
                register_dtype(d),
                DType::F32 | DType::F64 | DType::I32 | DType::I64
            )
        };
        let held = |d: DType| lanes(d) || d == DType::Bool;
        let t = |v: usize| self.types[v];
        let fits =
            |v: usize, d: DType| t(v).is_some_and(|x| register_dtype(x) == register_dtype(d));
        let inner = |index: &Index| index.strides.last().copied();
        match &self.k.body[i] {
            Instr::Load { index, .. } => match t(i) {
                Some(DType::Bool) => matches!(inner(index), Some(0 | 1)),
                Some(d) => lanes(d),
                None => false,
            },
            Instr::Store { index, x, .. } => t(*x).is_some_and(held) && inner(index) == Some(1),
            Instr::Const { dtype, .. } => held(*dtype),
            Instr::Unary { x, compute, .. } if *compute == DType::Bool => {
                t(*x) == Some(DType::Bool)
            }
            Instr::Unary { op, x, compute } => {
                lanes(*compute)
                    && fits(*x, *compute)
                    && !(*op == UnaryOp::Square && Vectors::slow_product(register_dtype(*compute)))
            }
            Instr::Binary { op, a, b, compute } if *compute == DType::Bool => {
                t(*a) == Some(DType::Bool)
                    && t(*b) == Some(DType::Bool)
                    && Vectors::has_mask_op(*op)
            }
            Instr::Binary { op, a, b, compute } => {
                lanes(*compute)
                    && fits(*a, *compute)
                    && fits(*b, *compute)
                    && Vectors::has_binary(register_dtype(*compute), *op)
            }
            Instr::Where { cond, a, b } => {
                t(*cond) == Some(DType::Bool)
                    && t(*a).is_some_and(lanes)
                    && t(*a).is_some_and(|d| fits(*b, d))
            }
            Instr::Cast { x, to } => match t(*x) {
                Some(DType::Bool) => held(*to),
                Some(from) if *to == DType::Bool => lanes(from),
                Some(from) => {
                    lanes(from)
                        && lanes(*to)
                        && (to.is_float() || matches!(from, DType::I32 | DType::I64))
                }
                None => false,
            },
            // Mixed steps hold no random draw.
            Instr::Reduce { .. } | Instr::Random { .. } => false,
        }
    }

    /// The elements of a SIMD step: the kernel's lanes, or a mixed kernel's step.
    fn lanes(&self) -> i64 {
        self.mixed.unwrap_or(self.v.lanes())
    }

    /// Whether a SIMD step fills only the low half of vectors of type `vty` (f32 or i32 in a
    /// mixed step of two elements).
    fn half_step(&self, vty: Type) -> bool {
        self.lanes() < i64::from(vty.lane_count())
    }

    /// The vector type holding `dtype` values in a SIMD loop: the kernel's vectors (their
    /// masks for bools), or in a mixed kernel the dtype's own (bools as [`Self::mask_ty`]).
    fn vty(&self, dtype: DType) -> Type {
        match (self.mixed, dtype) {
            (None, DType::Bool) => self.v.mask(),
            (None, _) => self.v.ty,
            (Some(_), DType::Bool) => self.mask_ty(),
            (Some(_), d) => {
                Vectors::of(register_dtype(d))
                    .expect("mixed kernels hold f32, f64, i32 and i64 lanes")
                    .ty
            }
        }
    }

    /// The lane masks that bool loads and constants produce: the kernel's own, or in a mixed
    /// kernel i32x4 for four elements a step and i64x2 for two.
    fn mask_ty(&self) -> Type {
        match self.mixed {
            None => self.v.mask(),
            Some(4) => types::I32X4,
            Some(_) => types::I64X2,
        }
    }

    /// Lane masks `m` as the integer vector type `want` (i32x4 or i64x2): in a mixed kernel of
    /// two elements a step, the low two i32 lanes widened to i64 or the i64 lanes narrowed.
    fn mask_as(&mut self, m: Value, want: Type) -> Value {
        let have = self.b.func.dfg.value_type(m);
        if have == want {
            return m;
        }
        if have == types::I32X4 && want == types::I64X2 {
            self.b.ins().swiden_low(m)
        } else {
            self.low_words(m)
        }
    }

    /// The low 32 bits of each lane of an `i64x2`, as lanes 0 and 1 of an `i32x4` (and again
    /// as lanes 2 and 3).
    fn low_words(&mut self, x: Value) -> Value {
        let bytes = self.b.ins().bitcast(types::I8X16, little(), x);
        let picks: Vec<u8> = [0u8, 1, 2, 3, 8, 9, 10, 11].repeat(2);
        let picks = self.b.func.dfg.immediates.push(ConstantData::from(picks));
        let low = self.b.ins().shuffle(bytes, bytes, picks);
        self.b.ins().bitcast(types::I32X4, little(), low)
    }

    /// Whether a reduction kernel's passes over its rows can run on f32x4 along the innermost
    /// (reduced) dim: every element-level instruction has a vector form, the row-level values
    /// they read are f32, f16 or bf16 (splatted), and every reduction is a sum, max or min of
    /// such an element-level value. Sums then accumulate in f64 lanes (element `j` of a row's vector
    /// part into lane `j mod 4`, a trip of [`PASS_LANES`] at a time), combined in a fixed
    /// order, and the scalar tail last: the order depends only on the row length, never on
    /// threads.
    fn vectorizable_rows(&self) -> bool {
        if self.k.reduce_axes == 0 {
            return false;
        }
        let element = |v: usize| self.levels[v] == Level::Element;
        // f16 and bf16 values are held in f32 lanes too.
        let f32_lanes = |v: usize| self.types[v].map(register_dtype) == Some(DType::F32);
        let row_f32 = |v: usize| element(v) || f32_lanes(v);
        (0..self.k.body.len()).all(|i| {
            let instr = &self.k.body[i];
            if let Instr::Reduce { op, x } = instr {
                return (matches!(op, ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min)
                    && f32_lanes(i)
                    && element(*x))
                    || self.widened_sum(i).is_some();
            }
            if self.widened_by_sum(i) {
                return true;
            }
            if !element(i) {
                return true;
            }
            self.vector_instr(i, DType::F32)
                && match instr {
                    Instr::Unary { x, .. } | Instr::Cast { x, .. } | Instr::Store { x, .. } => {
                        row_f32(*x)
                    }
                    Instr::Binary { a, b, .. } => row_f32(*a) && row_f32(*b),
                    Instr::Where { cond, a, b } => element(*cond) && row_f32(*a) && row_f32(*b),
                    Instr::Load { .. }
                    | Instr::Const { .. }
                    | Instr::Reduce { .. }
                    | Instr::Random { .. } => true,
                }
        })
    }

    /// For an f64 sum of an element-level f32 value cast to f64 (a split full reduction's
    /// partial, `Kernel::split_full_reduction`): the f32 value. A SIMD pass sums its lanes
    /// in f64 lanes as it does for an f32 sum, and the result stays f64.
    fn widened_sum(&self, r: usize) -> Option<usize> {
        let Instr::Reduce {
            op: ReduceOp::Sum,
            x,
        } = self.k.body[r]
        else {
            return None;
        };
        match self.k.body[x] {
            Instr::Cast {
                x: y,
                to: DType::F64,
            } if self.types[y] == Some(DType::F32) && self.levels[y] == Level::Element => Some(y),
            Instr::Load { .. }
            | Instr::Store { .. }
            | Instr::Const { .. }
            | Instr::Unary { .. }
            | Instr::Binary { .. }
            | Instr::Where { .. }
            | Instr::Cast { .. }
            | Instr::Reduce { .. }
            | Instr::Random { .. } => None,
        }
    }

    /// Whether instruction `i` is the f32 → f64 cast that only a widened sum reads
    /// ([`Self::widened_sum`]): a SIMD pass never emits it.
    fn widened_by_sum(&self, i: usize) -> bool {
        sole_reader(self.k, i).is_some_and(|j| self.widened_sum(j).is_some())
    }

    /// The element-level stores of the kernel (a reduction kernel's final pass).
    fn element_stores(&self) -> Vec<usize> {
        self.k.element_stores(&self.levels)
    }

    /// Where whole steps of `step` (a power of two) from `start` toward `end` stop:
    /// `start + ((end - start) & !(step - 1))`.
    fn whole_steps(&mut self, start: Value, end: Value, step: i64) -> Value {
        let n = self.b.ins().isub(end, start);
        let whole = self.b.ins().band_imm_s(n, !(step - 1));
        self.b.ins().iadd(start, whole)
    }

    /// Makes the math routines' vector constants from here on in the current block, which
    /// enters a SIMD loop nest ([`math::Consts`]).
    fn home_consts(&mut self) {
        let here = self
            .b
            .current_block()
            .expect("invariant: the translator always emits into a block");
        self.consts.home(here);
    }

    /// A counted loop `start..end` by `step`; `body` gets the induction variable.
    fn for_loop(
        &mut self,
        start: Value,
        end: Value,
        step: i64,
        body: &mut dyn FnMut(&mut Self, Value) -> Result<()>,
    ) -> Result<()> {
        let header = self.b.create_block();
        self.b.append_block_param(header, types::I64);
        let inside = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(header, &[BlockArg::Value(start)]);
        self.b.switch_to_block(header);
        let i = self.b.block_params(header)[0];
        // `i + step <= end`, i.e. a whole step still fits.
        let last = self.b.ins().iadd_imm_s(i, step - 1);
        let more = self.b.ins().icmp(IntCC::SignedLessThan, last, end);
        self.b.ins().brif(more, inside, &[], exit, &[]);
        self.b.switch_to_block(inside);
        body(self, i)?;
        let next = self.b.ins().iadd_imm_s(i, step);
        self.b.ins().jump(header, &[BlockArg::Value(next)]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// Emits `body` to run only where `cond` is true. (No value `body` makes is used after
    /// it: the caller sets what it needs again.)
    fn when(&mut self, cond: Value, body: &mut dyn FnMut(&mut Self) -> Result<()>) -> Result<()> {
        let then = self.b.create_block();
        let done = self.b.create_block();
        self.b.ins().brif(cond, then, &[], done, &[]);
        self.b.switch_to_block(then);
        body(self)?;
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
        Ok(())
    }

    /// `vals`, each made opaque to the optimiser and computed here, once. Cranelift's
    /// elaborator places a pure value where it is first used, and its rewrites reassociate
    /// address arithmetic; in these kernels a value computed from the outer loop's index or
    /// from an earlier pass's accumulators (a row's base address, its max) was found
    /// recomputed inside every later inner loop. A value that went through memory is neither
    /// moved nor rewritten: each is bitcast to the same-width type of the other class, stored
    /// to a stack slot and loaded back as its own type (so no store-to-load forwarding sees
    /// through it). That costs a store and a load per value per row.
    fn pin(&mut self, vals: &[Value]) -> Vec<Value> {
        vals.iter().map(|v| self.opaque(*v)).collect()
    }

    fn opaque(&mut self, v: Value) -> Value {
        let t = self.b.func.dfg.value_type(v);
        let other = match t {
            types::I64 => types::F64,
            types::F64 => types::I64,
            types::I32 => types::F32,
            types::F32 => types::I32,
            _ => return v,
        };
        let slot =
            self.b
                .create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 8, 3));
        let as_other = self.b.ins().bitcast(other, MemFlagsData::new(), v);
        self.b.ins().stack_store(types::I64, as_other, slot, 0);
        self.b.ins().stack_load(types::I64, t, slot, 0)
    }

    /// Computes (and pins) each indexed instruction's byte address at `point`'s dims below
    /// `level` plus its offset; `address` then adds only the dims from `level` on (the inner
    /// loops' part: a shift and an add for a contiguous access).
    fn set_bases(&mut self, point: &[Value], level: usize) {
        let mut outer = point[..level].to_vec();
        outer.resize(point.len(), self.zero);
        self.bases = self.pinned_addresses(&outer);
        self.bases_level = level;
    }

    /// Every indexed instruction's byte address at `point` in full (no bases), pinned (see
    /// [`Self::pin`]); `None` for the others.
    fn pinned_addresses(&mut self, point: &[Value]) -> Vec<Option<Value>> {
        self.clear_bases();
        let mut at = vec![];
        let mut vals = vec![];
        for i in 0..self.k.body.len() {
            if let Some(arg) = self.k.body[i].arg() {
                vals.push(self.address(i, arg, point));
                at.push(i);
            }
        }
        let pinned = self.pin(&vals);
        let mut bases = vec![None; self.k.body.len()];
        for (i, v) in at.into_iter().zip(pinned) {
            bases[i] = Some(v);
        }
        bases
    }

    /// Returns to a row whose bases were set and saved earlier (`at`: those bases and the
    /// row's index at dim `d`), as the column and tile walks do, which interleave rows.
    fn enter_rows(&mut self, at: &(Vec<Option<Value>>, Value), point: &mut [Value], d: usize) {
        self.bases.clone_from(&at.0);
        point[d] = at.1;
    }

    /// Forgets the row bases (outside a row, addresses are computed in full).
    fn clear_bases(&mut self) {
        self.bases.iter_mut().for_each(|b| *b = None);
        self.bases_level = 0;
    }

    /// Loops over the kept dims from `d`, then runs the row program.
    fn outer(
        &mut self,
        d: usize,
        point: &mut Vec<Value>,
        vals: &mut [Option<Value>],
    ) -> Result<()> {
        let kept = self.k.shape.len() - self.k.reduce_axes;
        if d == kept {
            return self.row(point, vals);
        }
        let (start, end) = if d == 0 {
            (self.begin, self.end)
        } else {
            (self.zero, self.sizes[d])
        };
        if self.column_mode && d + 1 == kept {
            return self.column_loop(start, end, point, vals);
        }
        let rank = self.k.shape.len();
        if d + 2 == rank && self.tiled() {
            return self.tiles(start, end, point, vals);
        }
        if d + 1 == rank {
            self.set_bases(point, d);
            let done = self.innermost(start, end, point, vals);
            self.clear_bases();
            return done;
        }
        self.for_loop(start, end, 1, &mut |t, i| {
            point[d] = i;
            let mut v = vals.to_vec();
            t.outer(d + 1, point, &mut v)
        })
    }

    /// The innermost dim over `start..end`: whole vectors then a scalar tail in a SIMD kernel,
    /// else one element a trip.
    fn innermost(
        &mut self,
        start: Value,
        end: Value,
        point: &mut Vec<Value>,
        vals: &mut [Option<Value>],
    ) -> Result<()> {
        let d = self.k.shape.len() - 1;
        let split = if self.simd {
            // Two vectors a trip while they fit, then one, then scalars.
            self.home_consts();
            let lanes = self.lanes();
            let wide = self.whole_steps(start, end, ROW_VECTORS * lanes);
            let split = self.whole_steps(start, end, lanes);
            self.vector = true;
            self.for_loop(start, wide, ROW_VECTORS * lanes, &mut |t, i| {
                for u in 0..ROW_VECTORS {
                    point[d] = t.b.ins().iadd_imm_s(i, u * lanes);
                    let mut v = vals.to_vec();
                    t.prefetch_here = u == 0;
                    t.row(point, &mut v)?;
                    t.prefetch_here = false;
                }
                Ok(())
            })?;
            self.for_loop(wide, split, lanes, &mut |t, i| {
                point[d] = i;
                let mut v = vals.to_vec();
                t.row(point, &mut v)
            })?;
            self.vector = false;
            split
        } else {
            start
        };
        self.for_loop(split, end, 1, &mut |t, i| {
            point[d] = i;
            let mut v = vals.to_vec();
            t.row(point, &mut v)
        })
    }

    /// Loops over the reduced dims from `d`, running `body` at each point.
    fn inner(
        &mut self,
        d: usize,
        point: &mut Vec<Value>,
        body: &mut dyn FnMut(&mut Self, &mut Vec<Value>) -> Result<()>,
    ) -> Result<()> {
        if d == self.k.shape.len() {
            return body(self, point);
        }
        let (zero, end) = (self.zero, self.sizes[d]);
        self.for_loop(zero, end, 1, &mut |t, i| {
            point[d] = i;
            t.inner(d + 1, point, body)
        })
    }

    /// [`Self::inner`] with the innermost dim in f32x4 steps: [`PASS_LANES`] elements a trip
    /// (`vector` runs once per vector, told which one), then one vector, then scalar elements.
    fn inner_vector(
        &mut self,
        d: usize,
        point: &mut Vec<Value>,
        vector: &mut dyn FnMut(&mut Self, &mut Vec<Value>, usize) -> Result<()>,
        scalar: &mut dyn FnMut(&mut Self, &mut Vec<Value>) -> Result<()>,
    ) -> Result<()> {
        let last = self.k.shape.len() - 1;
        if d < last {
            let (zero, end) = (self.zero, self.sizes[d]);
            return self.for_loop(zero, end, 1, &mut |t, i| {
                point[d] = i;
                t.inner_vector(d + 1, point, vector, scalar)
            });
        }
        self.home_consts();
        let (zero, end) = (self.zero, self.sizes[d]);
        let wide = self.b.ins().band_imm_s(end, !(PASS_LANES - 1));
        let whole = self.b.ins().band_imm_s(end, !(LANES - 1));
        self.vector = true;
        self.for_loop(zero, wide, PASS_LANES, &mut |t, i| {
            t.touch_next_row(i);
            t.in_trip = true;
            for u in 0..(PASS_LANES / LANES) as usize {
                point[d] = t.b.ins().iadd_imm_s(i, u as i64 * LANES);
                t.prefetch_here = u == 0;
                vector(t, point, u)?;
                t.prefetch_here = false;
            }
            t.in_trip = false;
            Ok(())
        })?;
        self.for_loop(wide, whole, LANES, &mut |t, i| {
            point[d] = i;
            vector(t, point, 0)
        })?;
        self.vector = false;
        self.for_loop(whole, end, 1, &mut |t, i| {
            point[d] = i;
            scalar(t, point)
        })
    }

    /// Emits the instructions of `range` at `level` (reductions are the driver's).
    fn eval(
        &mut self,
        range: std::ops::Range<usize>,
        level: Level,
        point: &[Value],
        vals: &mut [Option<Value>],
    ) -> Result<()> {
        for i in range {
            if self.levels[i] != level
                || matches!(self.k.body[i], Instr::Reduce { .. })
                || self.skip == Some(i)
                || self.rereading == Some(i)
                || self.idioms[i] == idioms::Idiom::Absorbed
                || (level == Level::Element && self.live.as_ref().is_some_and(|live| !live[i]))
            {
                continue;
            }
            let v = |j: usize| vals[j].expect("invariant: SSA operands are computed first");
            match (self.idioms[i], &self.k.body[i]) {
                (idioms::Idiom::OnePlusTanh { u, minus, half_of }, _) => {
                    let (u, half_of) = (v(u), half_of.map(v));
                    let c = &mut self.consts;
                    vals[i] = Some(math::one_plus_tanh(&mut self.b, c, u, minus, half_of));
                    continue;
                }
                (idioms::Idiom::ExpAtMostZero, Instr::Unary { x, compute, .. }) => {
                    let e = math::exp_at_most_zero(&mut self.b, &mut self.consts, v(*x));
                    vals[i] = Some(self.round(*compute, e));
                    continue;
                }
                _ => {}
            }
            let r = match &self.k.body[i] {
                Instr::Load { arg, .. } => Some(self.load(i, *arg, point)?),
                Instr::Const { value, dtype } => Some(self.constant(*value, *dtype)),
                Instr::Unary { op, x, compute } => Some(self.unary(*op, v(*x), *compute)?),
                Instr::Binary { op, a, b, compute } => {
                    let exponent = if let Instr::Const { value, .. } = &self.k.body[*b] {
                        Some(value.as_f64())
                    } else {
                        None
                    };
                    Some(self.binary(*op, v(*a), v(*b), *compute, exponent)?)
                }
                Instr::Where { cond, a, b } => Some(self.select(v(*cond), v(*a), v(*b))),
                Instr::Cast { x, to } => {
                    let from = self.types[*x].expect("casts have an operand value");
                    Some(self.cast(v(*x), from, *to)?)
                }
                Instr::Reduce { .. } => unreachable!("skipped above"),
                Instr::Random {
                    dist,
                    dtype,
                    seed,
                    offset,
                    ..
                } => Some(self.random(i, *dist, *dtype, v(*seed), v(*offset), point)?),
                Instr::Store { arg, x, .. } => {
                    self.store(i, *arg, point, v(*x))?;
                    None
                }
            };
            vals[i] = r;
        }
        Ok(())
    }

    /// The byte address of instruction `i`'s index at `point`. The innermost stride's class (0,
    /// 1 or other) is part of the kernel's structure key, so a 0 or 1 there is folded in.
    fn address(&mut self, i: usize, arg: usize, point: &[Value]) -> Value {
        let (strides, offset) = self.index[i]
            .clone()
            .expect("invariant: loads and stores have an index");
        let inner = self.k.body[i]
            .index()
            .and_then(|index| index.strides.last().copied());
        let last = point.len().wrapping_sub(1);
        // In a column reduction the lane dim's stride class is part of the key too.
        let lane = (self.column_mode && self.lane_dim != last).then(|| {
            let index = self.k.body[i]
                .index()
                .expect("loads and stores have an index");
            (self.lane_dim, index.strides[self.lane_dim])
        });
        let known = |d: usize| match lane {
            Some((l, s)) if l == d => Some(s),
            Some(_) | None => (d == last).then_some(inner).flatten(),
        };
        let base = self.bases[i];
        let from = if base.is_some() { self.bases_level } else { 0 };
        // Outer dims first so loop-invariant parts hoist out of inner loops.
        let mut e = if base.is_some() { self.zero } else { offset };
        for (d, (p, s)) in point.iter().zip(strides).enumerate() {
            if d < from || *p == self.zero || known(d) == Some(0) {
                continue;
            }
            let t = if known(d) == Some(1) {
                *p
            } else {
                self.b.ins().imul(*p, s)
            };
            e = self.b.ins().iadd(e, t);
        }
        let size = self.k.args[arg].dtype.size() as i64;
        let bytes = self.b.ins().ishl_imm_s(e, size.trailing_zeros() as i64);
        self.b.ins().iadd(base.unwrap_or(self.bufs[arg]), bytes)
    }

    /// Whether instruction `i`'s index stays put along the dim SIMD lanes run along.
    fn inner_stride_is_zero(&self, i: usize) -> bool {
        self.k.body[i]
            .index()
            .is_some_and(|index| index.strides.get(self.lane_dim) == Some(&0))
    }

    fn load(&mut self, i: usize, arg: usize, point: &[Value]) -> Result<Value> {
        let addr = self.address(i, arg, point);
        let dtype = self.k.args[arg].dtype;
        if self.vector && !self.random_state[i] {
            if let Some(v) = self.given[i] {
                return Ok(v);
            }
            let Instr::Load { index, .. } = &self.k.body[i] else {
                unreachable!("load() emits loads")
            };
            if dtype == DType::Bool {
                let broadcast = index.strides.get(self.lane_dim) == Some(&0);
                return Ok(self.load_mask(addr, broadcast));
            }
            // f16 and bf16 come in as their bits in i32 lanes, converted once loaded.
            let halves = is_half(dtype);
            let (lane_ty, vty) = if halves {
                (types::I32, types::I32X4)
            } else {
                let vty = self.vty(dtype);
                (vty.lane_type(), vty)
            };
            // Two elements of four lanes (a mixed step): only their 8 (or 4) bytes are read.
            let half_step = self.half_step(vty);
            if self.prefetch
                && self.prefetch_here
                && prefetch::ahead() > 0
                && index.strides.get(self.lane_dim) == Some(&1)
            {
                self.prefetch(addr, prefetch::ahead());
            }
            let lane_load = |t: &mut Self, at: Value| {
                if halves {
                    t.b.ins().uload16(types::I32, mem(), at, 0)
                } else {
                    t.b.ins().load(lane_ty, mem(), at, 0)
                }
            };
            let v = match index.strides.get(self.lane_dim) {
                Some(0) => {
                    let s = lane_load(self, addr);
                    self.b.ins().splat(vty, s)
                }
                Some(1) if half_step => {
                    if halves {
                        let pair = self.b.ins().load(types::I32, mem(), addr, 0);
                        let v = self.b.ins().scalar_to_vector(types::I32X4, pair);
                        let v = self.b.ins().bitcast(types::I16X8, little(), v);
                        self.b.ins().uwiden_low(v)
                    } else {
                        let pair = self.b.ins().load(types::I64, mem(), addr, 0);
                        let v = self.b.ins().scalar_to_vector(types::I64X2, pair);
                        self.b.ins().bitcast(vty, little(), v)
                    }
                }
                Some(1) if halves => self.b.ins().uload16x4(mem(), addr, 0),
                Some(1) => self.b.ins().load(vty, mem(), addr, 0),
                // A strided row: one scalar load per lane gathered into one vector.
                Some(_) | None => {
                    let (strides, _) = self.index[i].clone().expect("loads have an index");
                    let step = strides[self.lane_dim];
                    let step = self
                        .b
                        .ins()
                        .ishl_imm_s(step, dtype.size().trailing_zeros() as i64);
                    let mut at = addr;
                    let first = lane_load(self, at);
                    let mut v = self.b.ins().splat(vty, first);
                    for lane in 1..self.lanes() as u8 {
                        at = self.b.ins().iadd(at, step);
                        let x = lane_load(self, at);
                        v = self.b.ins().insertlane(v, x, lane);
                    }
                    v
                }
            };
            return Ok(if halves {
                self.half_value(dtype, v, self.quieted[i])
            } else {
                v
            });
        }
        Ok(if is_half(dtype) {
            let bits = self.b.ins().uload16(types::I32, mem(), addr, 0);
            self.half_value(dtype, bits, self.quieted[i])
        } else {
            self.b.ins().load(ty(dtype), mem(), addr, 0)
        })
    }

    /// A prefetch of the cache line at `addr + ahead` into every cache level (`prefetch.rs`: a
    /// byte load the JIT rewrites; it never faults, whatever the address).
    fn prefetch(&mut self, addr: Value, ahead: i32) {
        self.prefetch_to(prefetch::Hint::T0, addr, ahead);
    }

    /// [`Self::prefetch`] into the cache levels `hint` names.
    pub(super) fn prefetch_to(&mut self, hint: prefetch::Hint, addr: Value, ahead: i32) {
        self.b
            .ins()
            .load(types::I8, prefetch::flags(hint), addr, ahead);
    }

    fn store(&mut self, i: usize, arg: usize, point: &[Value], x: Value) -> Result<()> {
        let addr = self.address(i, arg, point);
        let dtype = self.k.args[arg].dtype;
        if self.vector {
            if self.inner_stride_is_zero(i) {
                return unsupported("broadcast store in a SIMD loop");
            }
            let half_step = self.half_step(self.vty(dtype));
            if dtype == DType::Bool {
                self.store_mask(x, addr);
            } else if is_half(dtype) {
                let bits = self.half_bits(dtype, x);
                // Four u16 lanes (every value fits, so the saturating pack is exact); two in
                // a mixed step of two.
                let packed = self.b.ins().unarrow(bits, bits);
                let words = if half_step {
                    types::I32X4
                } else {
                    types::I64X2
                };
                self.store_low(packed, words, addr);
            } else if half_step {
                // The low two f32 or i32 lanes: 8 bytes.
                self.store_low(x, types::I64X2, addr);
            } else if self.streaming && dtype == DType::F32 {
                self.b.ins().store(stream::flags(), x, addr, 0);
            } else {
                self.b.ins().store(mem(), x, addr, 0);
            }
            return Ok(());
        }
        if is_half(dtype) {
            let bits = self.half_bits(dtype, x);
            self.b.ins().istore16(mem(), bits, addr, 0);
        } else {
            self.b.ins().store(mem(), x, addr, 0);
        }
        Ok(())
    }

    /// Stores lane 0 of `x` viewed as the vector type `words` (its low 4 or 8 bytes).
    fn store_low(&mut self, x: Value, words: Type, addr: Value) {
        let words = self.b.ins().bitcast(words, little(), x);
        let word = self.b.ins().extractlane(words, 0);
        self.b.ins().store(mem(), word, addr, 0);
    }

    /// The bits of f16 or bf16 values held as f32 (scalar or lanes). A bf16-typed value is
    /// always a bf16 value already (loads widen exactly, every op and cast of bf16 result
    /// rounds with `round_to_bf16`, which also quiets a NaN), so its bits are the f32 bits'
    /// top half: one shift where rounding again would take ten operations.
    fn half_bits(&mut self, dtype: DType, x: Value) -> Value {
        if dtype == DType::F16 {
            self.f32_to_f16_bits(x)
        } else {
            self.bf16_top_half(x)
        }
    }

    /// f16 or bf16 values held as f32 from their bits (scalar or lanes); bf16 ones without
    /// quieting a NaN where their readers quiet it (`quieted`, [`quieted_by_use`]).
    fn half_value(&mut self, dtype: DType, bits: Value, quieted: bool) -> Value {
        if dtype == DType::F16 {
            self.f16_bits_to_f32(bits)
        } else if quieted {
            self.bf16_by_shift(bits)
        } else {
            self.bf16_bits_to_f32(bits)
        }
    }

    /// Lane masks from bools in memory (bytes 0 or 1): one byte splat over the lanes, or one
    /// byte per lane, sign-extended to the lane width and negated (1 becomes all ones).
    fn load_mask(&mut self, addr: Value, broadcast: bool) -> Value {
        let (mask, lane) = (self.mask_ty(), self.mask_ty().lane_type());
        if broadcast {
            let byte = self.b.ins().uload8(lane, mem(), addr, 0);
            let m = self.b.ins().ineg(byte);
            return self.b.ins().splat(mask, m);
        }
        let bytes = if self.lanes() == 4 {
            self.b.ins().load(types::I32, mem(), addr, 0)
        } else {
            self.b.ins().uload16(types::I32, mem(), addr, 0)
        };
        let v = self.b.ins().scalar_to_vector(types::I32X4, bytes);
        let mut v = self.b.ins().bitcast(types::I8X16, little(), v);
        while self.b.func.dfg.value_type(v) != mask {
            v = self.b.ins().swiden_low(v);
        }
        self.b.ins().ineg(v)
    }

    /// Stores lane masks as bools: the low byte of each lane, gathered and masked to 0 or 1.
    fn store_mask(&mut self, m: Value, addr: Value) {
        let m = self.mask_as(m, self.mask_ty());
        let lanes = self.mask_ty().lane_count() as u8;
        let width = 16 / lanes;
        let bytes = self.b.ins().bitcast(types::I8X16, little(), m);
        let picks: Vec<u8> = (0..16).map(|j| (j % lanes) * width).collect();
        let picks = self.b.func.dfg.immediates.push(ConstantData::from(picks));
        let low = self.b.ins().shuffle(bytes, bytes, picks);
        let one = self.b.ins().iconst(types::I8, 1);
        let ones = self.b.ins().splat(types::I8X16, one);
        let bools = self.b.ins().band(low, ones);
        let words = self.b.ins().bitcast(types::I32X4, little(), bools);
        let word = self.b.ins().extractlane(words, 0);
        if self.lanes() == 4 {
            self.b.ins().store(mem(), word, addr, 0);
        } else {
            self.b.ins().istore16(mem(), word, addr, 0);
        }
    }
}
