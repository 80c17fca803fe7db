//! Render: kernel IR → CUDA C. Pure (no CUDA needed) and snapshot-tested.
//!
//! Elementwise kernels (`reduce_axes == 0`) are one grid-stride loop over the flattened
//! iteration space, with a `float4` loop in front when every access is dense f32 and aligned.
//! Reduction kernels give each row (kept point) to one block: row-level instructions run once
//! per row, each `Reduce` is one pass of the block's threads over the row (strided by
//! `blockDim.x`) followed by a warp-shuffle + shared-memory block reduction, and a final pass
//! runs the element-level stores (softmax, layernorm: one kernel, several passes), exactly the
//! passes of the reference interpreter.
//!
//! Sizes, strides and offsets are kernel parameters (`long long`), never constants: only the
//! structure is in the source (the dtypes, the op DAG, which dims have size 1, which strides
//! are zero, which accesses are dense), so one compiled kernel serves every size with that
//! structure and the source text itself is the compile-cache key. [`render`] also returns the
//! parameter values for the kernel's own sizes and the launch shape.

use smelt_ir::kernel::{Index, Instr, Kernel, Level};
use smelt_ir::random::RandomDist;
use smelt_ir::{BinaryOp, DType, OnBool, OnInt, REAL_KERNELS, ReduceOp, Scalar, UnaryOp};
use std::fmt::Write as _;

/// The helpers every kernel uses (scalar semantics, block reduction).
pub const PRELUDE: &str = concat!(include_str!("prelude.cuh"), include_str!("random.cuh"));

/// Threads per block of every kernel (a multiple of 32; row kernels may launch fewer).
pub const BLOCK: u32 = 256;
/// The most blocks a launch uses; grid-stride loops cover the rest.
pub const MAX_GRID: u64 = 65_536;

/// A rendered kernel: its CUDA C, entry point, scalar parameters and launch shape.
#[derive(Clone, Debug, PartialEq)]
pub struct CudaKernel {
    /// The `extern "C"` function name.
    pub entry: String,
    /// The kernel function alone (no prelude): what the snapshots hold.
    pub body: String,
    /// The `long long` parameters after the buffers, in signature order, with their values
    /// for this kernel's sizes.
    pub scalars: Vec<(String, i64)>,
    pub grid: u32,
    pub block: u32,
    /// Whether the elementwise loop has a `float4` path.
    pub vectorized: bool,
}

impl CudaKernel {
    /// The complete translation unit: prelude and kernel.
    pub fn source(&self) -> String {
        format!("{PRELUDE}\n{}", self.body)
    }

    /// Whether a launch has nothing to do (an empty iteration space).
    pub fn is_empty_launch(&self) -> bool {
        self.grid == 0
    }
}

/// The C type a buffer of `dtype` holds.
pub fn storage_type(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "bool",
        DType::U8 => "unsigned char",
        DType::I8 => "signed char",
        DType::I16 => "short",
        DType::I32 => "int",
        DType::I64 => "long long",
        DType::F16 => "sm_half",
        DType::BF16 => "sm_bfloat16",
        DType::F32 => "float",
        DType::F64 => "double",
        // CUDA's pairs: the layout of a complex buffer (real, imaginary), for library code;
        // generated kernels address its parts as floats (kernel IR is real).
        DType::C64 => "float2",
        DType::C128 => "double2",
    }
}

/// The C type an SSA value of `dtype` lives in: its compute dtype's (f16/bf16 in float).
pub(crate) fn value_type(dtype: DType) -> &'static str {
    storage_type(dtype.compute_dtype())
}

/// `expr` (a float value) rounded to `dtype` where the dtype is narrower than float.
fn round_to(dtype: DType, expr: String) -> String {
    match dtype {
        DType::F16 => format!("sm_round_f16({expr})"),
        DType::BF16 => format!("sm_round_bf16({expr})"),
        DType::Bool
        | DType::U8
        | DType::I8
        | DType::I16
        | DType::I32
        | DType::I64
        | DType::F32
        | DType::F64 => expr,
        DType::C64 | DType::C128 => panic!("{REAL_KERNELS}"),
    }
}

/// The C literal of `value` as a value of `dtype` (after smelt's cast).
fn literal(value: Scalar, dtype: DType) -> String {
    let v = value.cast(dtype);
    match dtype {
        DType::Bool => (if v.as_bool() { "true" } else { "false" }).to_string(),
        DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
            let i = v.as_i64();
            let lit = if i == i64::MIN {
                "SM_I64_MIN".to_string()
            } else {
                format!("{i}LL")
            };
            format!("({})({lit})", storage_type(dtype))
        }
        DType::F16 | DType::BF16 | DType::F32 => {
            let x = v.as_f64() as f32;
            if x.is_nan() {
                "__int_as_float(0x7fc00000)".to_string()
            } else if x.is_infinite() {
                format!(
                    "({}__int_as_float(0x7f800000))",
                    if x < 0.0 { "-" } else { "" }
                )
            } else {
                format!("{x:?}f")
            }
        }
        DType::F64 => {
            let x = v.as_f64();
            if x.is_nan() {
                "__longlong_as_double(0x7ff8000000000000LL)".to_string()
            } else if x.is_infinite() {
                format!(
                    "({}__longlong_as_double(0x7ff0000000000000LL))",
                    if x < 0.0 { "-" } else { "" }
                )
            } else {
                format!("{x:?}")
            }
        }
        DType::C64 | DType::C128 => panic!("{REAL_KERNELS}"),
    }
}

/// A contiguous run of kernel dims walked by one flat loop variable.
struct Group {
    /// The dims of the run whose size is not 1, in order.
    dims: Vec<usize>,
    /// The flat loop variable (`i`, `row`, `j`).
    flat: &'static str,
    /// Prefix of the unravelled per-dim variables.
    prefix: &'static str,
}

/// How one index moves along one group.
enum Walk {
    /// Every stride over the group is 0 (broadcast): no term.
    Zero,
    /// Row-major dense with unit stride: the term is the flat variable.
    Dense,
    /// Row-major dense up to a runtime scale: `flat * scale`.
    Scaled,
    /// Anything else: `Σ idx_d * stride_d` over the unravelled dims.
    General,
}

fn walk(kernel: &Kernel, index: &Index, group: &Group) -> Walk {
    let dims: Vec<usize> = group
        .dims
        .iter()
        .copied()
        .filter(|&d| index.strides[d] != 0)
        .collect();
    if dims.is_empty() {
        return Walk::Zero;
    }
    if dims.len() != group.dims.len() {
        return Walk::General;
    }
    let last = *group.dims.last().expect("non-empty");
    let scale = index.strides[last];
    let mut expect = scale;
    for &d in group.dims.iter().rev() {
        if index.strides[d] != expect {
            return Walk::General;
        }
        expect *= kernel.shape[d] as isize;
    }
    if scale == 1 {
        Walk::Dense
    } else {
        Walk::Scaled
    }
}

/// Division by a size `d` (1 ≤ d ≤ 2^31) of numerators below 2^31 as a multiply-high, an add
/// and a shift (`sm_udiv`): `shift` is ⌈log2 d⌉ and `magic` is 2^32 (2^shift − d) / d + 1
/// (Granlund and Montgomery's round-up method, as PyTorch's `IntDivider` uses it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divider {
    pub magic: u32,
    pub shift: u32,
}

impl Divider {
    pub fn new(d: u32) -> Divider {
        assert!(
            (1..=1 << 31).contains(&d),
            "invariant: a divider divides by 1..=2^31, got {d}"
        );
        let shift = 32 - (d - 1).leading_zeros();
        let magic = ((1u64 << 32) * ((1u64 << shift) - d as u64)) / d as u64 + 1;
        Divider {
            magic: magic as u32,
            shift,
        }
    }

    /// What `sm_udiv` computes on the device, for `n` below 2^31.
    pub fn divide(self, n: u32) -> u32 {
        let high = ((n as u64 * self.magic as u64) >> 32) as u32;
        (high + n) >> self.shift
    }
}

/// Builds the kernel text and its scalar parameters.
struct Renderer<'k> {
    kernel: &'k Kernel,
    types: Vec<Option<DType>>,
    levels: Vec<Level>,
    scalars: Vec<(String, i64)>,
    /// For each Load/Store instruction: its index slot `k` (offsets `off{k}`, strides `st{k}_{d}`).
    slot: Vec<usize>,
}

impl<'k> Renderer<'k> {
    fn param(&mut self, name: String, value: i64) -> String {
        if !self.scalars.iter().any(|(n, _)| *n == name) {
            self.scalars.push((name.clone(), value));
        }
        name
    }

    fn size(&mut self, d: usize) -> String {
        self.param(format!("n{d}"), self.kernel.shape[d] as i64)
    }

    fn count(&mut self, group: &Group) -> String {
        if group.dims.is_empty() {
            return "1LL".to_string();
        }
        let parts: Vec<String> = group.dims.iter().map(|&d| self.size(d)).collect();
        parts.join(" * ")
    }

    /// The address term of `index` (instruction `i`) along `group`.
    fn term(&mut self, i: usize, index: &Index, group: &Group) -> Option<String> {
        let k = self.slot[i];
        match walk(self.kernel, index, group) {
            Walk::Zero => None,
            Walk::Dense => Some(group.flat.to_string()),
            Walk::Scaled => {
                let last = *group.dims.last().expect("scaled walks a dim");
                let s = self.param(format!("st{k}_{last}"), index.strides[last] as i64);
                Some(format!("{} * {s}", group.flat))
            }
            Walk::General => {
                let mut terms = vec![];
                for &d in &group.dims {
                    if index.strides[d] != 0 {
                        let s = self.param(format!("st{k}_{d}"), index.strides[d] as i64);
                        terms.push(format!("{}{d} * {s}", group.prefix));
                    }
                }
                Some(terms.join(" + "))
            }
        }
    }

    /// The address of `index` (instruction `i`) in the given groups.
    fn address(&mut self, i: usize, index: &Index, groups: &[&Group]) -> String {
        let k = self.slot[i];
        let mut parts = vec![self.param(format!("off{k}"), index.offset as i64)];
        for g in groups {
            if let Some(t) = self.term(i, index, g) {
                parts.push(t);
            }
        }
        parts.join(" + ")
    }

    /// Unravels `group`'s flat variable into per-dim variables when some access needs them.
    /// Where the group has fewer than 2^31 points (structure: it is in the source), each
    /// division is a multiply-high and a shift by a [`Divider`] the host worked out for the
    /// size: a 64-bit division is a loop of some 70 instructions on the device, and it was
    /// most of the time of a bias add or GELU over `[2048, 3072]`.
    fn unravel(&mut self, group: &Group, out: &mut String, indent: &str) {
        let general = self.kernel.body.iter().any(|instr| match instr {
            Instr::Load { index, .. }
            | Instr::Store { index, .. }
            | Instr::Random { index, .. } => {
                matches!(walk(self.kernel, index, group), Walk::General)
            }
            Instr::Const { .. }
            | Instr::Unary { .. }
            | Instr::Binary { .. }
            | Instr::Where { .. }
            | Instr::Cast { .. }
            | Instr::Reduce { .. } => false,
        });
        if !general {
            return;
        }
        let points: u64 = group
            .dims
            .iter()
            .map(|&d| self.kernel.shape[d] as u64)
            .product();
        // (Each dim below 2^31 too: an empty group can hold a dim no divider takes.)
        let narrow = points < 1 << 31
            && group
                .dims
                .iter()
                .all(|&d| (self.kernel.shape[d] as u64) < 1 << 31);
        let ty = if narrow { "unsigned int" } else { "long long" };
        let _ = writeln!(out, "{indent}{ty} rest = ({ty}){};", group.flat);
        let dims = group.dims.clone();
        for (pos, &d) in dims.iter().enumerate().rev() {
            let p = group.prefix;
            if pos == 0 {
                let _ = writeln!(out, "{indent}const long long {p}{d} = rest;");
            } else if narrow {
                let n = self.size(d);
                // An empty dim leaves nothing to unravel: any divider serves.
                let div = Divider::new((self.kernel.shape[d] as u32).max(1));
                let magic = self.param(format!("dm{d}"), div.magic as i64);
                let shift = self.param(format!("ds{d}"), div.shift as i64);
                let _ = writeln!(
                    out,
                    "{indent}const unsigned int q{p}{d} = sm_udiv(rest, (unsigned int){magic}, \
                     (unsigned int){shift});"
                );
                let _ = writeln!(
                    out,
                    "{indent}const long long {p}{d} = rest - q{p}{d} * (unsigned int){n}; \
                     rest = q{p}{d};"
                );
            } else {
                let n = self.size(d);
                let _ = writeln!(
                    out,
                    "{indent}const long long {p}{d} = rest % {n}; rest /= {n};"
                );
            }
        }
    }

    fn v(&self, x: usize) -> String {
        format!("v{x}")
    }

    /// The C expression of a value-producing instruction other than Load and Reduce.
    fn expr(&self, i: usize) -> String {
        match &self.kernel.body[i] {
            Instr::Const { value, dtype } => literal(*value, *dtype),
            Instr::Unary { op, x, compute } => unary_expr(*op, &self.v(*x), *compute),
            Instr::Binary { op, a, b, compute } => {
                let square = *op == BinaryOp::Pow
                    && compute.is_float()
                    && matches!(
                        self.kernel.body[*b],
                        Instr::Const { value, .. } if value.as_f64() == 2.0
                    );
                if square {
                    let a = self.v(*a);
                    round_to(*compute, format!("{a} * {a}"))
                } else {
                    binary_expr(*op, &self.v(*a), &self.v(*b), *compute)
                }
            }
            Instr::Where { cond, a, b } => {
                format!("({} ? {} : {})", self.v(*cond), self.v(*a), self.v(*b))
            }
            Instr::Cast { x, to } => {
                let from = self.types[*x].expect("cast of a value");
                cast_expr(&self.v(*x), from, *to)
            }
            Instr::Load { .. }
            | Instr::Reduce { .. }
            | Instr::Store { .. }
            | Instr::Random { .. } => {
                unreachable!("handled by the caller")
            }
        }
    }

    /// Emits instruction `i` (not a Reduce) with its addresses in `groups`; a store runs only
    /// where `guard` holds (the one thread that writes a row-level value).
    fn emit(
        &mut self,
        i: usize,
        groups: &[&Group],
        guard: Option<&str>,
        out: &mut String,
        indent: &str,
    ) {
        let kernel = self.kernel;
        match &kernel.body[i] {
            Instr::Load { arg, index } => {
                let addr = self.address(i, index, groups);
                let dtype = kernel.args[*arg].dtype;
                let load = load_expr(&format!("a{arg}[{addr}]"), dtype);
                let _ = writeln!(out, "{indent}const {} v{i} = {load};", value_type(dtype));
            }
            Instr::Store { arg, index, x } => {
                let addr = self.address(i, index, groups);
                let value = store_expr(&self.v(*x), kernel.args[*arg].dtype);
                let guard = guard.map_or(String::new(), |g| format!("if ({g}) "));
                let _ = writeln!(out, "{indent}{guard}a{arg}[{addr}] = {value};");
            }
            Instr::Reduce { .. } => unreachable!("reductions are emitted by the row driver"),
            // The position is the index's "address": offset plus the point's strided sum.
            Instr::Random {
                dist,
                dtype,
                seed,
                offset,
                index,
            } => {
                let position = self.address(i, index, groups);
                let value = dist.value_dtype(*dtype);
                let f = random_fn(*dist, *dtype);
                let _ = writeln!(
                    out,
                    "{indent}const {} v{i} = {f}(v{seed}, v{offset}, {position});",
                    value_type(value)
                );
            }
            Instr::Const { .. }
            | Instr::Unary { .. }
            | Instr::Binary { .. }
            | Instr::Where { .. }
            | Instr::Cast { .. } => {
                let t = value_type(self.types[i].expect("a value"));
                let e = self.expr(i);
                let _ = writeln!(out, "{indent}const {t} v{i} = {e};");
            }
        }
    }
}

/// The prelude's function drawing `dist` for a tensor of `dtype` (`random.cuh`).
fn random_fn(dist: RandomDist, dtype: DType) -> String {
    let suffix = match dist.value_dtype(dtype) {
        DType::F64 => "_f64",
        DType::F16 => "_f16",
        DType::BF16 => "_bf16",
        DType::I64 => "",
        DType::F32 | DType::Bool | DType::U8 | DType::I8 | DType::I16 | DType::I32 => "_f32",
        DType::C64 | DType::C128 => panic!("{REAL_KERNELS}"),
    };
    format!("sm_random_{}{suffix}", dist.name())
}

/// The value (of [`value_type`]) a buffer element `element` of `dtype` holds.
pub(crate) fn load_expr(element: &str, dtype: DType) -> String {
    match dtype {
        DType::F16 => format!("sm_half2float({element})"),
        DType::BF16 => format!("sm_bfloat162float({element})"),
        DType::Bool
        | DType::U8
        | DType::I8
        | DType::I16
        | DType::I32
        | DType::I64
        | DType::F32
        | DType::F64 => element.to_string(),
        // Library code moves a complex element as its `float2`/`double2`.
        DType::C64 | DType::C128 => element.to_string(),
    }
}

/// `v` (a value of `dtype`) as the bits a buffer of `dtype` stores.
pub(crate) fn store_expr(v: &str, dtype: DType) -> String {
    match dtype {
        DType::F16 => format!("sm_float2half({v})"),
        DType::BF16 => format!("sm_float2bfloat16({v})"),
        DType::Bool
        | DType::U8
        | DType::I8
        | DType::I16
        | DType::I32
        | DType::I64
        | DType::F32
        | DType::F64 => v.to_string(),
        DType::C64 | DType::C128 => v.to_string(),
    }
}

/// `(T)x` as smelt's cast from `from` to `to`. Complex values (library code only: kernels
/// are real) are `float2`/`double2`: a real value gains imaginary part 0, a complex one cast to
/// a real dtype keeps its real part (bool: either part nonzero).
pub(crate) fn cast_expr(x: &str, from: DType, to: DType) -> String {
    if from == to {
        return x.to_string();
    }
    if to.is_complex() {
        let r = to.real();
        let (re, im) = if from.is_complex() {
            (
                cast_expr(&format!("({x}).x"), from.real(), r),
                cast_expr(&format!("({x}).y"), from.real(), r),
            )
        } else {
            (cast_expr(x, from, r), cast_expr("0", DType::I64, r))
        };
        return format!("make_{}({re}, {im})", storage_type(to));
    }
    if from.is_complex() {
        if to == DType::Bool {
            return format!("(({x}).x != 0 || ({x}).y != 0)");
        }
        return cast_expr(&format!("({x}).x"), from.real(), to);
    }
    match to {
        DType::Bool => format!("({x} != 0)"),
        DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
            let t = storage_type(to);
            if from.is_float() {
                format!("({t})sm_f2i((double){x})")
            } else {
                format!("({t}){x}")
            }
        }
        DType::F32 | DType::F64 => format!("({}){x}", storage_type(to)),
        DType::F16 | DType::BF16 => {
            let narrow = if to == DType::F16 { "f16" } else { "bf16" };
            match from {
                DType::F16 | DType::BF16 | DType::F32 => format!("sm_round_{narrow}({x})"),
                DType::Bool
                | DType::U8
                | DType::I8
                | DType::I16
                | DType::I32
                | DType::I64
                | DType::F64 => format!("sm_{narrow}_of_double((double){x})"),
                DType::C64 | DType::C128 => panic!("{REAL_KERNELS}"),
            }
        }
        DType::C64 | DType::C128 => panic!("{REAL_KERNELS}"),
    }
}

/// A float op in `compute` (float for f16/bf16/f32, double for f64), unrounded.
fn float_unary(op: UnaryOp, x: &str, compute: DType) -> String {
    let f = if compute == DType::F64 { "" } else { "f" };
    let one = if compute == DType::F64 { "1.0" } else { "1.0f" };
    let zero = if compute == DType::F64 { "0.0" } else { "0.0f" };
    match op {
        UnaryOp::Neg => format!("(-{x})"),
        UnaryOp::Abs => format!("fabs{f}({x})"),
        UnaryOp::Sign => format!("sm_sign({x})"),
        UnaryOp::Exp => format!("exp{f}({x})"),
        UnaryOp::Expm1 => format!("expm1{f}({x})"),
        UnaryOp::Exp2 => format!("exp2{f}({x})"),
        UnaryOp::Log => format!("log{f}({x})"),
        UnaryOp::Log2 => format!("log2{f}({x})"),
        UnaryOp::Log1p => format!("log1p{f}({x})"),
        UnaryOp::Sqrt => format!("sqrt{f}({x})"),
        UnaryOp::Rsqrt => format!("({one} / sqrt{f}({x}))"),
        UnaryOp::Reciprocal => format!("({one} / {x})"),
        UnaryOp::Square => format!("({x} * {x})"),
        UnaryOp::Sin => format!("sin{f}({x})"),
        UnaryOp::Cos => format!("cos{f}({x})"),
        UnaryOp::Tan => format!("tan{f}({x})"),
        UnaryOp::Tanh => format!("tanh{f}({x})"),
        UnaryOp::Sigmoid => format!("({one} / ({one} + exp{f}(-{x})))"),
        UnaryOp::Relu => format!("(({x} > {zero} || {x} != {x}) ? {x} : {zero})"),
        UnaryOp::Erf => format!("erf{f}({x})"),
        UnaryOp::Floor => format!("floor{f}({x})"),
        UnaryOp::Ceil => format!("ceil{f}({x})"),
        UnaryOp::Round => format!("rint{f}({x})"),
        UnaryOp::Trunc => format!("trunc{f}({x})"),
        UnaryOp::BitwiseNot => x.to_string(),
        UnaryOp::LogicalNot => format!("({x} == 0)"),
        UnaryOp::IsNan => format!("({x} != {x})"),
        UnaryOp::Angle => format!(
            "({x} != {x} ? {x} : ({x} < {zero} ? {} : {zero}))",
            if compute == DType::F64 {
                "3.141592653589793"
            } else {
                "3.14159265f"
            }
        ),
        UnaryOp::IsInf => format!("({x} == {x} && {x} - {x} != {x} - {x})"),
        UnaryOp::IsFinite => format!("({x} - {x} == {x} - {x})"),
    }
}

fn unary_expr(op: UnaryOp, x: &str, compute: DType) -> String {
    if compute.is_float() {
        let e = float_unary(op, x, compute);
        return if op.result_dtype(compute) == DType::Bool {
            e
        } else {
            round_to(compute, e)
        };
    }
    if compute == DType::Bool {
        return match op.on_bool() {
            OnBool::Not => format!("(!{x})"),
            OnBool::Const(c) => c.to_string(),
            OnBool::Same => x.to_string(),
        };
    }
    let t = storage_type(compute);
    match op.on_int() {
        OnInt::Neg => format!("({t})sm_i_neg({x})"),
        OnInt::Abs => format!("({t})sm_i_abs({x})"),
        OnInt::Sign => format!("({t})sm_i_sign({x})"),
        OnInt::Square => format!("({t})sm_i_mul({x}, {x})"),
        OnInt::Relu => format!("({t})({x} > 0 ? {x} : 0)"),
        OnInt::Same => x.to_string(),
        OnInt::BitNot => format!("({t})(~(long long){x})"),
        OnInt::IsZero => format!("({x} == 0)"),
        OnInt::Const(c) => c.to_string(),
        // As in the interpreter, through double.
        OnInt::ViaFloat => format!(
            "({t})sm_f2i({})",
            float_unary(op, &format!("(double){x}"), DType::F64)
        ),
    }
}

fn binary_expr(op: BinaryOp, a: &str, b: &str, compute: DType) -> String {
    if compute.is_float() {
        let f = if compute == DType::F64 { "" } else { "f" };
        let e = match op {
            BinaryOp::Add => format!("{a} + {b}"),
            BinaryOp::Sub => format!("{a} - {b}"),
            BinaryOp::Mul => format!("{a} * {b}"),
            BinaryOp::Div => format!("{a} / {b}"),
            BinaryOp::DivTrunc => format!("trunc{f}({a} / {b})"),
            BinaryOp::DivFloor => format!("sm_div_floor({a}, {b})"),
            BinaryOp::Remainder => format!("sm_remainder({a}, {b})"),
            BinaryOp::Fmod => format!("fmod{f}({a}, {b})"),
            BinaryOp::Pow => format!("pow{f}({a}, {b})"),
            BinaryOp::Maximum => format!("sm_maximum({a}, {b})"),
            BinaryOp::Minimum => format!("sm_minimum({a}, {b})"),
            BinaryOp::Atan2 => format!("atan2{f}({a}, {b})"),
            BinaryOp::Eq => return format!("({a} == {b})"),
            BinaryOp::Ne => return format!("({a} != {b})"),
            BinaryOp::Lt => return format!("({a} < {b})"),
            BinaryOp::Le => return format!("({a} <= {b})"),
            BinaryOp::Gt => return format!("({a} > {b})"),
            BinaryOp::Ge => return format!("({a} >= {b})"),
            BinaryOp::LogicalAnd => return format!("({a} != 0 && {b} != 0)"),
            BinaryOp::LogicalOr => return format!("({a} != 0 || {b} != 0)"),
            BinaryOp::LogicalXor => return format!("(({a} != 0) != ({b} != 0))"),
            // Bitwise ops on floats are refused by the frontend; the interpreter gives NaN.
            BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor => format!("sm_nan({a})"),
        };
        return round_to(compute, e);
    }
    let t = storage_type(compute);
    match op {
        BinaryOp::Add => format!("({t})sm_i_add({a}, {b})"),
        BinaryOp::Sub => format!("({t})sm_i_sub({a}, {b})"),
        BinaryOp::Mul => format!("({t})sm_i_mul({a}, {b})"),
        BinaryOp::Div | BinaryOp::DivTrunc => format!("({t})sm_i_div_trunc({a}, {b})"),
        BinaryOp::DivFloor => format!("({t})sm_i_div_floor({a}, {b})"),
        BinaryOp::Remainder => format!("({t})sm_i_remainder({a}, {b})"),
        BinaryOp::Fmod => format!("({t})sm_i_fmod({a}, {b})"),
        BinaryOp::Pow => format!("({t})sm_i_pow({a}, {b})"),
        BinaryOp::Maximum => format!("({a} > {b} ? {a} : {b})"),
        BinaryOp::Minimum => format!("({a} < {b} ? {a} : {b})"),
        BinaryOp::Atan2 => {
            format!("({t})sm_f2i((double)(float)atan2((double){a}, (double){b}))")
        }
        BinaryOp::Eq => format!("({a} == {b})"),
        BinaryOp::Ne => format!("({a} != {b})"),
        BinaryOp::Lt => format!("({a} < {b})"),
        BinaryOp::Le => format!("({a} <= {b})"),
        BinaryOp::Gt => format!("({a} > {b})"),
        BinaryOp::Ge => format!("({a} >= {b})"),
        BinaryOp::LogicalAnd => format!("({a} != 0 && {b} != 0)"),
        BinaryOp::LogicalOr => format!("({a} != 0 || {b} != 0)"),
        BinaryOp::LogicalXor => format!("(({a} != 0) != ({b} != 0))"),
        BinaryOp::BitAnd => format!("({t})({a} & {b})"),
        BinaryOp::BitOr => format!("({t})({a} | {b})"),
        BinaryOp::BitXor => format!("({t})({a} ^ {b})"),
    }
}

/// How one reduction accumulates: accumulator C type, combiner, identity, how an element
/// enters and how the result leaves (as a value of the reduced dtype).
struct Accumulator {
    ty: &'static str,
    combine: &'static str,
    identity: String,
    enter: String,
    finish: String,
}

fn accumulator(op: ReduceOp, dtype: DType, x: &str, acc: &str) -> Accumulator {
    let logical = matches!(op, ReduceOp::All | ReduceOp::Any) || dtype == DType::Bool;
    if logical {
        // Bool sums are "any", products "all" (the interpreter wraps to bool each step).
        let and = matches!(op, ReduceOp::All | ReduceOp::Prod | ReduceOp::Min);
        let finish = match dtype {
            DType::Bool => format!("({acc} != 0)"),
            DType::U8
            | DType::I8
            | DType::I16
            | DType::I32
            | DType::I64
            | DType::F16
            | DType::BF16
            | DType::F32
            | DType::F64 => format!("({}){acc}", value_type(dtype)),
            DType::C64 | DType::C128 => panic!("{REAL_KERNELS}"),
        };
        return Accumulator {
            ty: "int",
            combine: if and { "SmAnd" } else { "SmOr" },
            identity: (if and { "1" } else { "0" }).to_string(),
            enter: format!("({x} != 0)"),
            finish,
        };
    }
    let combine = match op {
        ReduceOp::Sum => "SmSum",
        ReduceOp::Prod => "SmProd",
        ReduceOp::Max => "SmMax",
        ReduceOp::Min => "SmMin",
        ReduceOp::All | ReduceOp::Any => unreachable!("logical reductions handled above"),
    };
    if dtype.is_float() {
        let acc_dtype = if dtype == DType::F64 {
            DType::F64
        } else {
            DType::F32
        };
        let identity = match op {
            ReduceOp::Sum => Scalar::Float(0.0),
            ReduceOp::Prod => Scalar::Float(1.0),
            ReduceOp::Max => Scalar::Float(f64::NEG_INFINITY),
            ReduceOp::Min => Scalar::Float(f64::INFINITY),
            ReduceOp::All | ReduceOp::Any => unreachable!("logical reductions handled above"),
        };
        return Accumulator {
            ty: value_type(acc_dtype),
            combine,
            identity: literal(identity, acc_dtype),
            enter: x.to_string(),
            finish: round_to(dtype, acc.to_string()),
        };
    }
    let identity = match op {
        ReduceOp::Sum => "0LL",
        ReduceOp::Prod => "1LL",
        ReduceOp::Max => "SM_I64_MIN",
        ReduceOp::Min => "9223372036854775807LL",
        ReduceOp::All | ReduceOp::Any => unreachable!("logical reductions handled above"),
    };
    Accumulator {
        ty: "long long",
        combine,
        identity: identity.to_string(),
        enter: format!("(long long){x}"),
        finish: format!("({}){acc}", storage_type(dtype)),
    }
}

fn entry_name(kernel: &Kernel) -> String {
    let clean: String = kernel
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("smelt_{clean}")
}

/// Renders `kernel` (which must verify) as CUDA C.
pub fn render(kernel: &Kernel) -> CudaKernel {
    let errors = kernel.verify();
    assert!(
        errors.is_empty(),
        "invariant: kernel IR verifies before it is rendered: {errors:?}\n{kernel}"
    );
    let mut slot = vec![0; kernel.body.len()];
    let mut k = 0;
    for (i, instr) in kernel.body.iter().enumerate() {
        if instr.index().is_some() {
            slot[i] = k;
            k += 1;
        }
    }
    let mut r = Renderer {
        kernel,
        types: kernel.value_dtypes(),
        levels: kernel.levels(),
        scalars: vec![],
        slot,
    };
    let entry = entry_name(kernel);
    let (code, grid, block, vectorized) = if kernel.reduce_axes == 0 {
        render_elementwise(&mut r)
    } else {
        render_rows(&mut r)
    };
    let mut params: Vec<String> = kernel
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let constness = match a.access {
                smelt_ir::Access::Read => "const ",
                smelt_ir::Access::Write | smelt_ir::Access::Update { .. } => "",
            };
            format!("{constness}{}* __restrict__ a{i}", storage_type(a.dtype))
        })
        .collect();
    params.extend(
        r.scalars
            .iter()
            .map(|(n, _)| format!("const long long {n}")),
    );
    let body = format!(
        "extern \"C\" __global__ void __launch_bounds__({BLOCK}) {entry}(\n    {}) {{\n{code}}}\n",
        params.join(",\n    ")
    );
    CudaKernel {
        entry,
        body,
        scalars: r.scalars,
        grid,
        block,
        vectorized,
    }
}

/// Blocks of `per_block` threads for `items`, at most [`MAX_GRID`] (grid-stride loops do the rest).
pub(crate) fn blocks_for(items: u64, per_block: u64) -> u32 {
    items.div_ceil(per_block).min(MAX_GRID) as u32
}

/// Whether the elementwise body can run four elements at a time through `float4`: every
/// access is dense (or a broadcast scalar) over the whole space, dense accesses are f32, and
/// every store (one per output) is dense.
fn is_vectorizable(kernel: &Kernel, all: &Group) -> bool {
    let mut stores = 0;
    let mut dense = 0;
    for instr in &kernel.body {
        let (arg, index) = match instr {
            Instr::Load { arg, index } => (*arg, index),
            Instr::Store { arg, index, .. } => {
                stores += 1;
                (*arg, index)
            }
            Instr::Const { .. }
            | Instr::Unary { .. }
            | Instr::Binary { .. }
            | Instr::Where { .. }
            | Instr::Cast { .. }
            | Instr::Reduce { .. } => continue,
            // Each lane of a float4 step would need its own position.
            Instr::Random { .. } => return false,
        };
        match walk(kernel, index, all) {
            Walk::Zero => {
                if matches!(instr, Instr::Store { .. }) {
                    return false;
                }
            }
            Walk::Dense => {
                if kernel.args[arg].dtype != DType::F32 {
                    return false;
                }
                dense += 1;
            }
            Walk::Scaled | Walk::General => return false,
        }
    }
    stores > 0 && dense > 0 && !all.dims.is_empty()
}

fn render_elementwise(r: &mut Renderer) -> (String, u32, u32, bool) {
    let kernel = r.kernel;
    let all = Group {
        dims: (0..kernel.shape.len())
            .filter(|&d| kernel.shape[d] != 1)
            .collect(),
        flat: "i",
        prefix: "i",
    };
    let total: u64 = kernel.shape.iter().map(|&n| n as u64).product();
    let vectorized = is_vectorizable(kernel, &all);
    let mut out = String::new();
    let count = r.count(&all);
    let _ = writeln!(out, "  const long long total = {count};");
    let _ = writeln!(
        out,
        "  const long long stride = (long long)blockDim.x * gridDim.x;"
    );
    let _ = writeln!(
        out,
        "  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;"
    );
    let mut start = "first";
    if vectorized {
        start = "start + first";
        let mut dense_slots = vec![];
        for (i, instr) in kernel.body.iter().enumerate() {
            if let Instr::Load { index, .. } | Instr::Store { index, .. } = instr
                && matches!(walk(kernel, index, &all), Walk::Dense)
            {
                dense_slots.push(r.param(format!("off{}", r.slot[i]), index.offset as i64));
            }
        }
        let _ = writeln!(out, "  long long start = 0;");
        let _ = writeln!(
            out,
            "  // float4 path: dense f32 accesses whose offsets keep 16-byte alignment."
        );
        let _ = writeln!(out, "  if ((({}) & 3) == 0) {{", dense_slots.join(" | "));
        let _ = writeln!(out, "    const long long quads = total >> 2;");
        let _ = writeln!(
            out,
            "    for (long long q = first; q < quads; q += stride) {{"
        );
        for (i, instr) in kernel.body.iter().enumerate() {
            match instr {
                Instr::Load { arg, index } if matches!(walk(kernel, index, &all), Walk::Dense) => {
                    let off = format!("off{}", r.slot[i]);
                    let _ = writeln!(
                        out,
                        "      const float4 q{i} = reinterpret_cast<const float4*>(a{arg} + {off})[q];"
                    );
                }
                Instr::Store { .. } => {
                    let _ = writeln!(out, "      float4 q{i};");
                }
                Instr::Load { .. }
                | Instr::Const { .. }
                | Instr::Unary { .. }
                | Instr::Binary { .. }
                | Instr::Where { .. }
                | Instr::Cast { .. }
                | Instr::Reduce { .. }
                | Instr::Random { .. } => {}
            }
        }
        for lane in ["x", "y", "z", "w"] {
            let _ = writeln!(out, "      {{");
            for (i, instr) in kernel.body.iter().enumerate() {
                match instr {
                    Instr::Load { index, .. }
                        if matches!(walk(kernel, index, &all), Walk::Dense) =>
                    {
                        let _ = writeln!(out, "        const float v{i} = q{i}.{lane};");
                    }
                    Instr::Store { x, .. } => {
                        let _ = writeln!(out, "        q{i}.{lane} = v{x};");
                    }
                    Instr::Load { .. }
                    | Instr::Const { .. }
                    | Instr::Unary { .. }
                    | Instr::Binary { .. }
                    | Instr::Where { .. }
                    | Instr::Cast { .. }
                    | Instr::Reduce { .. }
                    | Instr::Random { .. } => r.emit(i, &[&all], None, &mut out, "        "),
                }
            }
            let _ = writeln!(out, "      }}");
        }
        for (i, instr) in kernel.body.iter().enumerate() {
            if let Instr::Store { arg, .. } = instr {
                let off = format!("off{}", r.slot[i]);
                let _ = writeln!(
                    out,
                    "      reinterpret_cast<float4*>(a{arg} + {off})[q] = q{i};"
                );
            }
        }
        let _ = writeln!(out, "    }}");
        let _ = writeln!(out, "    start = quads << 2;");
        let _ = writeln!(out, "  }}");
    }
    let _ = writeln!(
        out,
        "  for (long long i = {start}; i < total; i += stride) {{"
    );
    r.unravel(&all, &mut out, "    ");
    for i in 0..kernel.body.len() {
        r.emit(i, &[&all], None, &mut out, "    ");
    }
    let _ = writeln!(out, "  }}");
    let items = if vectorized { total.div_ceil(4) } else { total };
    (out, blocks_for(items, BLOCK as u64), BLOCK, vectorized)
}

/// Rows at most this wide go to one warp each ([`render_rows`]).
pub const WARP_ROW_MAX_WIDTH: u64 = 1024;
/// …when there are at least this many rows: fewer rows keep a block each, so that the SMs
/// have threads to run.
pub const WARP_ROW_MIN_ROWS: u64 = 256;

/// A reduction kernel: each row (kept point) goes to one block, or to one warp where rows are
/// narrow and many ([`WARP_ROW_MAX_WIDTH`], [`WARP_ROW_MIN_ROWS`]: attention's softmax over
/// 256 keys, a layernorm over 768 features). A block per row spends most of its time in the
/// block reductions' barriers when each thread holds one or two elements; a warp reduces with
/// shuffles alone and keeps eight rows in flight per block.
fn render_rows(r: &mut Renderer) -> (String, u32, u32, bool) {
    let kernel = r.kernel;
    let outer_rank = kernel.shape.len() - kernel.reduce_axes;
    let outer = Group {
        dims: (0..outer_rank).filter(|&d| kernel.shape[d] != 1).collect(),
        flat: "row",
        prefix: "o",
    };
    let inner = Group {
        dims: (outer_rank..kernel.shape.len())
            .filter(|&d| kernel.shape[d] != 1)
            .collect(),
        flat: "j",
        prefix: "j",
    };
    let rows: u64 = kernel.shape[..outer_rank]
        .iter()
        .map(|&n| n as u64)
        .product();
    let width: u64 = kernel.shape[outer_rank..]
        .iter()
        .map(|&n| n as u64)
        .product();
    let per_warp = width <= WARP_ROW_MAX_WIDTH && rows >= WARP_ROW_MIN_ROWS;
    let reduces = kernel.reduces();
    let mut out = String::new();
    if !per_warp {
        for &i in &reduces {
            let Instr::Reduce { op, x } = kernel.body[i] else {
                unreachable!("reduces() lists Reduce instructions")
            };
            let dtype = r.types[x].expect("a value");
            let acc = accumulator(op, dtype, "", "");
            let _ = writeln!(out, "  __shared__ {} red{i}[33];", acc.ty);
        }
    }
    let rows_expr = r.count(&outer);
    let width_expr = r.count(&inner);
    let _ = writeln!(out, "  const long long rows = {rows_expr};");
    let _ = writeln!(out, "  const long long width = {width_expr};");
    // Who works on a row: its thread `first` writes the row-level values; its threads step
    // through the row by `step` from `lane`.
    let (first, lane, step) = if per_warp {
        let _ = writeln!(out, "  const int lane = threadIdx.x & 31;");
        let _ = writeln!(
            out,
            "  const long long warps = (long long)gridDim.x * (blockDim.x >> 5);"
        );
        let _ = writeln!(
            out,
            "  for (long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); \
             row < rows; row += warps) {{"
        );
        ("lane == 0", "lane", "32")
    } else {
        let _ = writeln!(
            out,
            "  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {{"
        );
        ("threadIdx.x == 0", "threadIdx.x", "blockDim.x")
    };
    r.unravel(&outer, &mut out, "    ");
    let row_level = |r: &mut Renderer, range: std::ops::Range<usize>, out: &mut String| {
        for i in range {
            if r.levels[i] == Level::Row && !matches!(kernel.body[i], Instr::Reduce { .. }) {
                r.emit(i, &[&outer], Some(first), out, "    ");
            }
        }
    };
    let element_pass = |r: &mut Renderer, elements: &[usize], out: &mut String| {
        let _ = writeln!(
            out,
            "    for (long long j = {lane}; j < width; j += {step}) {{"
        );
        r.unravel(&inner, out, "      ");
        for &i in elements {
            r.emit(i, &[&outer, &inner], None, out, "      ");
        }
    };
    // The row program (`Kernel::passes`), the same passes as every backend's.
    for pass in kernel.passes() {
        row_level(r, pass.row.clone(), &mut out);
        let Some(ri) = pass.reduce else {
            if !pass.elements.is_empty() {
                let _ = writeln!(out, "    // final pass: element-level stores");
                element_pass(r, &pass.elements, &mut out);
                let _ = writeln!(out, "    }}");
            }
            continue;
        };
        let Instr::Reduce { op, x } = kernel.body[ri] else {
            unreachable!("a pass folds a Reduce instruction")
        };
        let dtype = r.types[x].expect("a value");
        let acc_name = format!("acc{ri}");
        let acc = accumulator(op, dtype, &format!("v{x}"), &acc_name);
        let _ = writeln!(
            out,
            "    // pass over the row for %{ri} = reduce_{} %{x}",
            op.name()
        );
        let _ = writeln!(out, "    {} {acc_name} = {};", acc.ty, acc.identity);
        element_pass(r, &pass.elements, &mut out);
        let _ = writeln!(
            out,
            "      {acc_name} = {}()({acc_name}, {});",
            acc.combine, acc.enter
        );
        let _ = writeln!(out, "    }}");
        if per_warp {
            let _ = writeln!(
                out,
                "    {acc_name} = sm_warp_allreduce({acc_name}, {}());",
                acc.combine
            );
        } else {
            let _ = writeln!(
                out,
                "    {acc_name} = sm_block_reduce({acc_name}, red{ri}, {}(), ({}){});",
                acc.combine, acc.ty, acc.identity
            );
        }
        let _ = writeln!(
            out,
            "    const {} v{ri} = {};",
            value_type(dtype),
            acc.finish
        );
    }
    let _ = writeln!(out, "  }}");
    if per_warp {
        let warps_per_block = BLOCK as u64 / 32;
        return (out, blocks_for(rows, warps_per_block), BLOCK, false);
    }
    // Narrow rows use fewer threads (a multiple of a warp).
    let block = width.div_ceil(32).clamp(1, BLOCK as u64 / 32) as u32 * 32;
    (out, rows.min(MAX_GRID) as u32, block, false)
}

#[cfg(test)]
mod tests {
    use super::{Divider, render};
    use smelt_ir::{DType, Kernel, View};

    /// An empty kernel still renders (its launch is empty): a group with a zero-size dim has no
    /// points, yet may hold a dim past what a divider takes; it unravels in 64 bits.
    #[test]
    fn an_empty_kernel_with_a_huge_dim_renders() {
        let shape = [0, 3_000_000_000, 7];
        let src = View::new(shape.to_vec(), vec![1, 0, 1], 0);
        let dst = View::contiguous(&shape);
        let k = Kernel::copy(DType::F32, &src, 8, &dst, 0);
        let c = render(&k);
        assert!(c.is_empty_launch());
        assert!(!c.body.contains("sm_udiv"), "{}", c.body);
    }

    /// Every divisor a size can be, against numerators near the edges: small, multiples of
    /// the divisor and their neighbours, and the largest below 2^31.
    #[test]
    fn dividers_divide_exactly_below_two_to_the_31() {
        let mut divisors: Vec<u32> = (1..=3000).collect();
        for s in 1..=31 {
            let p = 1u32 << s;
            divisors.extend([p - 1, p, p.saturating_add(1).min(1 << 31)]);
        }
        divisors.extend([
            3 * 256 * 12,
            2304,
            3072,
            196_608,
            786_432,
            1_000_003,
            2_147_483_647,
        ]);
        let top = (1u32 << 31) - 1;
        for &d in &divisors {
            let div = Divider::new(d);
            let mut numerators: Vec<u32> = (0..600).collect();
            numerators.extend([top, top - 1, top - d.min(top), top / 2, top / 3]);
            for k in [1u32, 2, 7, 1000, 65_535] {
                if let Some(m) = d.checked_mul(k).filter(|&m| m <= top) {
                    numerators.extend([m - 1, m, (m + 1).min(top)]);
                }
            }
            for &n in &numerators {
                assert_eq!(div.divide(n), n / d, "{n} / {d} with {div:?}");
            }
        }
    }
}
