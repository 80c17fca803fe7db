//! The short-lived half of the cranelift backend: renders one kernel as one function with one
//! `match` over kernel IR instructions, driving loops and reduction passes exactly as the
//! reference interpreter does (row-level instructions once per kept point, one pass over the
//! reduced dims per reduction, a final pass for element-level stores).
//!
//! Values live in registers by dtype: f32/f16/bf16 as `f32` (f16 and bf16 values rounded to
//! their dtype after every op), f64 as `f64`, integers at their width, bool as `i8` 0/1. Float
//! reductions accumulate in f64 and integer ones in wrapping i64, as the interpreter does, so
//! results match it bit for bit for a row walked in order. In a SIMD loop f32 values are
//! `f32x4` and bools are `i32x4` lane masks.

use super::helpers::{binary_code, unary_code};
use super::jit::Unsupported;
use super::math::{self, Fallback};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    BlockArg, ConstantData, Endianness, FuncRef, InstBuilder, MemFlagsData, StackSlotData,
    StackSlotKind, Type, Value, types,
};
use cranelift_codegen::isa::TargetFrontendConfig;
use cranelift_frontend::{FunctionBuilder, Variable};
use smelt_ir::kernel::{Access, Instr, Kernel, Level};
use smelt_ir::scalar::round_float;
use smelt_ir::{BinaryOp, DType, ReduceOp, Scalar, UnaryOp};

type Result<T> = std::result::Result<T, Unsupported>;

/// Lanes of a SIMD value (128-bit f32 vectors).
const LANES: i64 = 4;
/// Elements per trip of an unrolled SIMD loop: two vectors, so a sum has four f64x2
/// accumulators in flight and their add latency is hidden, and an elementwise loop pays its
/// bookkeeping once per two vectors.
const ROW_LANES: i64 = 8;
/// Rows and columns of a block of a tiled walk ([`Translator::tiled`]). A row of a block is
/// one cache line of f32, so the contiguous accesses use whole lines per visit; the
/// transposing access reuses each of its 16 lines across the block's rows. (Measured on
/// `transpose_add`: 16 columns beat 8 and 32 by 1.5-2x; rows matter less.)
const TILE: (i64, i64) = (64, 16);
/// The block of a tiled walk whose transposing loads are read four rows at a time
/// ([`Translator::quad`]): each of a block's 256 columns takes one line of such a load per
/// 16 rows, so its lines stay in L2 across the block's 32 rows while the contiguous accesses
/// stream whole rows. (Measured on `transpose_add`, minimum of 15 runs, three rounds: 18-20 ms
/// against 29-30 ms for 64×16; 128×128 and 8×64 in between. Hand-written SSE C with the same
/// 4×4 transposes took 19-23 ms over the same shapes on this machine.)
const QUAD_TILE: (i64, i64) = (32, 256);
/// Vectors of rows a column reduction handles per trip ([`Translator::column_rows`]): 16 f32
/// rows, one cache line of each contiguous load per step of the reduced dims.
const COLUMN_GROUPS: i64 = 4;

/// The helpers as callable references inside the function being built (order of `HELPERS`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Helpers {
    unary_f64: FuncRef,
    binary_f64: FuncRef,
    unary_i64: FuncRef,
    binary_i64: FuncRef,
    round_f16: FuncRef,
    round_bf16: FuncRef,
    f16_to_f32: FuncRef,
    f32_to_f16: FuncRef,
}

impl Helpers {
    pub(crate) fn from_refs(r: &[FuncRef]) -> Helpers {
        Helpers {
            unary_f64: r[0],
            binary_f64: r[1],
            unary_i64: r[2],
            binary_i64: r[3],
            round_f16: r[4],
            round_bf16: r[5],
            f16_to_f32: r[6],
            f32_to_f16: r[7],
        }
    }
}

fn unsupported<T>(why: impl Into<String>) -> Result<T> {
    Err(Unsupported(why.into()))
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
    }
}

fn is_signed(dtype: DType) -> bool {
    matches!(dtype, DType::I8 | DType::I16 | DType::I32 | DType::I64)
}

fn mem() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

/// A value that a row's last reduction pass computes and its final store pass needs again
/// (softmax's `exp(x - max)`): the reduction pass also writes it to the output at the very
/// place the store pass will write, and the store pass reads it back from there (the row is in
/// cache) instead of recomputing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stash {
    /// The stashed value, the reduction in whose pass it is written, and the final store
    /// (instruction and output argument) whose place holds it meanwhile.
    pub value: usize,
    pub reduce: usize,
    pub store: usize,
    pub arg: usize,
}

/// The stash of a kernel, if it has one: one reduced dim; exactly one element-level store,
/// to a fresh f32/f64 output of the value's dtype whose index moves along the reduced dim (so
/// the points of a row have distinct places; outputs are dense, so rows do too); and a value
/// computed from a transcendental that both the last reduction and that store depend on
/// (the latest such). Everything it looks at is part of the structure key.
pub(crate) fn stash_plan(k: &Kernel) -> Option<Stash> {
    if k.reduce_axes != 1 {
        return None;
    }
    let levels = k.levels();
    let types = k.value_dtypes();
    let reduce = *k.reduces().last()?;
    let stores: Vec<usize> = (0..k.body.len())
        .filter(|&i| matches!(k.body[i], Instr::Store { .. }) && levels[i] == Level::Element)
        .collect();
    let [store] = stores[..] else { return None };
    let Instr::Store { arg, index, .. } = &k.body[store] else {
        return None;
    };
    let out = &k.args[*arg];
    if out.access != Access::Write
        || !matches!(out.dtype, DType::F32 | DType::F64)
        || index.strides.last() == Some(&0)
    {
        return None;
    }
    // Element-level ancestors (and self) of an instruction.
    let cone = |root: usize| {
        let mut seen = vec![false; k.body.len()];
        let mut stack = vec![root];
        while let Some(i) = stack.pop() {
            if seen[i] || levels[i] != Level::Element {
                continue;
            }
            seen[i] = true;
            stack.extend(k.body[i].operands());
        }
        seen
    };
    let Instr::Reduce { x, .. } = k.body[reduce] else {
        return None;
    };
    let (of_reduce, of_store) = (cone(x), cone(store));
    let value = (0..reduce).rev().find(|&v| {
        of_reduce[v]
            && of_store[v]
            && types[v] == Some(out.dtype)
            && cone(v)
                .iter()
                .enumerate()
                .any(|(i, &inside)| inside && super::is_transcendental(&k.body[i]))
    })?;
    Some(Stash {
        value,
        reduce,
        store,
        arg: *arg,
    })
}

/// Whether `instr` is a load whose innermost stride is neither 0 nor 1 while its stride along
/// the dim outside it is 1: in a tiled walk, four rows of it are read as four contiguous
/// column vectors and transposed ([`Translator::quad`]). Part of the structure key.
pub fn is_transposing_load(instr: &Instr) -> bool {
    match instr {
        Instr::Load { index, .. } => {
            let s = &index.strides;
            s.len() >= 2 && !matches!(s[s.len() - 1], 0 | 1) && s[s.len() - 2] == 1
        }
        Instr::Store { .. }
        | Instr::Const { .. }
        | Instr::Unary { .. }
        | Instr::Binary { .. }
        | Instr::Where { .. }
        | Instr::Cast { .. }
        | Instr::Reduce { .. } => false,
    }
}

/// Whether a reduction kernel runs in columns: SIMD lanes along its innermost kept dim, each
/// lane a row of its own, the reduced dims walked in scalar steps. Chosen when no load walks
/// the innermost reduced dim contiguously (so row passes would gather every lane) and some
/// load walks the innermost kept dim contiguously (`x.sum(0)`, a softmax over dim 0): every
/// load is contiguous or broadcast along that kept dim, every store contiguous along it,
/// every value f32 with a vector form, and every reduction an f32 sum, max or min.
/// Everything it looks at is part of the structure key.
pub(crate) fn columns(k: &Kernel) -> bool {
    let rank = k.shape.len();
    if k.reduce_axes == 0 || k.reduce_axes == rank {
        return false;
    }
    let lane = rank - k.reduce_axes - 1;
    let types = k.value_dtypes();
    let levels = k.levels();
    let f32_or_bool = |v: usize| matches!(types[v], Some(DType::F32 | DType::Bool));
    let mut contiguous = false;
    let ok = k.body.iter().enumerate().all(|(i, instr)| match instr {
        Instr::Load { index, .. } => {
            contiguous |= index.strides[lane] == 1;
            types[i] == Some(DType::F32)
                && matches!(index.strides[lane], 0 | 1)
                && index.strides[rank - 1] != 1
        }
        Instr::Store { index, x, .. } => types[*x] == Some(DType::F32) && index.strides[lane] == 1,
        Instr::Const { dtype, .. } => *dtype == DType::F32,
        Instr::Unary { x, compute, .. } | Instr::Binary { a: x, compute, .. } => {
            *compute == DType::F32 && f32_or_bool(*x)
        }
        Instr::Where { a, .. } => types[*a] == Some(DType::F32),
        Instr::Reduce { op, x } => {
            matches!(op, ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min)
                && types[i] == Some(DType::F32)
                && levels[*x] == Level::Element
        }
        Instr::Cast { .. } => false,
    });
    ok && contiguous
}

/// Renders one kernel.
pub(crate) struct Translator<'a, 'f> {
    b: FunctionBuilder<'f>,
    k: &'a Kernel,
    types: Vec<Option<DType>>,
    levels: Vec<Level>,
    h: Helpers,
    simd: bool,
    /// Whether the instructions being emitted now are in a SIMD loop body.
    vector: bool,
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
    /// Per indexed instruction, while a row runs: the byte address of its index at the
    /// row's outer dims (`< bases_level`) and offset, computed once per row ([`Self::set_bases`]).
    bases: Vec<Option<Value>>,
    bases_level: usize,
    /// In a block of four rows ([`Self::quad`]): which row is being emitted, and per
    /// transposing load its four row vectors, read as four column vectors and transposed.
    quad_row: Option<usize>,
    transposed: Vec<Option<[Value; 4]>>,
    /// In a pass over a row: the element-level instructions the pass needs
    /// ([`Self::element_cone`]); the others are not emitted.
    live: Option<Vec<bool>>,
    /// The dim a SIMD value's lanes run along: the innermost, or in a column reduction
    /// ([`Translator::columns`]) the innermost kept dim.
    lane_dim: usize,
    /// Whether a reduction kernel's passes run on f32x4 along the reduced dim
    /// ([`Translator::vectorizable_rows`]).
    row_simd: bool,
    /// Whether a reduction kernel runs in columns ([`Translator::columns`]).
    column_mode: bool,
}

impl<'a, 'f> Translator<'a, 'f> {
    pub(crate) fn new(mut b: FunctionBuilder<'f>, k: &'a Kernel, h: Helpers, simd: bool) -> Self {
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
        let sizes = (0..rank)
            .map(|d| b.ins().load(types::I64, flags, sizes_ptr, (8 * d) as i32))
            .collect();
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
            vector: false,
            bufs,
            sizes,
            index,
            begin: p[3],
            end: p[4],
            zero,
            stash: stash_plan(k),
            skip: None,
            bases: vec![None; k.body.len()],
            bases_level: 0,
            quad_row: None,
            transposed: vec![None; k.body.len()],
            live: None,
            lane_dim: k.shape.len().saturating_sub(1),
            row_simd: false,
            column_mode: false,
        }
    }

    /// Emits the whole function.
    pub(crate) fn translate(mut self, target: TargetFrontendConfig) -> Result<()> {
        if self.simd {
            self.row_simd = self.vectorizable_rows();
            self.column_mode = columns(self.k);
            if !(self.vectorizable() || self.row_simd || self.column_mode) {
                return unsupported("no SIMD form");
            }
        }
        let rank = self.k.shape.len();
        let mut point = vec![self.zero; rank];
        let mut vals = vec![None; self.k.body.len()];
        self.outer(0, &mut point, &mut vals)?;
        self.b.ins().return_(&[]);
        self.b.seal_all_blocks();
        self.b.finalize(target);
        Ok(())
    }

    /// Whether the innermost loop can run on f32x4: an elementwise kernel over f32 values
    /// whose loads and stores are contiguous or broadcast along the innermost dim.
    fn vectorizable(&self) -> bool {
        if self.k.reduce_axes > 0 || self.k.shape.is_empty() {
            return false;
        }
        (0..self.k.body.len()).all(|i| self.vector_instr(i))
    }

    /// Whether instruction `i` has an f32x4 form in a loop along the innermost dim.
    fn vector_instr(&self, i: usize) -> bool {
        let t = self.types[i];
        let f32_or_bool = |v: usize| matches!(self.types[v], Some(DType::F32 | DType::Bool));
        match &self.k.body[i] {
            // A strided load gathers its lanes; a strided store has no vector form.
            Instr::Load { .. } => t == Some(DType::F32),
            Instr::Store { index, x, .. } => {
                self.types[*x] == Some(DType::F32) && index.strides.last() == Some(&1)
            }
            Instr::Const { dtype, .. } => *dtype == DType::F32,
            Instr::Unary { x, compute, .. } | Instr::Binary { a: x, compute, .. } => {
                *compute == DType::F32 && f32_or_bool(*x)
            }
            Instr::Where { a, .. } => self.types[*a] == Some(DType::F32),
            Instr::Cast { .. } | Instr::Reduce { .. } => false,
        }
    }

    /// Whether a reduction kernel's passes over its rows can run on f32x4 along the innermost
    /// (reduced) dim: every element-level instruction has a vector form, the row-level values
    /// they read are f32 (splatted), and every reduction is an f32 sum, max or min of an
    /// element-level value. Sums then accumulate in f64 over [`ROW_LANES`] interleaved lanes
    /// (element `j` of a row's vector part into lane `j mod 8`), combined in a fixed tree, and
    /// the scalar tail last: the order depends only on the row length, never on threads.
    fn vectorizable_rows(&self) -> bool {
        if self.k.reduce_axes == 0 {
            return false;
        }
        let element = |v: usize| self.levels[v] == Level::Element;
        let row_f32 = |v: usize| element(v) || self.types[v] == Some(DType::F32);
        (0..self.k.body.len()).all(|i| {
            let instr = &self.k.body[i];
            if let Instr::Reduce { op, x } = instr {
                return (matches!(op, ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min)
                    && self.types[i] == Some(DType::F32)
                    && element(*x))
                    || self.widened_sum(i).is_some();
            }
            if self.widened_by_sum(i) {
                return true;
            }
            if !element(i) {
                return true;
            }
            self.vector_instr(i)
                && match instr {
                    Instr::Unary { x, .. } | Instr::Cast { x, .. } | Instr::Store { x, .. } => {
                        row_f32(*x)
                    }
                    Instr::Binary { a, b, .. } => row_f32(*a) && row_f32(*b),
                    Instr::Where { cond, a, b } => element(*cond) && row_f32(*a) && row_f32(*b),
                    Instr::Load { .. } | Instr::Const { .. } | Instr::Reduce { .. } => true,
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
            | Instr::Reduce { .. } => None,
        }
    }

    /// Whether instruction `i` is the f32 → f64 cast that only a widened sum reads
    /// ([`Self::widened_sum`]): a SIMD pass never emits it.
    fn widened_by_sum(&self, i: usize) -> bool {
        let mut readers =
            (0..self.k.body.len()).filter(|&j| self.k.body[j].operands().contains(&i));
        readers
            .next()
            .is_some_and(|j| self.widened_sum(j).is_some() && readers.next().is_none())
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
        self.bases_level = 0;
        self.bases.iter_mut().for_each(|b| *b = None);
        let mut at = vec![];
        let mut vals = vec![];
        for i in 0..self.k.body.len() {
            if let Some(arg) = self.k.body[i].arg() {
                let mut outer = point[..level].to_vec();
                outer.resize(point.len(), self.zero);
                vals.push(self.address(i, arg, &outer));
                at.push(i);
            }
        }
        let pinned = self.pin(&vals);
        for (i, v) in at.into_iter().zip(pinned) {
            self.bases[i] = Some(v);
        }
        self.bases_level = level;
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

    /// Whether an elementwise kernel walks its last two dims in tiles: some access moves
    /// along the innermost dim with a stride other than 0 or 1 (a transposing read or write),
    /// so a plain row-by-row walk would touch a new cache line (and often a new page) per
    /// element. The stride class is part of the structure key, so this is decided per
    /// structure.
    fn tiled(&self) -> bool {
        self.k.reduce_axes == 0
            && self.k.shape.len() >= 2
            && self.k.body.iter().any(|instr| {
                instr
                    .index()
                    .is_some_and(|index| !matches!(index.strides.last(), Some(0 | 1)))
            })
    }

    /// The last two dims, rows `start..end` of the first, in [`TILE`]-shaped blocks: every
    /// line a transposing access touches in a block stays in L1 until the block is done. In a
    /// SIMD kernel with a transposing load, rows go four at a time ([`Self::quad`]).
    fn tiles(
        &mut self,
        start: Value,
        end: Value,
        point: &mut Vec<Value>,
        vals: &mut [Option<Value>],
    ) -> Result<()> {
        let rank = self.k.shape.len();
        let (d, last) = (rank - 2, rank - 1);
        let quads = self.simd && self.k.body.iter().any(is_transposing_load);
        let (rows, cols) = if quads { QUAD_TILE } else { TILE };
        let width = self.sizes[last];
        // `i0 + rows - 1 < end + rows - 1`: a partial block still runs.
        let row_end = self.b.ins().iadd_imm_s(end, rows - 1);
        let col_end = self.b.ins().iadd_imm_s(width, cols - 1);
        self.for_loop(start, row_end, rows, &mut |t, i0| {
            let i1 = t.b.ins().iadd_imm_s(i0, rows);
            let i1 = t.b.ins().smin(i1, end);
            let zero = t.zero;
            t.for_loop(zero, col_end, cols, &mut |t, j0| {
                let j1 = t.b.ins().iadd_imm_s(j0, cols);
                let j1 = t.b.ins().smin(j1, width);
                let single = if quads {
                    let n = t.b.ins().isub(i1, i0);
                    let whole = t.b.ins().band_imm_s(n, !(LANES - 1));
                    let split = t.b.ins().iadd(i0, whole);
                    t.for_loop(i0, split, LANES, &mut |t, i| t.quad(i, j0, j1, point, vals))?;
                    split
                } else {
                    i0
                };
                t.for_loop(single, i1, 1, &mut |t, i| {
                    point[d] = i;
                    let mut v = vals.to_vec();
                    t.set_bases(point, last);
                    let done = t.innermost(j0, j1, point, &mut v);
                    t.clear_bases();
                    done
                })
            })
        })
    }

    /// Rows `i..i+4` of a tile, columns `j0..j1`, in 4×4 blocks: each transposing load (one
    /// that walks the rows contiguously, [`is_transposing_load`]) reads four column vectors
    /// and transposes them in registers into the four rows' vectors, instead of gathering
    /// every lane with a scalar load; then each row's program runs on its vector. Leftover
    /// columns run as scalars, row by row.
    fn quad(
        &mut self,
        i: Value,
        j0: Value,
        j1: Value,
        point: &mut Vec<Value>,
        vals: &mut [Option<Value>],
    ) -> Result<()> {
        let rank = self.k.shape.len();
        let (d, last) = (rank - 2, rank - 1);
        let mut rows = vec![];
        let mut row_bases = vec![];
        for r in 0..LANES {
            let row = self.b.ins().iadd_imm_s(i, r);
            point[d] = row;
            self.set_bases(point, last);
            rows.push(row);
            row_bases.push(self.bases.clone());
        }
        let n = self.b.ins().isub(j1, j0);
        let whole = self.b.ins().band_imm_s(n, !(LANES - 1));
        let split = self.b.ins().iadd(j0, whole);
        self.vector = true;
        self.for_loop(j0, split, LANES, &mut |t, j| {
            t.bases.clone_from(&row_bases[0]);
            point[d] = rows[0];
            for ti in 0..t.k.body.len() {
                if !is_transposing_load(&t.k.body[ti]) {
                    continue;
                }
                let arg = t.k.body[ti].arg().expect("a load has an argument");
                let mut columns = [t.zero; 4];
                for (c, column) in columns.iter_mut().enumerate() {
                    point[last] = t.b.ins().iadd_imm_s(j, c as i64);
                    let addr = t.address(ti, arg, point);
                    *column = t.b.ins().load(types::F32X4, mem(), addr, 0);
                }
                t.transposed[ti] = Some(t.transpose4(columns));
            }
            point[last] = j;
            for r in 0..LANES as usize {
                t.bases.clone_from(&row_bases[r]);
                point[d] = rows[r];
                t.quad_row = Some(r);
                let mut v = vals.to_vec();
                t.row(point, &mut v)?;
            }
            t.quad_row = None;
            t.transposed.iter_mut().for_each(|x| *x = None);
            Ok(())
        })?;
        self.vector = false;
        for r in 0..LANES as usize {
            self.bases.clone_from(&row_bases[r]);
            point[d] = rows[r];
            self.for_loop(split, j1, 1, &mut |t, j| {
                point[last] = j;
                let mut v = vals.to_vec();
                t.row(point, &mut v)
            })?;
        }
        self.clear_bases();
        Ok(())
    }

    /// The transpose of a 4×4 block held as four f32x4 columns: row `r` of the result is
    /// lane `r` of every column.
    fn transpose4(&mut self, c: [Value; 4]) -> [Value; 4] {
        let t0 = self.shuffle32(c[0], c[1], [0, 4, 1, 5]);
        let t1 = self.shuffle32(c[0], c[1], [2, 6, 3, 7]);
        let t2 = self.shuffle32(c[2], c[3], [0, 4, 1, 5]);
        let t3 = self.shuffle32(c[2], c[3], [2, 6, 3, 7]);
        [
            self.shuffle32(t0, t2, [0, 1, 4, 5]),
            self.shuffle32(t0, t2, [2, 3, 6, 7]),
            self.shuffle32(t1, t3, [0, 1, 4, 5]),
            self.shuffle32(t1, t3, [2, 3, 6, 7]),
        ]
    }

    /// Lanes of `a` (0-3) and `b` (4-7) picked into an f32x4.
    fn shuffle32(&mut self, a: Value, b: Value, lanes: [u8; 4]) -> Value {
        let little = MemFlagsData::new().with_endianness(Endianness::Little);
        let a = self.b.ins().bitcast(types::I8X16, little, a);
        let b = self.b.ins().bitcast(types::I8X16, little, b);
        let mask: Vec<u8> = lanes
            .iter()
            .flat_map(|&l| (0..4).map(move |k| 4 * l + k))
            .collect();
        let mask = self.b.func.dfg.immediates.push(ConstantData::from(mask));
        let picked = self.b.ins().shuffle(a, b, mask);
        self.b.ins().bitcast(types::F32X4, little, picked)
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
            let n = self.b.ins().isub(end, start);
            let wide = self.b.ins().band_imm_s(n, !(ROW_LANES - 1));
            let wide = self.b.ins().iadd(start, wide);
            let whole = self.b.ins().band_imm_s(n, !(LANES - 1));
            let split = self.b.ins().iadd(start, whole);
            self.vector = true;
            self.for_loop(start, wide, ROW_LANES, &mut |t, i| {
                for u in 0..ROW_LANES / LANES {
                    point[d] = t.b.ins().iadd_imm_s(i, u * LANES);
                    let mut v = vals.to_vec();
                    t.row(point, &mut v)?;
                }
                Ok(())
            })?;
            self.for_loop(wide, split, LANES, &mut |t, i| {
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

    /// The innermost kept dim of a column reduction over `start..end`: [`COLUMN_GROUPS`]
    /// vectors of rows a trip, then one, then single rows (scalar code).
    fn column_loop(
        &mut self,
        start: Value,
        end: Value,
        point: &mut Vec<Value>,
        vals: &mut [Option<Value>],
    ) -> Result<()> {
        let d = self.k.shape.len() - self.k.reduce_axes - 1;
        let n = self.b.ins().isub(end, start);
        let wide = self.b.ins().band_imm_s(n, !(COLUMN_GROUPS * LANES - 1));
        let wide = self.b.ins().iadd(start, wide);
        let whole = self.b.ins().band_imm_s(n, !(LANES - 1));
        let whole = self.b.ins().iadd(start, whole);
        self.lane_dim = d;
        self.for_loop(start, wide, COLUMN_GROUPS * LANES, &mut |t, i| {
            t.column_rows(i, COLUMN_GROUPS as usize, point, vals)
        })?;
        self.for_loop(wide, whole, LANES, &mut |t, i| {
            t.column_rows(i, 1, point, vals)
        })?;
        self.lane_dim = self.k.shape.len() - 1;
        self.for_loop(whole, end, 1, &mut |t, i| {
            point[d] = i;
            let mut v = vals.to_vec();
            t.row(point, &mut v)
        })
    }

    /// The row program for `groups` vectors of rows at once (rows `i..i + 4·groups` of the
    /// innermost kept dim, one per lane): each reduction is one walk over the reduced dims in
    /// order, every lane accumulating its own row as the reference does (f64 lanes for sums,
    /// so results are the same bits), then the row-level instructions and element-level
    /// stores, all on vectors.
    fn column_rows(
        &mut self,
        i: Value,
        groups: usize,
        point: &mut Vec<Value>,
        vals: &[Option<Value>],
    ) -> Result<()> {
        let rank = self.k.shape.len();
        let kept = rank - self.k.reduce_axes;
        let (ld, n) = (kept - 1, self.k.body.len());
        let mut bases = vec![];
        let mut rows = vec![];
        for u in 0..groups {
            let at = self.b.ins().iadd_imm_s(i, u as i64 * LANES);
            point[ld] = at;
            self.set_bases(point, kept);
            bases.push(self.bases.clone());
            rows.push(at);
        }
        self.vector = true;
        let mut vs: Vec<Vec<Option<Value>>> = vec![vals.to_vec(); groups];
        let mut row_done = 0;
        for r in self.k.reduces() {
            let Instr::Reduce { op, x } = self.k.body[r] else {
                unreachable!("reduces() lists Reduce instructions")
            };
            for u in 0..groups {
                self.bases.clone_from(&bases[u]);
                point[ld] = rows[u];
                self.eval(row_done..r, Level::Row, point, &mut vs[u])?;
            }
            row_done = r;
            let accs: Vec<Vec<Variable>> = (0..groups).map(|_| self.column_accs(op)).collect();
            self.live = Some(self.element_cone(&[x], None));
            self.inner(kept, point, &mut |t, point| {
                for u in 0..groups {
                    t.bases.clone_from(&bases[u]);
                    point[ld] = rows[u];
                    let mut v = vs[u].clone();
                    t.eval(0..r, Level::Element, point, &mut v)?;
                    let y = v[x].expect("invariant: a reduction's operand is computed before it");
                    t.column_fold(op, &accs[u], y);
                }
                Ok(())
            })?;
            self.live = None;
            point[kept..].iter_mut().for_each(|p| *p = self.zero);
            for u in 0..groups {
                vs[u][r] = Some(self.column_finish(op, &accs[u]));
            }
        }
        for u in 0..groups {
            self.bases.clone_from(&bases[u]);
            point[ld] = rows[u];
            self.eval(row_done..n, Level::Row, point, &mut vs[u])?;
        }
        let stores: Vec<usize> = (0..n)
            .filter(|&j| {
                matches!(self.k.body[j], Instr::Store { .. }) && self.levels[j] == Level::Element
            })
            .collect();
        if !stores.is_empty() {
            self.live = Some(self.element_cone(&stores, None));
            self.inner(kept, point, &mut |t, point| {
                for u in 0..groups {
                    t.bases.clone_from(&bases[u]);
                    point[ld] = rows[u];
                    let mut v = vs[u].clone();
                    t.eval(0..n, Level::Element, point, &mut v)?;
                }
                Ok(())
            })?;
            self.live = None;
            point[kept..].iter_mut().for_each(|p| *p = self.zero);
        }
        self.vector = false;
        self.clear_bases();
        Ok(())
    }

    /// The accumulators of one vector of rows: two f64x2 halves for a sum; for max and min
    /// an f32x4 and a lane mask of the NaNs seen.
    fn column_accs(&mut self, op: ReduceOp) -> Vec<Variable> {
        let var = |t: &mut Self, ty: Type, init: Value| {
            let v = t.b.declare_var(ty);
            t.b.def_var(v, init);
            v
        };
        if op == ReduceOp::Sum {
            let z = self.b.ins().f64const(0.0);
            let z = self.b.ins().splat(types::F64X2, z);
            vec![var(self, types::F64X2, z), var(self, types::F64X2, z)]
        } else {
            let e = if op == ReduceOp::Max {
                f32::NEG_INFINITY
            } else {
                f32::INFINITY
            };
            let e = self.b.ins().f32const(e);
            let e = self.b.ins().splat(types::F32X4, e);
            let none = self.b.ins().iconst(types::I32, 0);
            let none = self.b.ins().splat(types::I32X4, none);
            vec![var(self, types::F32X4, e), var(self, types::I32X4, none)]
        }
    }

    /// One element of each of four rows folded into their accumulators, as the scalar step
    /// does per row (a sum adds in f64; max and min keep the earlier value on ties).
    fn column_fold(&mut self, op: ReduceOp, accs: &[Variable], y: Value) {
        if op == ReduceOp::Sum {
            let lo = self.b.ins().fvpromote_low(y);
            let high = self.high_half(y);
            let hi = self.b.ins().fvpromote_low(high);
            for (acc, half) in accs.iter().zip([lo, hi]) {
                let a = self.b.use_var(*acc);
                let a = self.b.ins().fadd(a, half);
                self.b.def_var(*acc, a);
            }
        } else {
            let a = self.b.use_var(accs[0]);
            let a = self.fold_lanes(op, a, y);
            self.b.def_var(accs[0], a);
            let seen = self.b.use_var(accs[1]);
            let nan = self.b.ins().fcmp(FloatCC::Unordered, y, y);
            let seen = self.b.ins().bor(seen, nan);
            self.b.def_var(accs[1], seen);
        }
    }

    /// The four rows' results as an f32x4 (sums rounded once from f64; NaN where one was
    /// seen).
    fn column_finish(&mut self, op: ReduceOp, accs: &[Variable]) -> Value {
        if op == ReduceOp::Sum {
            let lo = self.b.use_var(accs[0]);
            let hi = self.b.use_var(accs[1]);
            let lo = self.b.ins().fvdemote(lo);
            let hi = self.b.ins().fvdemote(hi);
            self.shuffle32(lo, hi, [0, 1, 4, 5])
        } else {
            let a = self.b.use_var(accs[0]);
            let seen = self.b.use_var(accs[1]);
            let little = MemFlagsData::new().with_endianness(Endianness::Little);
            let seen = self.b.ins().bitcast(types::F32X4, little, seen);
            let nan = self.b.ins().f32const(f32::NAN);
            let nan = self.b.ins().splat(types::F32X4, nan);
            self.b.ins().bitselect(seen, nan, a)
        }
    }

    /// The program for one kept point: row-level instructions, one pass over the reduced dims
    /// per reduction, a final pass for element-level stores.
    fn row(&mut self, point: &mut Vec<Value>, vals: &mut [Option<Value>]) -> Result<()> {
        let n = self.k.body.len();
        let kept = self.k.shape.len() - self.k.reduce_axes;
        let reducing = self.k.reduce_axes > 0;
        if reducing {
            self.set_bases(point, kept);
        }
        let mut row_done = 0;
        for r in self.k.reduces() {
            let Instr::Reduce { op, x } = self.k.body[r] else {
                unreachable!("reduces() lists Reduce instructions")
            };
            self.eval(row_done..r, Level::Row, point, vals)?;
            self.pin_row_values(row_done..r, vals);
            row_done = r;
            let dtype = self.types[r].expect("reductions have a value");
            let (acc_ty, identity) = self.identity(op, dtype)?;
            let acc = self.b.declare_var(acc_ty);
            self.b.def_var(acc, identity);
            self.live = Some(self.element_cone(&[x], None));
            let mut scalar = |t: &mut Self, point: &mut Vec<Value>| {
                let mut v = vals.to_vec();
                t.eval(0..r, Level::Element, point, &mut v)?;
                t.stash_store(r, point, &v)?;
                let x = v[x].expect("invariant: a reduction's operand is computed before it");
                t.step(op, dtype, acc, x)
            };
            if self.row_simd {
                self.vector_reduce(r, op, acc, point, vals, &mut scalar)?;
            } else {
                self.inner(kept, point, &mut scalar)?;
            }
            self.live = None;
            point[kept..].iter_mut().for_each(|p| *p = self.zero);
            let a = self.b.use_var(acc);
            let done = self.finish(op, dtype, a)?;
            vals[r] = Some(self.pin(&[done])[0]);
        }
        self.eval(row_done..n, Level::Row, point, vals)?;
        if reducing {
            self.pin_row_values(row_done..n, vals);
        }
        let element_stores = self
            .k
            .body
            .iter()
            .zip(&self.levels)
            .any(|(i, l)| matches!(i, Instr::Store { .. }) && *l == Level::Element);
        if element_stores {
            self.skip = self.stash.map(|st| st.value);
            let stores: Vec<usize> = (0..n)
                .filter(|&i| {
                    matches!(self.k.body[i], Instr::Store { .. })
                        && self.levels[i] == Level::Element
                })
                .collect();
            self.live = Some(self.element_cone(&stores, self.skip));
            let mut scalar = |t: &mut Self, point: &mut Vec<Value>| {
                let mut v = vals.to_vec();
                t.stash_load(point, &mut v);
                t.eval(0..n, Level::Element, point, &mut v)
            };
            if self.row_simd {
                let splat = self.splat_row_values(vals);
                self.inner_vector(
                    kept,
                    point,
                    &mut |t, point, _| {
                        let mut v = splat.clone();
                        t.stash_load(point, &mut v);
                        t.eval(0..n, Level::Element, point, &mut v)
                    },
                    &mut scalar,
                )?;
            } else {
                self.inner(kept, point, &mut scalar)?;
            }
            self.skip = None;
            self.live = None;
            point[kept..].iter_mut().for_each(|p| *p = self.zero);
        }
        if reducing {
            self.clear_bases();
        }
        Ok(())
    }

    /// The element-level instructions `roots` depend on (themselves included), not looking
    /// past `stop`: what one pass over a row must compute. A load no one in the pass needs
    /// (the input of a stashed value, an operand of a later pass) is not emitted there.
    fn element_cone(&self, roots: &[usize], stop: Option<usize>) -> Vec<bool> {
        let mut seen = vec![false; self.k.body.len()];
        let mut stack = roots.to_vec();
        while let Some(i) = stack.pop() {
            if seen[i] || self.levels[i] != Level::Element {
                continue;
            }
            seen[i] = true;
            if stop != Some(i) {
                stack.extend(self.k.body[i].operands());
            }
        }
        seen
    }

    /// Pins the row-level values computed by the instructions of `range` (see [`Self::pin`]).
    fn pin_row_values(&mut self, range: std::ops::Range<usize>, vals: &mut [Option<Value>]) {
        let at: Vec<usize> = range
            .filter(|&j| self.levels[j] == Level::Row && vals[j].is_some())
            .collect();
        if at.is_empty() {
            return;
        }
        let values: Vec<Value> = at.iter().map(|&j| vals[j].expect("filtered")).collect();
        let pinned = self.pin(&values);
        for (j, v) in at.into_iter().zip(pinned) {
            vals[j] = Some(v);
        }
    }

    /// In the pass of reduction `r`, writes the stashed value to its place in the output.
    fn stash_store(&mut self, r: usize, point: &[Value], vals: &[Option<Value>]) -> Result<()> {
        match self.stash {
            Some(st) if st.reduce == r => {
                let x =
                    vals[st.value].expect("invariant: the stashed value precedes the reduction");
                self.store(st.store, st.arg, point, x)
            }
            Some(_) | None => Ok(()),
        }
    }

    /// In the final pass, reads the stashed value back instead of recomputing it.
    fn stash_load(&mut self, point: &[Value], vals: &mut [Option<Value>]) {
        if let Some(st) = self.stash {
            let addr = self.address(st.store, st.arg, point);
            let t = if self.vector {
                types::F32X4
            } else {
                ty(self.k.args[st.arg].dtype)
            };
            vals[st.value] = Some(self.b.ins().load(t, mem(), addr, 0));
        }
    }

    /// `vals` with every row-level f32 value splatted to f32x4, for a SIMD pass over a row.
    fn splat_row_values(&mut self, vals: &[Option<Value>]) -> Vec<Option<Value>> {
        (0..vals.len())
            .map(|j| match vals[j] {
                Some(v) if self.levels[j] == Level::Row && self.types[j] == Some(DType::F32) => {
                    Some(self.b.ins().splat(types::F32X4, v))
                }
                other => other,
            })
            .collect()
    }

    /// One SIMD pass of reduction `r` (an f32 sum, max or min) over the row into `acc`: the
    /// vector part into [`ROW_LANES`] lanes (f64 lanes for a sum), combined in a fixed tree,
    /// then the scalar tail through `scalar`.
    fn vector_reduce(
        &mut self,
        r: usize,
        op: ReduceOp,
        acc: Variable,
        point: &mut Vec<Value>,
        vals: &[Option<Value>],
        scalar: &mut dyn FnMut(&mut Self, &mut Vec<Value>) -> Result<()>,
    ) -> Result<()> {
        let Instr::Reduce { x, .. } = self.k.body[r] else {
            unreachable!("r is a reduction")
        };
        let kept = self.k.shape.len() - self.k.reduce_axes;
        let sum = op == ReduceOp::Sum;
        let init = if sum {
            let z = self.b.ins().f64const(0.0);
            self.b.ins().splat(types::F64X2, z)
        } else {
            let e = if op == ReduceOp::Max {
                f32::NEG_INFINITY
            } else {
                f32::INFINITY
            };
            let e = self.b.ins().f32const(e);
            self.b.ins().splat(types::F32X4, e)
        };
        let (lane_ty, parts) = if sum {
            (types::F64X2, ROW_LANES as usize / 2)
        } else {
            (types::F32X4, ROW_LANES as usize / LANES as usize)
        };
        let accs: Vec<Variable> = (0..parts)
            .map(|_| {
                let v = self.b.declare_var(lane_ty);
                self.b.def_var(v, init);
                v
            })
            .collect();
        // Max and min fold with `maxps`/`minps`, which keep the accumulator when the new
        // element is NaN; a NaN seen anywhere is recorded in lane masks and wins at the end.
        let nans: Vec<Variable> = if sum {
            vec![]
        } else {
            let none = self.b.ins().iconst(types::I32, 0);
            let none = self.b.ins().splat(types::I32X4, none);
            (0..parts)
                .map(|_| {
                    let v = self.b.declare_var(types::I32X4);
                    self.b.def_var(v, none);
                    v
                })
                .collect()
        };
        let splat = self.splat_row_values(vals);
        // A widened sum folds the f32 value; its cast to f64 is not emitted in vector code.
        let (widened, x) = match self.widened_sum(r) {
            Some(y) => (Some(x), y),
            None => (None, x),
        };
        self.inner_vector(
            kept,
            point,
            &mut |t, point, u| {
                let mut v = splat.clone();
                t.skip = widened;
                t.eval(0..r, Level::Element, point, &mut v)?;
                t.skip = None;
                t.stash_store(r, point, &v)?;
                let x = v[x].expect("invariant: a reduction's operand is computed before it");
                // A sum's f32x4 feeds two f64x2 accumulators; max and min fold in f32x4.
                let lanes = if sum {
                    let lo = t.b.ins().fvpromote_low(x);
                    let high = t.high_half(x);
                    let hi = t.b.ins().fvpromote_low(high);
                    vec![(2 * u, lo), (2 * u + 1, hi)]
                } else {
                    vec![(u, x)]
                };
                for (part, y) in lanes {
                    let a = t.b.use_var(accs[part]);
                    let folded = t.fold_lanes(op, a, y);
                    t.b.def_var(accs[part], folded);
                    if !sum {
                        let seen = t.b.use_var(nans[part]);
                        let nan = t.b.ins().fcmp(FloatCC::Unordered, y, y);
                        let seen = t.b.ins().bor(seen, nan);
                        t.b.def_var(nans[part], seen);
                    }
                }
                Ok(())
            },
            scalar,
        )?;
        let mut parts: Vec<Value> = accs.iter().map(|a| self.b.use_var(*a)).collect();
        while parts.len() > 1 {
            parts = parts
                .chunks(2)
                .map(|p| self.fold_lanes(op, p[0], p[1]))
                .collect();
        }
        let v = parts[0];
        if sum {
            let l0 = self.b.ins().extractlane(v, 0);
            let l1 = self.b.ins().extractlane(v, 1);
            let total = self.b.ins().fadd(l0, l1);
            let tail = self.b.use_var(acc);
            let all = self.b.ins().fadd(total, tail);
            self.b.def_var(acc, all);
        } else {
            for lane in 0..LANES as u8 {
                let l = self.b.ins().extractlane(v, lane);
                self.step(op, DType::F32, acc, l)?;
            }
            let mut seen = self.b.use_var(nans[0]);
            for part in &nans[1..] {
                let more = self.b.use_var(*part);
                seen = self.b.ins().bor(seen, more);
            }
            let any = self.b.ins().vany_true(seen);
            let a = self.b.use_var(acc);
            let nan = self.b.ins().f64const(f64::NAN);
            let a = self.b.ins().select(any, nan, a);
            self.b.def_var(acc, a);
        }
        Ok(())
    }

    /// `a ⊕ b` lane by lane for a SIMD reduction pass (sum, max or min: the only reductions
    /// `vectorizable_rows` admits). Max and min keep `a` where `b` is not greater (or less),
    /// NaN included: one `maxps`/`minps`; the caller tracks NaNs itself ([`Self::vector_reduce`]).
    fn fold_lanes(&mut self, op: ReduceOp, a: Value, b: Value) -> Value {
        let little = MemFlagsData::new().with_endianness(Endianness::Little);
        match op {
            ReduceOp::Sum => self.b.ins().fadd(a, b),
            ReduceOp::Max => {
                let take = self.b.ins().fcmp(FloatCC::LessThan, a, b);
                let take = self.b.ins().bitcast(types::F32X4, little, take);
                self.b.ins().bitselect(take, b, a)
            }
            ReduceOp::Min => {
                let take = self.b.ins().fcmp(FloatCC::LessThan, b, a);
                let take = self.b.ins().bitcast(types::F32X4, little, take);
                self.b.ins().bitselect(take, b, a)
            }
            ReduceOp::Prod | ReduceOp::All | ReduceOp::Any => {
                unreachable!("vectorizable_rows admits only sum, max and min")
            }
        }
    }

    /// Lanes 2 and 3 of an f32x4 moved to lanes 0 and 1.
    fn high_half(&mut self, x: Value) -> Value {
        let little = MemFlagsData::new().with_endianness(Endianness::Little);
        let bytes = self.b.ins().bitcast(types::I8X16, little, x);
        let mask: Vec<u8> = (8..16).chain(8..16).collect();
        let mask = self.b.func.dfg.immediates.push(ConstantData::from(mask));
        let moved = self.b.ins().shuffle(bytes, bytes, mask);
        self.b.ins().bitcast(types::F32X4, little, moved)
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

    /// [`Self::inner`] with the innermost dim in f32x4 steps: [`ROW_LANES`] elements a trip
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
        let (zero, end) = (self.zero, self.sizes[d]);
        let wide = self.b.ins().band_imm_s(end, !(ROW_LANES - 1));
        let whole = self.b.ins().band_imm_s(end, !(LANES - 1));
        self.vector = true;
        self.for_loop(zero, wide, ROW_LANES, &mut |t, i| {
            for u in 0..(ROW_LANES / LANES) as usize {
                point[d] = t.b.ins().iadd_imm_s(i, u as i64 * LANES);
                vector(t, point, u)?;
            }
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

    fn identity(&mut self, op: ReduceOp, dtype: DType) -> Result<(Type, Value)> {
        let ins = self.b.ins();
        Ok(
            if dtype == DType::Bool || matches!(op, ReduceOp::All | ReduceOp::Any) {
                let v = match op {
                    ReduceOp::Sum | ReduceOp::Max | ReduceOp::Any => 0,
                    ReduceOp::Prod | ReduceOp::Min | ReduceOp::All => 1,
                };
                (types::I8, ins.iconst(types::I8, v))
            } else if dtype.is_float() {
                let v = match op {
                    ReduceOp::Sum => 0.0,
                    ReduceOp::Prod => 1.0,
                    ReduceOp::Max => f64::NEG_INFINITY,
                    ReduceOp::Min => f64::INFINITY,
                    ReduceOp::All | ReduceOp::Any => return unsupported("all/any over floats"),
                };
                (types::F64, ins.f64const(v))
            } else {
                let v = match op {
                    ReduceOp::Sum => 0,
                    ReduceOp::Prod => 1,
                    ReduceOp::Max => i64::MIN,
                    ReduceOp::Min => i64::MAX,
                    ReduceOp::All | ReduceOp::Any => return unsupported("all/any over integers"),
                };
                (types::I64, ins.iconst(types::I64, v))
            },
        )
    }

    /// `acc = acc ⊕ x`, as `reduce_step` does.
    fn step(&mut self, op: ReduceOp, dtype: DType, acc: Variable, x: Value) -> Result<()> {
        let a = self.b.use_var(acc);
        // all/any fold truthiness whatever the dtype; the result is cast back at the end.
        let x = match op {
            ReduceOp::All | ReduceOp::Any if dtype != DType::Bool => {
                self.cast(x, dtype, DType::Bool)?
            }
            ReduceOp::Sum
            | ReduceOp::Prod
            | ReduceOp::Max
            | ReduceOp::Min
            | ReduceOp::All
            | ReduceOp::Any => x,
        };
        let next = if dtype == DType::Bool || matches!(op, ReduceOp::All | ReduceOp::Any) {
            match op {
                ReduceOp::Sum | ReduceOp::Max | ReduceOp::Any => self.b.ins().bor(a, x),
                ReduceOp::Prod | ReduceOp::Min | ReduceOp::All => self.b.ins().band(a, x),
            }
        } else if dtype.is_float() {
            let v = self.widen(dtype, x);
            match op {
                ReduceOp::Sum => self.b.ins().fadd(a, v),
                ReduceOp::Prod => self.b.ins().fmul(a, v),
                ReduceOp::Max | ReduceOp::Min => {
                    let cc = if op == ReduceOp::Max {
                        FloatCC::GreaterThan
                    } else {
                        FloatCC::LessThan
                    };
                    let better = self.b.ins().fcmp(cc, v, a);
                    let picked = self.b.ins().select(better, v, a);
                    let nan = self.b.ins().fcmp(FloatCC::Unordered, a, v);
                    let qnan = self.b.ins().f64const(f64::NAN);
                    self.b.ins().select(nan, qnan, picked)
                }
                ReduceOp::All | ReduceOp::Any => return unsupported("all/any over floats"),
            }
        } else {
            let v = self.extend(dtype, x);
            match op {
                ReduceOp::Sum => self.b.ins().iadd(a, v),
                ReduceOp::Prod => self.b.ins().imul(a, v),
                ReduceOp::Max => self.b.ins().smax(a, v),
                ReduceOp::Min => self.b.ins().smin(a, v),
                ReduceOp::All | ReduceOp::Any => return unsupported("all/any over integers"),
            }
        };
        self.b.def_var(acc, next);
        Ok(())
    }

    fn finish(&mut self, op: ReduceOp, dtype: DType, acc: Value) -> Result<Value> {
        Ok(if dtype == DType::Bool {
            acc
        } else if matches!(op, ReduceOp::All | ReduceOp::Any) {
            self.cast(acc, DType::Bool, dtype)?
        } else if dtype.is_float() {
            self.narrow_f64(dtype, acc)
        } else if dtype == DType::I64 {
            acc
        } else {
            self.b.ins().ireduce(ty(dtype), acc)
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
                || (level == Level::Element && self.live.as_ref().is_some_and(|live| !live[i]))
            {
                continue;
            }
            let v = |j: usize| vals[j].expect("invariant: SSA operands are computed first");
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
        let base = self.bases[i];
        let from = if base.is_some() { self.bases_level } else { 0 };
        // Outer dims first so loop-invariant parts hoist out of inner loops.
        let mut e = if base.is_some() { self.zero } else { offset };
        for (d, (p, s)) in point.iter().zip(strides).enumerate() {
            if d < from || *p == self.zero || (d == last && inner == Some(0)) {
                continue;
            }
            let t = if d == last && inner == Some(1) {
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
        if self.vector {
            if let (Some(r), Some(rows)) = (self.quad_row, self.transposed[i]) {
                return Ok(rows[r]);
            }
            let Instr::Load { index, .. } = &self.k.body[i] else {
                unreachable!("load() emits loads")
            };
            return Ok(match index.strides.get(self.lane_dim) {
                Some(0) => {
                    let s = self.b.ins().load(types::F32, mem(), addr, 0);
                    self.b.ins().splat(types::F32X4, s)
                }
                Some(1) => self.b.ins().load(types::F32X4, mem(), addr, 0),
                // A strided row: four scalar loads gathered into one vector.
                Some(_) | None => {
                    let (strides, _) = self.index[i].clone().expect("loads have an index");
                    let step = strides[self.lane_dim];
                    let step = self.b.ins().ishl_imm_s(step, 2);
                    let mut at = addr;
                    let first = self.b.ins().load(types::F32, mem(), at, 0);
                    let mut v = self.b.ins().splat(types::F32X4, first);
                    for lane in 1..LANES as u8 {
                        at = self.b.ins().iadd(at, step);
                        let x = self.b.ins().load(types::F32, mem(), at, 0);
                        v = self.b.ins().insertlane(v, x, lane);
                    }
                    v
                }
            });
        }
        Ok(match dtype {
            DType::F16 => {
                let bits = self.b.ins().uload16(types::I32, mem(), addr, 0);
                let call = self.b.ins().call(self.h.f16_to_f32, &[bits]);
                self.b.inst_results(call)[0]
            }
            DType::BF16 => {
                let bits = self.b.ins().uload16(types::I32, mem(), addr, 0);
                let bits = self.b.ins().ishl_imm_s(bits, 16);
                self.b.ins().bitcast(types::F32, MemFlagsData::new(), bits)
            }
            DType::F32
            | DType::F64
            | DType::I64
            | DType::I32
            | DType::I16
            | DType::I8
            | DType::U8
            | DType::Bool => self.b.ins().load(ty(dtype), mem(), addr, 0),
        })
    }

    fn store(&mut self, i: usize, arg: usize, point: &[Value], x: Value) -> Result<()> {
        let addr = self.address(i, arg, point);
        let dtype = self.k.args[arg].dtype;
        if self.vector {
            if self.inner_stride_is_zero(i) {
                return unsupported("broadcast store in a SIMD loop");
            }
            self.b.ins().store(mem(), x, addr, 0);
            return Ok(());
        }
        match dtype {
            DType::F16 => {
                let call = self.b.ins().call(self.h.f32_to_f16, &[x]);
                let bits = self.b.inst_results(call)[0];
                self.b.ins().istore16(mem(), bits, addr, 0);
            }
            DType::BF16 => {
                // The value is already a bf16 value held as f32: its top half is exact.
                let bits = self.b.ins().bitcast(types::I32, MemFlagsData::new(), x);
                let bits = self.b.ins().ushr_imm_s(bits, 16);
                self.b.ins().istore16(mem(), bits, addr, 0);
            }
            DType::F32
            | DType::F64
            | DType::I64
            | DType::I32
            | DType::I16
            | DType::I8
            | DType::U8
            | DType::Bool => {
                self.b.ins().store(mem(), x, addr, 0);
            }
        }
        Ok(())
    }

    fn constant(&mut self, value: Scalar, dtype: DType) -> Value {
        let v = value.cast(dtype);
        let s = match dtype {
            DType::F16 | DType::BF16 | DType::F32 => {
                self.b.ins().f32const(round_float(v.as_f64(), dtype) as f32)
            }
            DType::F64 => self.b.ins().f64const(v.as_f64()),
            DType::Bool => self.b.ins().iconst(types::I8, v.as_bool() as i64),
            DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::U8 => {
                self.b.ins().iconst(ty(dtype), v.as_i64())
            }
        };
        if self.vector {
            self.b.ins().splat(types::F32X4, s)
        } else {
            s
        }
    }

    fn fconst(&mut self, t: Type, v: f64) -> Value {
        match t {
            types::F64 => self.b.ins().f64const(v),
            types::F32X4 => {
                let s = self.b.ins().f32const(v as f32);
                self.b.ins().splat(types::F32X4, s)
            }
            _ => self.b.ins().f32const(v as f32),
        }
    }

    /// A float value of `dtype` widened to f64.
    fn widen(&mut self, dtype: DType, x: Value) -> Value {
        if dtype == DType::F64 {
            x
        } else {
            self.b.ins().fpromote(types::F64, x)
        }
    }

    /// An f64 rounded once to the float `dtype` (held as its register type).
    fn narrow_f64(&mut self, dtype: DType, x: Value) -> Value {
        match dtype {
            DType::F16 | DType::BF16 => {
                let f = if dtype == DType::F16 {
                    self.h.round_f16
                } else {
                    self.h.round_bf16
                };
                let call = self.b.ins().call(f, &[x]);
                self.b.inst_results(call)[0]
            }
            DType::F32 => self.b.ins().fdemote(types::F32, x),
            DType::F64
            | DType::Bool
            | DType::U8
            | DType::I8
            | DType::I16
            | DType::I32
            | DType::I64 => x,
        }
    }

    /// Rounds the result of an exactly rounded f32 op to f16/bf16 (f32 carries enough bits
    /// for that double rounding to be exact); identity for f32 and f64.
    fn round(&mut self, dtype: DType, x: Value) -> Value {
        match dtype {
            DType::F16 | DType::BF16 => {
                let w = self.b.ins().fpromote(types::F64, x);
                self.narrow_f64(dtype, w)
            }
            DType::F32
            | DType::F64
            | DType::Bool
            | DType::U8
            | DType::I8
            | DType::I16
            | DType::I32
            | DType::I64 => x,
        }
    }

    /// An integer (or bool) value widened to i64 by its signedness.
    fn extend(&mut self, dtype: DType, x: Value) -> Value {
        if dtype == DType::I64 {
            x
        } else if is_signed(dtype) {
            self.b.ins().sextend(types::I64, x)
        } else {
            self.b.ins().uextend(types::I64, x)
        }
    }

    fn narrow(&mut self, dtype: DType, x: Value) -> Value {
        if ty(dtype) == types::I64 {
            x
        } else {
            self.b.ins().ireduce(ty(dtype), x)
        }
    }

    /// A float helper call `f(code, args…)` in f64, per lane in a SIMD loop.
    fn call_f64(&mut self, f: FuncRef, code: i64, args: &[Value], compute: DType) -> Value {
        if self.vector {
            let mut out = self.fconst(types::F32X4, 0.0);
            for lane in 0..LANES as u8 {
                let mut call_args = vec![self.b.ins().iconst(types::I64, code)];
                for a in args {
                    let s = self.b.ins().extractlane(*a, lane);
                    call_args.push(self.b.ins().fpromote(types::F64, s));
                }
                let call = self.b.ins().call(f, &call_args);
                let r = self.b.inst_results(call)[0];
                let r = self.b.ins().fdemote(types::F32, r);
                out = self.b.ins().insertlane(out, r, lane);
            }
            return out;
        }
        let mut call_args = vec![self.b.ins().iconst(types::I64, code)];
        for a in args {
            call_args.push(self.widen(compute, *a));
        }
        let call = self.b.ins().call(f, &call_args);
        let r = self.b.inst_results(call)[0];
        self.narrow_f64(compute, r)
    }

    fn bool_const(&mut self, v: bool) -> Value {
        if self.vector {
            let s = self.b.ins().iconst(types::I32, -(v as i64));
            self.b.ins().splat(types::I32X4, s)
        } else {
            self.b.ins().iconst(types::I8, v as i64)
        }
    }

    fn unary(&mut self, op: UnaryOp, x: Value, compute: DType) -> Result<Value> {
        if compute.is_float() {
            return Ok(self.unary_float(op, x, compute));
        }
        if compute == DType::Bool {
            return Ok(match op {
                UnaryOp::LogicalNot | UnaryOp::BitwiseNot => self.b.ins().bxor_imm_s(x, 1),
                UnaryOp::IsNan | UnaryOp::IsInf => self.bool_const(false),
                UnaryOp::IsFinite => self.bool_const(true),
                UnaryOp::Neg
                | UnaryOp::Abs
                | UnaryOp::Sign
                | UnaryOp::Exp
                | UnaryOp::Expm1
                | UnaryOp::Log
                | UnaryOp::Log2
                | UnaryOp::Log1p
                | UnaryOp::Sqrt
                | UnaryOp::Rsqrt
                | UnaryOp::Reciprocal
                | UnaryOp::Square
                | UnaryOp::Sin
                | UnaryOp::Cos
                | UnaryOp::Tan
                | UnaryOp::Tanh
                | UnaryOp::Sigmoid
                | UnaryOp::Relu
                | UnaryOp::Erf
                | UnaryOp::Floor
                | UnaryOp::Ceil
                | UnaryOp::Round
                | UnaryOp::Trunc => x,
            });
        }
        let t = ty(compute);
        let signed = is_signed(compute);
        Ok(match op {
            UnaryOp::Neg => self.b.ins().ineg(x),
            UnaryOp::Abs => {
                if signed {
                    self.b.ins().iabs(x)
                } else {
                    x
                }
            }
            UnaryOp::Sign => {
                let zero = self.b.ins().iconst(t, 0);
                let one = self.b.ins().iconst(t, 1);
                if signed {
                    let minus = self.b.ins().iconst(t, -1);
                    let pos = self.b.ins().icmp(IntCC::SignedGreaterThan, x, zero);
                    let neg = self.b.ins().icmp(IntCC::SignedLessThan, x, zero);
                    let m = self.b.ins().select(neg, minus, zero);
                    self.b.ins().select(pos, one, m)
                } else {
                    let nz = self.b.ins().icmp(IntCC::NotEqual, x, zero);
                    self.b.ins().select(nz, one, zero)
                }
            }
            UnaryOp::Square => self.b.ins().imul(x, x),
            UnaryOp::Relu => {
                if signed {
                    let zero = self.b.ins().iconst(t, 0);
                    self.b.ins().smax(x, zero)
                } else {
                    x
                }
            }
            UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Trunc => x,
            UnaryOp::BitwiseNot => self.b.ins().bnot(x),
            UnaryOp::LogicalNot => self.b.ins().icmp_imm_s(IntCC::Equal, x, 0),
            UnaryOp::IsNan | UnaryOp::IsInf => self.b.ins().iconst(types::I8, 0),
            UnaryOp::IsFinite => self.b.ins().iconst(types::I8, 1),
            UnaryOp::Exp
            | UnaryOp::Expm1
            | UnaryOp::Log
            | UnaryOp::Log2
            | UnaryOp::Log1p
            | UnaryOp::Sqrt
            | UnaryOp::Rsqrt
            | UnaryOp::Reciprocal
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Tan
            | UnaryOp::Tanh
            | UnaryOp::Sigmoid
            | UnaryOp::Erf => {
                let w = self.extend(compute, x);
                let code = self.b.ins().iconst(types::I64, unary_code(op));
                let call = self.b.ins().call(self.h.unary_i64, &[code, w]);
                let r = self.b.inst_results(call)[0];
                self.narrow(compute, r)
            }
        })
    }

    fn unary_float(&mut self, op: UnaryOp, x: Value, compute: DType) -> Value {
        let t = if self.vector {
            types::F32X4
        } else {
            ty(compute)
        };
        match op {
            UnaryOp::Neg => self.b.ins().fneg(x),
            UnaryOp::Abs => self.b.ins().fabs(x),
            UnaryOp::Square => {
                let r = self.b.ins().fmul(x, x);
                self.round(compute, r)
            }
            UnaryOp::Sqrt => {
                let r = self.b.ins().sqrt(x);
                self.round(compute, r)
            }
            UnaryOp::Reciprocal => {
                let one = self.fconst(t, 1.0);
                let r = self.b.ins().fdiv(one, x);
                self.round(compute, r)
            }
            UnaryOp::Floor => self.b.ins().floor(x),
            UnaryOp::Ceil => self.b.ins().ceil(x),
            UnaryOp::Trunc => self.b.ins().trunc(x),
            UnaryOp::Round => self.b.ins().nearest(x),
            // fmax propagates NaN and orders -0 below +0: exactly `x > 0 || isnan ? x : 0`.
            UnaryOp::Relu => {
                let zero = self.fconst(t, 0.0);
                self.b.ins().fmax(x, zero)
            }
            UnaryOp::Sign => {
                let zero = self.fconst(t, 0.0);
                let one = self.fconst(t, 1.0);
                let minus = self.fconst(t, -1.0);
                let pos = self.b.ins().fcmp(FloatCC::GreaterThan, x, zero);
                let neg = self.b.ins().fcmp(FloatCC::LessThan, x, zero);
                let m = self.select(neg, minus, zero);
                self.select(pos, one, m)
            }
            UnaryOp::BitwiseNot => x,
            UnaryOp::LogicalNot => {
                let zero = self.fconst(t, 0.0);
                self.b.ins().fcmp(FloatCC::Equal, x, zero)
            }
            UnaryOp::IsNan => self.b.ins().fcmp(FloatCC::Unordered, x, x),
            UnaryOp::IsInf | UnaryOp::IsFinite => {
                let a = self.b.ins().fabs(x);
                let inf = self.fconst(t, f64::INFINITY);
                let cc = if op == UnaryOp::IsInf {
                    FloatCC::Equal
                } else {
                    FloatCC::LessThan
                };
                self.b.ins().fcmp(cc, a, inf)
            }
            // f32 (and f16/bf16, computed in f32) transcendentals inline; f64 calls libm.
            UnaryOp::Exp
            | UnaryOp::Expm1
            | UnaryOp::Log
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Tanh
            | UnaryOp::Sigmoid
            | UnaryOp::Erf
                if compute != DType::F64 =>
            {
                let slow = Fallback {
                    func: self.h.unary_f64,
                    code: unary_code(op),
                };
                let r = math::unary(&mut self.b, op, x, slow);
                self.round(compute, r)
            }
            UnaryOp::Rsqrt
            | UnaryOp::Exp
            | UnaryOp::Expm1
            | UnaryOp::Log
            | UnaryOp::Log2
            | UnaryOp::Log1p
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Tan
            | UnaryOp::Tanh
            | UnaryOp::Sigmoid
            | UnaryOp::Erf => self.call_f64(self.h.unary_f64, unary_code(op), &[x], compute),
        }
    }

    /// `cond ? a : b`; in a SIMD loop `cond` is a lane mask.
    fn select(&mut self, cond: Value, a: Value, b: Value) -> Value {
        if self.vector {
            let mask = self
                .b
                .ins()
                .bitcast(types::F32X4, MemFlagsData::new(), cond);
            self.b.ins().bitselect(mask, a, b)
        } else {
            self.b.ins().select(cond, a, b)
        }
    }

    fn binary(
        &mut self,
        op: BinaryOp,
        a: Value,
        b: Value,
        compute: DType,
        exponent: Option<f64>,
    ) -> Result<Value> {
        if compute.is_float() {
            return Ok(self.binary_float(op, a, b, compute, exponent));
        }
        if compute == DType::Bool {
            return Ok(match op {
                BinaryOp::Eq => self.b.ins().icmp(IntCC::Equal, a, b),
                BinaryOp::Ne | BinaryOp::LogicalXor | BinaryOp::BitXor | BinaryOp::Sub => {
                    self.b.ins().bxor(a, b)
                }
                BinaryOp::Lt => self.b.ins().icmp(IntCC::UnsignedLessThan, a, b),
                BinaryOp::Le => self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, a, b),
                BinaryOp::Gt => self.b.ins().icmp(IntCC::UnsignedGreaterThan, a, b),
                BinaryOp::Ge => self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, a, b),
                BinaryOp::LogicalAnd | BinaryOp::BitAnd | BinaryOp::Mul | BinaryOp::Minimum => {
                    self.b.ins().band(a, b)
                }
                BinaryOp::LogicalOr | BinaryOp::BitOr | BinaryOp::Add | BinaryOp::Maximum => {
                    self.b.ins().bor(a, b)
                }
                BinaryOp::Div
                | BinaryOp::DivTrunc
                | BinaryOp::DivFloor
                | BinaryOp::Remainder
                | BinaryOp::Fmod
                | BinaryOp::Pow => {
                    let (x, y) = (self.extend(DType::Bool, a), self.extend(DType::Bool, b));
                    let r = self.int_helper(op, x, y);
                    self.b.ins().icmp_imm_s(IntCC::NotEqual, r, 0)
                }
                BinaryOp::Atan2 => return unsupported("atan2 over bools"),
            });
        }
        let signed = is_signed(compute);
        let cc = |s: IntCC, u: IntCC| if signed { s } else { u };
        Ok(match op {
            BinaryOp::Add => self.b.ins().iadd(a, b),
            BinaryOp::Sub => self.b.ins().isub(a, b),
            BinaryOp::Mul => self.b.ins().imul(a, b),
            BinaryOp::Div
            | BinaryOp::DivTrunc
            | BinaryOp::DivFloor
            | BinaryOp::Remainder
            | BinaryOp::Fmod
            | BinaryOp::Pow => {
                let (x, y) = (self.extend(compute, a), self.extend(compute, b));
                let r = self.int_helper(op, x, y);
                self.narrow(compute, r)
            }
            BinaryOp::Maximum => {
                if signed {
                    self.b.ins().smax(a, b)
                } else {
                    self.b.ins().umax(a, b)
                }
            }
            BinaryOp::Minimum => {
                if signed {
                    self.b.ins().smin(a, b)
                } else {
                    self.b.ins().umin(a, b)
                }
            }
            BinaryOp::Atan2 => return unsupported("atan2 over integers"),
            BinaryOp::Eq => self.b.ins().icmp(IntCC::Equal, a, b),
            BinaryOp::Ne => self.b.ins().icmp(IntCC::NotEqual, a, b),
            BinaryOp::Lt => {
                let c = cc(IntCC::SignedLessThan, IntCC::UnsignedLessThan);
                self.b.ins().icmp(c, a, b)
            }
            BinaryOp::Le => {
                let c = cc(IntCC::SignedLessThanOrEqual, IntCC::UnsignedLessThanOrEqual);
                self.b.ins().icmp(c, a, b)
            }
            BinaryOp::Gt => {
                let c = cc(IntCC::SignedGreaterThan, IntCC::UnsignedGreaterThan);
                self.b.ins().icmp(c, a, b)
            }
            BinaryOp::Ge => {
                let c = cc(
                    IntCC::SignedGreaterThanOrEqual,
                    IntCC::UnsignedGreaterThanOrEqual,
                );
                self.b.ins().icmp(c, a, b)
            }
            BinaryOp::LogicalAnd | BinaryOp::LogicalOr | BinaryOp::LogicalXor => {
                let x = self.b.ins().icmp_imm_s(IntCC::NotEqual, a, 0);
                let y = self.b.ins().icmp_imm_s(IntCC::NotEqual, b, 0);
                self.logical(op, x, y)
            }
            BinaryOp::BitAnd => self.b.ins().band(a, b),
            BinaryOp::BitOr => self.b.ins().bor(a, b),
            BinaryOp::BitXor => self.b.ins().bxor(a, b),
        })
    }

    /// and/or/xor of two truth values (`LogicalAnd`/`LogicalOr`, anything else is xor).
    fn logical(&mut self, op: BinaryOp, x: Value, y: Value) -> Value {
        if op == BinaryOp::LogicalAnd {
            self.b.ins().band(x, y)
        } else if op == BinaryOp::LogicalOr {
            self.b.ins().bor(x, y)
        } else {
            self.b.ins().bxor(x, y)
        }
    }

    fn int_helper(&mut self, op: BinaryOp, x: Value, y: Value) -> Value {
        let code = self.b.ins().iconst(types::I64, binary_code(op));
        let call = self.b.ins().call(self.h.binary_i64, &[code, x, y]);
        self.b.inst_results(call)[0]
    }

    fn binary_float(
        &mut self,
        op: BinaryOp,
        a: Value,
        b: Value,
        compute: DType,
        exponent: Option<f64>,
    ) -> Value {
        let t = if self.vector {
            types::F32X4
        } else {
            ty(compute)
        };
        let cmp = |s: &mut Self, cc: FloatCC| s.b.ins().fcmp(cc, a, b);
        match op {
            BinaryOp::Add => {
                let r = self.b.ins().fadd(a, b);
                self.round(compute, r)
            }
            BinaryOp::Sub => {
                let r = self.b.ins().fsub(a, b);
                self.round(compute, r)
            }
            BinaryOp::Mul => {
                let r = self.b.ins().fmul(a, b);
                self.round(compute, r)
            }
            BinaryOp::Div => {
                let r = self.b.ins().fdiv(a, b);
                self.round(compute, r)
            }
            // x² is exact in f64, so squaring in the compute type rounds once like powf does.
            BinaryOp::Pow if exponent == Some(2.0) => {
                let r = self.b.ins().fmul(a, a);
                self.round(compute, r)
            }
            BinaryOp::Pow if exponent == Some(1.0) => a,
            // x³ as two f32 products (gelu's cube): within 1 ulp of powf, no log/exp.
            BinaryOp::Pow if exponent == Some(3.0) && compute != DType::F64 => {
                let r = self.b.ins().fmul(a, a);
                let r = self.b.ins().fmul(r, a);
                self.round(compute, r)
            }
            BinaryOp::Pow if compute != DType::F64 => {
                let r = math::pow(&mut self.b, a, b);
                self.round(compute, r)
            }
            BinaryOp::Maximum => self.b.ins().fmax(a, b),
            BinaryOp::Minimum => self.b.ins().fmin(a, b),
            BinaryOp::Eq => cmp(self, FloatCC::Equal),
            BinaryOp::Ne => cmp(self, FloatCC::NotEqual),
            BinaryOp::Lt => cmp(self, FloatCC::LessThan),
            BinaryOp::Le => cmp(self, FloatCC::LessThanOrEqual),
            BinaryOp::Gt => cmp(self, FloatCC::GreaterThan),
            BinaryOp::Ge => cmp(self, FloatCC::GreaterThanOrEqual),
            BinaryOp::LogicalAnd | BinaryOp::LogicalOr | BinaryOp::LogicalXor => {
                let zero = self.fconst(t, 0.0);
                let x = self.b.ins().fcmp(FloatCC::NotEqual, a, zero);
                let y = self.b.ins().fcmp(FloatCC::NotEqual, b, zero);
                self.logical(op, x, y)
            }
            // Refused by the frontend; the interpreter's answer is NaN.
            BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor => self.fconst(t, f64::NAN),
            BinaryOp::DivTrunc
            | BinaryOp::DivFloor
            | BinaryOp::Remainder
            | BinaryOp::Fmod
            | BinaryOp::Pow
            | BinaryOp::Atan2 => {
                if op == BinaryOp::DivTrunc && !self.vector {
                    let (x, y) = (self.widen(compute, a), self.widen(compute, b));
                    let q = self.b.ins().fdiv(x, y);
                    let q = self.b.ins().trunc(q);
                    return self.narrow_f64(compute, q);
                }
                self.call_f64(self.h.binary_f64, binary_code(op), &[a, b], compute)
            }
        }
    }

    fn cast(&mut self, x: Value, from: DType, to: DType) -> Result<Value> {
        if from == to {
            return Ok(x);
        }
        let ins_float = |d: DType| d.is_float();
        Ok(if ins_float(from) {
            if to == DType::Bool {
                let zero = self.fconst(ty(from), 0.0);
                self.b.ins().fcmp(FloatCC::NotEqual, x, zero)
            } else if to.is_float() {
                match (from, to) {
                    // f16/bf16 values are exact f32 values already.
                    (DType::F16 | DType::BF16, DType::F32) => x,
                    (_, DType::F64) => self.b.ins().fpromote(types::F64, x),
                    _ => {
                        let w = self.widen(from, x);
                        self.narrow_f64(to, w)
                    }
                }
            } else {
                // float_to_i64: truncation in range, i64::MIN for NaN and out of range.
                let w = self.widen(from, x);
                let lo = self.b.ins().f64const(-9_223_372_036_854_775_808.0);
                let hi = self.b.ins().f64const(9_223_372_036_854_775_808.0);
                let ge = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, w, lo);
                let lt = self.b.ins().fcmp(FloatCC::LessThan, w, hi);
                let ok = self.b.ins().band(ge, lt);
                let v = self.b.ins().fcvt_to_sint_sat(types::I64, w);
                let min = self.b.ins().iconst(types::I64, i64::MIN);
                let r = self.b.ins().select(ok, v, min);
                self.narrow(to, r)
            }
        } else {
            let w = self.extend(from, x);
            if to == DType::Bool {
                self.b.ins().icmp_imm_s(IntCC::NotEqual, w, 0)
            } else if to.is_float() {
                let f = self.b.ins().fcvt_from_sint(types::F64, w);
                self.narrow_f64(to, f)
            } else {
                self.narrow(to, w)
            }
        })
    }
}
