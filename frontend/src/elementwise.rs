//! Elementwise ops: unary math, binary arithmetic and comparisons with broadcasting and type
//! promotion, `where`, `clamp`, casts, `contiguous` and `clone`. Output strides follow
//! TensorIterator (SEMANTICS.md §4.1).

use crate::default_dtype::get_default_dtype;
use crate::device::{different_devices, on_device};
use crate::lazy::{Inputs, LazyNode};
use crate::names::{refuse_named, refuse_named_operands, unify_operands};
use crate::promote::{AsOperand, Operand, OperandRef, result_type_of, try_result_type};
use crate::tensor::{Tensor, ok};
use smelt_ir::Dims;
use smelt_ir::graph::Op;
use smelt_ir::view::{broadcast_shapes, elementwise_out_strides};
use smelt_ir::{BinaryOp, DType, Error, MemoryFormat, Result, Scalar, UnaryOp, View};
use smelt_runtime::Device;

/// Broadcast shape of several operands.
pub(crate) fn broadcast_all(operands: &[&dyn AsOperand]) -> Result<Dims<usize>> {
    let shapes = || operands.iter().map(|o| o.operand().shape());
    // The common case first: every operand has the widest operand's shape or is 0-dim.
    if let Some(widest) = shapes().max_by_key(|s| s.len())
        && shapes().all(|s| s.is_empty() || s == widest)
    {
        return Ok(widest.into());
    }
    let mut shape: Vec<usize> = vec![];
    for s in shapes() {
        shape = broadcast_shapes(&shape, s)?;
    }
    Ok(shape.into())
}

/// The device an elementwise op over `operands` runs on (`common_device`'s rule, 0-dim host
/// tensors joining), worked out without allocating: this is every op's path.
fn operands_device(op: &Op, operands: &[&dyn AsOperand]) -> Result<Device> {
    let mut found: Option<Device> = None;
    let mut first: Option<Device> = None;
    for o in operands {
        let OperandRef::Tensor(t) = o.operand() else {
            continue;
        };
        let d = t.device();
        first.get_or_insert(d);
        if d == Device::Cpu && t.ndim() == 0 {
            continue;
        }
        match found {
            None => found = Some(d),
            Some(f) if f == d => {}
            Some(f) => return Err(different_devices(&op.name(), f, d)),
        }
    }
    Ok(found
        .or(first)
        .unwrap_or_else(crate::device::get_default_device))
}

/// Records one elementwise node: `op` over `operands` (scalars become fills of `scalar_dtype`),
/// output of `dtype` with TensorIterator's strides.
#[track_caller]
pub(crate) fn record(
    op: Op,
    dtype: DType,
    scalar_dtype: DType,
    operands: &[&dyn AsOperand],
) -> Result<Tensor> {
    if let Some(first) = row_major_operands(&op, scalar_dtype, operands) {
        return record_row_major(op, dtype, scalar_dtype, operands, first);
    }
    crate::sparse::refuse_sparse_operands(|| op.name(), operands)?;
    let shape = broadcast_all(operands)?;
    let device = operands_device(&op, operands)?;
    // A 0-dim host tensor joining an op on a device is read there like a scalar: copied over.
    // (The common case, every tensor on one device, allocates nothing here.)
    let elsewhere =
        |o: &&dyn AsOperand| matches!(o.operand(), OperandRef::Tensor(t) if t.device() != device);
    let moved: Vec<Option<Tensor>> = if operands.iter().any(elsewhere) {
        operands
            .iter()
            .map(|o| match o.operand() {
                OperandRef::Tensor(t) if t.device() != device => on_device(t, device).map(Some),
                OperandRef::Tensor(_) | OperandRef::Scalar(_) => Ok(None),
            })
            .collect::<Result<_>>()?
    } else {
        Vec::new()
    };
    // TensorIterator converts CPU inputs of another dtype with `.to()` first (preserve format),
    // so those inputs take part in the layout decision with the converted copy's strides.
    let converts = |i: usize, t: &Tensor| t.dtype() != scalar_dtype && !(i == 0 && op == Op::Where);
    let converted: Vec<View> = operands
        .iter()
        .enumerate()
        .filter_map(|(i, o)| match o.operand() {
            OperandRef::Tensor(t) if converts(i, t) => Some(View::new(
                t.shape().to_vec(),
                t.view.preserve_format_strides(),
                0,
            )),
            OperandRef::Tensor(_) | OperandRef::Scalar(_) => None,
        })
        .collect();
    // The view a scalar operand takes part in the layout decision with (0-dim), made once.
    static SCALAR: std::sync::LazyLock<View> = std::sync::LazyLock::new(|| View::contiguous(&[]));
    let scalar: &View = &SCALAR;
    let mut converted = converted.iter();
    let views = operands.iter().enumerate().map(|(i, o)| match o.operand() {
        OperandRef::Tensor(t) if converts(i, t) => converted
            .next()
            .expect("invariant: one converted view per converted operand"),
        OperandRef::Tensor(t) => &t.view,
        OperandRef::Scalar(_) => scalar,
    });
    // Ops have at most three operands: their views are listed on the stack.
    let mut listed = [scalar; 3];
    let strides = if operands.len() <= listed.len() {
        for (slot, view) in listed.iter_mut().zip(views) {
            *slot = view;
        }
        elementwise_out_strides(&shape, &listed[..operands.len()])
    } else {
        elementwise_out_strides(&shape, &views.collect::<Vec<_>>())
    };
    // A loop, not a closure: `#[track_caller]` does not pass through closures, and the fill
    // nodes of scalar operands should name the user's line too.
    let source = |i: usize| match moved.get(i) {
        Some(Some(t)) => OperandRef::Tensor(t),
        Some(None) | None => operands[i].operand(),
    };
    let out = View::new(shape, strides, 0);
    // A loop, not a map: `#[track_caller]` does not pass through closures (see `source`).
    let mut inputs = Inputs::new();
    for i in 0..operands.len() {
        inputs.push(source(i).source(&out.shape, scalar_dtype, device));
    }
    Tensor::computed_into(op, dtype, out, inputs)
}

/// The first tensor operand when the tensor operands share its device, its shape and exactly
/// row-major strides, and each is strided and read in the compute dtype (none is converted
/// first; a `where`'s condition is read as it is): TensorIterator then lays the output out
/// row-major and no operand broadcasts, so [`record`] may skip the layout decision. `None`
/// otherwise, or when every operand is a scalar.
fn row_major_operands<'a>(
    op: &Op,
    scalar_dtype: DType,
    operands: &[&'a dyn AsOperand],
) -> Option<&'a Tensor> {
    let mut first: Option<&'a Tensor> = None;
    for (i, o) in operands.iter().enumerate() {
        let OperandRef::Tensor(t) = o.operand() else {
            continue;
        };
        let read_as_is =
            !t.is_sparse() && (t.dtype() == scalar_dtype || (i == 0 && *op == Op::Where));
        let fits = match first {
            None => row_major(t.shape(), &t.view.strides),
            Some(f) => {
                t.device() == f.device()
                    && t.shape() == f.shape()
                    && t.view.strides == f.view.strides
            }
        };
        if !read_as_is || !fits {
            return None;
        }
        first.get_or_insert(t);
    }
    first
}

/// Whether `strides` are exactly the row-major strides of `shape`
/// ([`smelt_ir::view::contiguous_strides`]), worked out without building them.
fn row_major(shape: &[usize], strides: &[isize]) -> bool {
    let mut expected = 1isize;
    for (&n, &s) in shape.iter().zip(strides).rev() {
        if s != expected {
            return false;
        }
        expected = expected.saturating_mul(n.max(1) as isize);
    }
    true
}

/// [`record`] for operands [`row_major_operands`] accepts: a row-major output of the tensor
/// operands' shape, each tensor read through its own view and each scalar as a fill.
#[track_caller]
fn record_row_major(
    op: Op,
    dtype: DType,
    scalar_dtype: DType,
    operands: &[&dyn AsOperand],
    first: &Tensor,
) -> Result<Tensor> {
    let device = first.device();
    let first = &first.view;
    let shape = &first.shape[..];
    smelt_ir::view::check_sizes(shape, dtype.size())?;
    // Exact: `check_sizes` passed, so the product does not overflow, or a 0 makes it 0
    // (wrapped or not).
    let len = shape.iter().fold(1usize, |n, &d| n.wrapping_mul(d));
    // The first operand's strides are the row-major ones.
    let out = View::new(first.shape.clone(), first.strides.clone(), 0);
    let mut inputs = Inputs::new();
    for o in operands {
        inputs.push(match o.operand() {
            OperandRef::Tensor(t) => (t.storage.current(), t.view.clone()),
            scalar @ OperandRef::Scalar(_) => scalar.source(shape, scalar_dtype, device),
        });
    }
    Ok(Tensor::from_node(LazyNode::pending_on(
        device, op, dtype, len, out, inputs,
    )))
}

/// The compute and result dtypes of a unary op on a complex input: `abs` and `angle` give the
/// real counterpart, the predicates bool; the ops PyTorch refuses on complex (`sign`, rounding,
/// `relu`, `bitwise_not`) and those smelt has no complex formula for are `dtype` errors.
fn complex_unary_dtypes(op: UnaryOp, input: DType) -> Result<(DType, DType)> {
    let name = op.name();
    match op {
        UnaryOp::Neg
        | UnaryOp::Exp
        | UnaryOp::Log
        | UnaryOp::Sqrt
        | UnaryOp::Rsqrt
        | UnaryOp::Reciprocal
        | UnaryOp::Square => Ok((input, input)),
        UnaryOp::Abs | UnaryOp::Angle => Ok((input, input.real())),
        UnaryOp::IsNan | UnaryOp::IsInf | UnaryOp::IsFinite | UnaryOp::LogicalNot => {
            Ok((input, DType::Bool))
        }
        UnaryOp::Sign => Err(Error::dtype(
            "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn instead.",
        )),
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Trunc => Err(Error::dtype(
            format!("{name} is not supported for complex inputs"),
        )),
        UnaryOp::Relu => Err(Error::dtype("clamp is not supported for complex types")),
        UnaryOp::BitwiseNot => Err(Error::dtype(format!(
            "\"bitwise_not_cpu\" not implemented for '{}'",
            input.torch_name()
        ))),
        UnaryOp::Expm1
        | UnaryOp::Exp2
        | UnaryOp::Log2
        | UnaryOp::Log1p
        | UnaryOp::Sin
        | UnaryOp::Cos
        | UnaryOp::Tan
        | UnaryOp::Tanh
        | UnaryOp::Sigmoid
        | UnaryOp::Erf => Err(Error::dtype(format!(
            "{name}: smelt has no complex formula for this op (dtype {input}); \
             complex tensors support neg, exp, log, sqrt, rsqrt, reciprocal, square, abs, \
             angle, sgn and the isnan/isinf/isfinite/logical_not predicates"
        ))),
    }
}

/// Which dtype family an op accepts and what it returns for ints.
fn unary_dtypes(op: UnaryOp, input: DType) -> Result<(DType, DType)> {
    if input.is_complex() {
        return complex_unary_dtypes(op, input);
    }
    let float_out = || {
        if input.is_float() {
            input
        } else {
            get_default_dtype()
        }
    };
    let bool_error = |what: &str| {
        Err(Error::dtype(format!(
            "{what} on a bool tensor is not supported (op {}, dtype bool)",
            op.name()
        )))
    };
    Ok(match op {
        UnaryOp::Exp
        | UnaryOp::Expm1
        | UnaryOp::Exp2
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
        | UnaryOp::Erf
        | UnaryOp::Angle => (float_out(), float_out()),
        UnaryOp::Neg => {
            if input.is_bool() {
                return Err(Error::dtype(
                    "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
                ));
            }
            (input, input)
        }
        UnaryOp::Abs
        | UnaryOp::Floor
        | UnaryOp::Ceil
        | UnaryOp::Round
        | UnaryOp::Trunc
        | UnaryOp::Relu => {
            if input.is_bool() {
                return bool_error(&format!("\"{}\" not implemented for 'Bool':", op.name()));
            }
            (input, input)
        }
        UnaryOp::Sign => (input, input),
        UnaryOp::Square => {
            if input.is_bool() {
                (DType::I64, DType::I64)
            } else {
                (input, input)
            }
        }
        UnaryOp::LogicalNot | UnaryOp::IsNan | UnaryOp::IsInf | UnaryOp::IsFinite => {
            (input, DType::Bool)
        }
        UnaryOp::BitwiseNot => {
            if input.is_float() {
                return Err(Error::dtype(format!(
                    "\"bitwise_not_cpu\" not implemented for '{}'",
                    input.torch_name()
                )));
            }
            (input, input)
        }
    })
}

/// Generates a unary op and its `try_` form. The doc lines given document the plain form; the
/// string after the op says when the `try_` form returns an error.
macro_rules! unary_ops {
    ($(
        $(#[doc = $doc:expr])*
        $name:ident, $try_name:ident => $op:expr, $errors:expr;
    )*) => {
        impl Tensor {
            $(
                #[doc = concat!(
                    "[`Tensor::", stringify!($name), "`] returning a `Result`: ", $errors, "."
                )]
                #[track_caller]
                pub fn $try_name(&self) -> Result<Tensor> {
                    self.try_unary($op)
                }

                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = concat!(
                    "Panics where [`Tensor::", stringify!($try_name), "`] returns an error."
                )]
                #[track_caller]
                pub fn $name(&self) -> Tensor {
                    ok(self.$try_name())
                }
            )*
        }
    };
}

unary_ops! {
    /// `torch.neg`: `-x` for each element, in the input's dtype (also the `-` operator).
    neg, try_neg => UnaryOp::Neg,
        "a `dtype` error for a bool tensor (use `logical_not`)";
    /// `torch.abs`: the absolute value of each element, in the input's dtype.
    abs, try_abs => UnaryOp::Abs, "a `dtype` error for a bool tensor";
    /// `torch.sign`: -1, 0 or 1 by each element's sign (NaN stays NaN), in the input's dtype.
    sign, try_sign => UnaryOp::Sign, "never an error: every dtype is accepted";
    /// `torch.exp`: e to the power of each element; integer and bool inputs compute in the
    /// default float dtype.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([0, 1]);
    /// let y = x.exp(); // an integer input: a result in the default dtype, float32
    /// assert_eq!(y.dtype(), DType::F32);
    /// assert_eq!(y.to_vec::<f32>()[0], 1.0);
    /// ```
    exp, try_exp => UnaryOp::Exp, "never an error: every dtype is accepted";
    /// `torch.expm1`: `e^x - 1` for each element, accurate near 0; integer and bool inputs
    /// compute in the default float dtype.
    expm1, try_expm1 => UnaryOp::Expm1, "never an error: every dtype is accepted";
    /// `torch.log`: the natural logarithm of each element (-inf at 0, NaN below); integer and
    /// bool inputs compute in the default float dtype.
    log, try_log => UnaryOp::Log, "never an error: every dtype is accepted";
    /// `torch.log2`: the base-2 logarithm of each element; integer and bool inputs compute in
    /// the default float dtype.
    log2, try_log2 => UnaryOp::Log2, "never an error: every dtype is accepted";
    /// `torch.log1p`: `ln(1 + x)` for each element, accurate near 0; integer and bool inputs
    /// compute in the default float dtype.
    log1p, try_log1p => UnaryOp::Log1p, "never an error: every dtype is accepted";
    /// `torch.exp2`: 2 to the power of each element; integer and bool inputs compute in the
    /// default float dtype.
    exp2, try_exp2 => UnaryOp::Exp2, "never an error: every dtype is accepted";
    /// `torch.sqrt`: the square root of each element (NaN below 0); integer and bool inputs
    /// compute in the default float dtype.
    sqrt, try_sqrt => UnaryOp::Sqrt, "never an error: every dtype is accepted";
    /// `torch.rsqrt`: `1 / sqrt(x)` for each element; integer and bool inputs compute in the
    /// default float dtype.
    rsqrt, try_rsqrt => UnaryOp::Rsqrt, "never an error: every dtype is accepted";
    /// `torch.reciprocal`: `1 / x` for each element; integer and bool inputs compute in the
    /// default float dtype.
    reciprocal, try_reciprocal => UnaryOp::Reciprocal, "never an error: every dtype is accepted";
    /// `torch.square`: `x * x` for each element, in the input's dtype (bool gives int64).
    square, try_square => UnaryOp::Square, "never an error: every dtype is accepted";
    /// `torch.sin`: the sine of each element (radians); integer and bool inputs compute in the
    /// default float dtype.
    sin, try_sin => UnaryOp::Sin, "never an error: every dtype is accepted";
    /// `torch.cos`: the cosine of each element (radians); integer and bool inputs compute in
    /// the default float dtype.
    cos, try_cos => UnaryOp::Cos, "never an error: every dtype is accepted";
    /// `torch.tan`: the tangent of each element (radians); integer and bool inputs compute in
    /// the default float dtype.
    tan, try_tan => UnaryOp::Tan, "never an error: every dtype is accepted";
    /// `torch.tanh`: the hyperbolic tangent of each element; integer and bool inputs compute
    /// in the default float dtype.
    tanh, try_tanh => UnaryOp::Tanh, "never an error: every dtype is accepted";
    /// `torch.sigmoid`: `1 / (1 + e^-x)` for each element; integer and bool inputs compute in
    /// the default float dtype.
    sigmoid, try_sigmoid => UnaryOp::Sigmoid, "never an error: every dtype is accepted";
    /// `torch.relu`: `max(x, 0)` for each element, in the input's dtype (NaN stays NaN).
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([-1.0f32, 0.5]);
    /// assert_eq!(x.relu().to_vec::<f32>(), [0.0, 0.5]);
    /// ```
    relu, try_relu => UnaryOp::Relu, "a `dtype` error for a bool tensor";
    /// `torch.erf`: the Gauss error function of each element; integer and bool inputs compute
    /// in the default float dtype.
    erf, try_erf => UnaryOp::Erf, "never an error: every dtype is accepted";
    /// `torch.floor`: the largest integer not above each element, in the input's dtype
    /// (integers are unchanged).
    floor, try_floor => UnaryOp::Floor, "a `dtype` error for a bool tensor";
    /// `torch.ceil`: the smallest integer not below each element, in the input's dtype
    /// (integers are unchanged).
    ceil, try_ceil => UnaryOp::Ceil, "a `dtype` error for a bool tensor";
    /// `torch.trunc`: each element rounded toward zero, in the input's dtype (integers are
    /// unchanged).
    trunc, try_trunc => UnaryOp::Trunc, "a `dtype` error for a bool tensor";
    /// `torch.logical_not`: a bool tensor, true where the element is zero.
    logical_not, try_logical_not => UnaryOp::LogicalNot, "never an error: every dtype is accepted";
    /// `torch.bitwise_not`: `!x` for each element of an integer tensor (logical not for bool),
    /// in the input's dtype.
    bitwise_not, try_bitwise_not => UnaryOp::BitwiseNot, "a `dtype` error for a float tensor";
    /// `torch.isnan`: a bool tensor, true where the element is NaN.
    isnan, try_isnan => UnaryOp::IsNan, "never an error: every dtype is accepted";
    /// `torch.isinf`: a bool tensor, true where the element is +inf or -inf.
    isinf, try_isinf => UnaryOp::IsInf, "never an error: every dtype is accepted";
    /// `torch.isfinite`: a bool tensor, true where the element is neither infinite nor NaN.
    isfinite, try_isfinite => UnaryOp::IsFinite, "never an error: every dtype is accepted";
}

/// Integer division by zero is an error in PyTorch. smelt checks it eagerly whenever the
/// divisor's values are already known (a scalar, or a realized tensor); a divisor still being
/// computed lazily yields 0 where it is zero instead of trapping.
fn check_nonzero_divisor(divisor: &Operand) -> Result<()> {
    let has_zero = match divisor {
        Operand::Scalar(s) => s.as_i64() == 0,
        Operand::Tensor(t) => {
            t.is_realized() && t.try_to_scalars()?.iter().any(|v| v.as_i64() == 0)
        }
    };
    if has_zero {
        return Err(Error::value(
            "ZeroDivisionError: integer division or modulo by zero",
        ));
    }
    Ok(())
}

/// `eq`/`ne` of a float16 or bfloat16 tensor with dims and a 0-dim complex tensor or complex
/// scalar, which promote to complex32 (or its bfloat16 twin) in PyTorch: smelt lacks those, so
/// it rounds the complex operand's parts to the half dtype, as the cast to complex32 does,
/// and compares in complex64, which holds every half value exactly.
#[track_caller]
fn half_complex_compare(a: &Tensor, b: &Operand, op: BinaryOp) -> Result<Tensor> {
    let half = if a.dtype().is_complex() {
        b.dtype()
    } else {
        a.dtype()
    };
    let round = |x: &Operand| -> Result<Operand> {
        Ok(match x {
            Operand::Scalar(Scalar::Complex(re, im)) => {
                let r = |v: f64| Scalar::Float(v).cast(half).as_f64();
                Operand::Scalar(Scalar::Complex(r(*re), r(*im)))
            }
            Operand::Tensor(t) if t.dtype().is_complex() => {
                let part = |p: Tensor| p.try_to_dtype(half, false)?.try_to_dtype(DType::F32, false);
                Operand::Tensor(Tensor::try_complex(
                    &part(t.try_real()?)?,
                    &part(t.try_imag()?)?,
                )?)
            }
            other @ (Operand::Tensor(_) | Operand::Scalar(_)) => other.clone(),
        })
    };
    let (x, y) = (round(&Operand::from(a))?, round(b)?);
    let Operand::Tensor(x) = x else {
        unreachable!("invariant: a tensor stays a tensor")
    };
    record(
        Op::Binary {
            op,
            compute: DType::C64,
        },
        DType::Bool,
        DType::C64,
        &[&x, &y],
    )
}

/// The kinds of binary op, for dtype rules.
fn binary_dtypes(op: BinaryOp, common: DType, a: DType, b: DType) -> Result<(DType, DType)> {
    let name = op.name();
    if common.is_complex() {
        if op == BinaryOp::Sub && (a.is_bool() || b.is_bool()) {
            return Err(Error::dtype(
                "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
            ));
        }
        return complex_binary_dtypes(op, common);
    }
    Ok(match op {
        BinaryOp::Div | BinaryOp::Atan2 => {
            let c = if common.is_float() {
                common
            } else {
                get_default_dtype()
            };
            (c, c)
        }
        BinaryOp::Sub => {
            if a.is_bool() && b.is_bool() {
                return Err(Error::dtype(
                    "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.",
                ));
            }
            if a.is_bool() || b.is_bool() {
                return Err(Error::dtype(
                    "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
                ));
            }
            (common, common)
        }
        BinaryOp::DivTrunc | BinaryOp::DivFloor | BinaryOp::Remainder | BinaryOp::Fmod => {
            if common.is_bool() {
                return Err(Error::dtype(format!(
                    "\"{name}_cpu\" not implemented for 'Bool'"
                )));
            }
            (common, common)
        }
        BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor => {
            if common.is_float() {
                return Err(Error::dtype(format!(
                    "\"{name}_cpu\" not implemented for '{}'",
                    common.torch_name()
                )));
            }
            (common, common)
        }
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            (common, DType::Bool)
        }
        BinaryOp::LogicalAnd | BinaryOp::LogicalOr | BinaryOp::LogicalXor => (common, DType::Bool),
        BinaryOp::Add | BinaryOp::Mul | BinaryOp::Pow | BinaryOp::Maximum | BinaryOp::Minimum => {
            (common, common)
        }
    })
}

/// The compute and result dtypes of a binary op whose operands promote to a complex dtype:
/// arithmetic and the logical ops compute in it, `eq`/`ne` compare both parts; orderings,
/// `maximum`/`minimum`, integer-style division, `atan2` and bitwise ops are refused as PyTorch
/// refuses them, `pow` smelt has no complex formula for.
fn complex_binary_dtypes(op: BinaryOp, common: DType) -> Result<(DType, DType)> {
    let name = op.name();
    let not_for = |kernel: &str| {
        Err(Error::dtype(format!(
            "\"{kernel}\" not implemented for '{}'",
            common.torch_name()
        )))
    };
    match op {
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div => Ok((common, common)),
        BinaryOp::Eq | BinaryOp::Ne => Ok((common, DType::Bool)),
        BinaryOp::LogicalAnd | BinaryOp::LogicalOr | BinaryOp::LogicalXor => {
            Ok((common, DType::Bool))
        }
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            not_for(&format!("{name}_cpu"))
        }
        BinaryOp::Maximum | BinaryOp::Minimum => Err(Error::dtype(format!(
            "{name} not implemented for complex tensors."
        ))),
        BinaryOp::DivTrunc | BinaryOp::DivFloor => not_for("div_floor_cpu"),
        BinaryOp::Remainder | BinaryOp::Fmod => not_for(&format!("{name}_cpu")),
        BinaryOp::Atan2 => not_for("atan2_cpu"),
        BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor => not_for(&format!("{name}_cpu")),
        BinaryOp::Pow => Err(Error::dtype(format!(
            "pow: smelt has no complex formula for this op (dtype {common})"
        ))),
    }
}

impl Tensor {
    /// Applies the unary elementwise op `op` with PyTorch's dtype rules: what [`Tensor::exp`] and
    /// its siblings call, for code that picks the op at run time. Errors: a `dtype` error for a
    /// dtype the op refuses (bool for `neg`, `abs`, `relu`, rounding; float for `bitwise_not`).
    #[track_caller]
    pub fn try_unary(&self, op: UnaryOp) -> Result<Tensor> {
        if let Some(coo) = self.coo()
            && op == UnaryOp::Neg
        {
            return self.sparse_neg(coo);
        }
        if let Some(name) = refused_unary(op, false) {
            refuse_named(&name, [self])?;
        }
        Ok(self.unary_unnamed(op)?.with_dim_names(self.dim_names()))
    }

    #[track_caller]
    fn unary_unnamed(&self, op: UnaryOp) -> Result<Tensor> {
        let (compute, out) = unary_dtypes(op, self.dtype())?;
        let exact = !self.dtype().is_float() && !self.dtype().is_complex();
        if matches!(op, UnaryOp::IsInf | UnaryOp::IsFinite) && exact {
            // PyTorch answers these with `zeros_like`/`ones_like(self, bool)`: self's layout.
            return self.try_full_like(
                Scalar::Bool(op == UnaryOp::IsFinite),
                Some(DType::Bool),
                None,
            );
        }
        record(Op::Unary { op, compute }, out, compute, &[self])
    }

    /// Applies the binary elementwise op `op` with broadcasting, type promotion and PyTorch's dtype
    /// rules: what [`Tensor::add`] and its siblings call, for code that picks the op at run time.
    /// Errors: a `shape` error when the shapes do not broadcast, a `names` error when the dim names
    /// do not match (or the op refuses named tensors), a `device` error for tensors on different
    /// devices, a `dtype` error for a dtype the op refuses, a `value` error for an integer division
    /// by a known zero or an integer tensor to a negative integer scalar power.
    #[track_caller]
    pub fn try_binary(&self, other: impl Into<Operand>, op: BinaryOp) -> Result<Tensor> {
        let a = self;
        let b = other.into();
        if a.is_sparse() || matches!(&b, Operand::Tensor(t) if t.is_sparse()) {
            return crate::sparse::binary(a, &b, op);
        }
        if let Some(name) = refused_binary(op, false, &b) {
            refuse_named_operands(&name, &[a, &b])?;
        }
        let names = unify_operands(&[a, &b], "broadcast")?;
        let common = match result_type_of([a.operand(), b.operand()]) {
            Err(_) if matches!(op, BinaryOp::Eq | BinaryOp::Ne) => {
                return half_complex_compare(a, &b, op).map(|t| t.with_dim_names(names));
            }
            r => r?,
        };
        if op == BinaryOp::Pow
            && !common.is_float()
            && !common.is_complex()
            && let Operand::Scalar(Scalar::Int(e)) = b
            && e < 0
        {
            return Err(Error::value(
                "Integers to negative integer powers are not allowed.",
            ));
        }
        let dtypes = binary_dtypes(op, common, a.dtype(), b.dtype());
        if let Err(e) = &dtypes
            && e.message.contains("not implemented for")
            && let Operand::Tensor(t) = &b
        {
            // A dtype PyTorch's kernel refuses ("div_floor_cpu" not implemented for 'Bool') is
            // found only after the TensorIterator has broadcast the shapes.
            broadcast_shapes(a.shape(), t.shape())?;
        }
        let (compute, out) = dtypes?;
        if !compute.is_float()
            && !compute.is_complex()
            && matches!(
                op,
                BinaryOp::DivTrunc | BinaryOp::DivFloor | BinaryOp::Remainder | BinaryOp::Fmod
            )
        {
            // Nothing is divided when the broadcast result is empty, and shapes that do not
            // broadcast are reported first (by `record`).
            let divides = match &b {
                Operand::Tensor(t) => {
                    broadcast_shapes(a.shape(), t.shape()).is_ok_and(|s| !s.contains(&0))
                }
                Operand::Scalar(_) => a.numel() > 0,
            };
            if divides {
                check_nonzero_divisor(&b)?;
            }
        }
        let r = record(Op::Binary { op, compute }, out, compute, &[a, &b])?;
        if op == BinaryOp::Pow && matches!(b, Operand::Scalar(_)) {
            // `pow(Tensor, Scalar)` is a unary TensorIterator in PyTorch: the exponent takes no
            // part in the layout (it matters for empty tensors, which the fast path lays out
            // row-major).
            let input = if a.dtype() == compute {
                a.view.clone()
            } else {
                View::new(a.shape().to_vec(), a.view.preserve_format_strides(), 0)
            };
            let strides = elementwise_out_strides(a.shape(), &[&input]);
            let shape = a.shape().to_vec();
            return Ok(r.relayout(&shape, strides).with_dim_names(names));
        }
        // `record`'s result has no names: unnamed operands leave it as it is (no move).
        match names {
            None => Ok(r),
            names => Ok(r.with_dim_names(names)),
        }
    }

    /// `torch.add(self, other, alpha=alpha)` (`op` = [`BinaryOp::Add`]) or `torch.sub(…, alpha)`
    /// (`op` = [`BinaryOp::Sub`]): `self op alpha * other`. Errors: those of
    /// [`Tensor::try_binary`], and a `dtype` error for a float `alpha` with integer operands or an
    /// integer `alpha` other than 0 and 1 with bool ones.
    #[track_caller]
    pub fn try_add_scaled(
        &self,
        other: impl Into<Operand>,
        alpha: impl Into<Scalar>,
        op: BinaryOp,
    ) -> Result<Tensor> {
        let a = self;
        let b = other.into();
        let alpha = alpha.into();
        if a.is_sparse() || matches!(&b, Operand::Tensor(t) if t.is_sparse()) {
            return crate::sparse::add(a, &b, alpha, op);
        }
        if let Some(name) = refused_binary(op, false, &b) {
            refuse_named_operands(&name, &[a, &b])?;
        }
        let names = unify_operands(&[a, &b], "broadcast")?;
        let common = result_type_of([a.operand(), b.operand()])?;
        let (compute, out) = binary_dtypes(op, common, a.dtype(), b.dtype())?;
        if !compute.is_complex() && alpha.is_complex() {
            return Err(Error::dtype(
                "For non-complex input tensors, argument alpha must not be a complex number.",
            ));
        }
        if !compute.is_float() && !compute.is_complex() && matches!(alpha, Scalar::Float(_)) {
            return Err(Error::dtype(
                "For integral input tensors, argument alpha must not be a floating point number.",
            ));
        }
        if compute.is_bool() && matches!(alpha, Scalar::Int(i) if i != 0 && i != 1) {
            return Err(Error::dtype(
                "Boolean alpha only supported for Boolean results.",
            ));
        }
        let b = if alpha == Scalar::Int(1) || alpha == Scalar::Bool(true) {
            b
        } else {
            Operand::Tensor(record(
                Op::Binary {
                    op: BinaryOp::Mul,
                    compute,
                },
                compute,
                compute,
                &[&b, &Operand::Scalar(alpha)],
            )?)
        };
        Ok(record(Op::Binary { op, compute }, out, compute, &[a, &b])?.with_dim_names(names))
    }

    /// `condition.where(a, b)`: [`Tensor::try_where`] with `self` as the condition.
    #[track_caller]
    pub fn try_where_(&self, a: impl Into<Operand>, b: impl Into<Operand>) -> Result<Tensor> {
        Tensor::try_where(self, a, b)
    }

    /// `torch.where(condition, a, b)`: `a` where `condition` is true, else `b`. The three
    /// broadcast; the result's dtype promotes `a` and `b`. Errors: a `dtype` error for a condition
    /// neither bool nor uint8, a `shape` error when the shapes do not broadcast, a `names` error
    /// for a named operand, a `device` error for tensors on different devices.
    #[track_caller]
    pub fn try_where(
        condition: &Tensor,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
    ) -> Result<Tensor> {
        crate::sparse::refuse_sparse("where", [condition])?;
        if condition.dtype() != DType::Bool && condition.dtype() != DType::U8 {
            return Err(Error::dtype(format!(
                "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
                condition.dtype().torch_name()
            )));
        }
        let (a, b) = (a.into(), b.into());
        let c = Operand::from(condition);
        refuse_named_operands("where.self", &[&c, &a, &b])?;
        let dtype = try_result_type(&[&a, &b])?;
        record(Op::Where, dtype, dtype, &[&c, &a, &b])
    }

    /// `torch.where(condition, a, b)`: `a` where `condition` is true, else `b` (see
    /// [`Tensor::try_where`], whose errors it panics with).
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let c = Tensor::new([true, false]);
    /// let r = Tensor::r#where(&c, 1.0f32, &Tensor::new([5.0f32, 6.0]));
    /// assert_eq!(r.to_vec::<f32>(), [1.0, 6.0]);
    /// ```
    #[track_caller]
    pub fn r#where(condition: &Tensor, a: impl Into<Operand>, b: impl Into<Operand>) -> Tensor {
        ok(Tensor::try_where(condition, a, b))
    }

    /// `torch.clamp(self, min, max)`: each element limited to `[min, max]` (either bound may be
    /// `None`, not both; a bound is a scalar or a tensor that broadcasts). When `min > max` every
    /// element becomes `max`; NaN stays NaN. Errors: a `value` error when both bounds are `None`,
    /// a `dtype` error for bool input with bool bounds, a `shape` error when the shapes do not
    /// broadcast, a `names` error when the dim names do not match.
    #[track_caller]
    pub fn try_clamp(&self, min: Option<Operand>, max: Option<Operand>) -> Result<Tensor> {
        crate::sparse::refuse_sparse("clamp", [self])?;
        if min.is_none() && max.is_none() {
            return Err(Error::value(
                "torch.clamp: At least one of 'min' or 'max' must not be None",
            ));
        }
        let x = Operand::from(self);
        let mut all: Vec<&dyn AsOperand> = vec![&x];
        all.extend(min.iter().map(|o| o as &dyn AsOperand));
        all.extend(max.iter().map(|o| o as &dyn AsOperand));
        let names = unify_operands(&all, "broadcast")?;
        let dtype = result_type_of(all.iter().map(|o| o.operand()))?;
        if dtype.is_complex() {
            return Err(Error::dtype("clamp is not supported for complex types"));
        }
        if self.dtype().is_bool() && dtype.is_bool() {
            return Err(Error::dtype("\"clamp_cpu\" not implemented for 'Bool'"));
        }
        let shape = broadcast_all(&all)?;
        // Scalar bounds are parameters of a unary kernel in PyTorch, not operands.
        let refs: Vec<&View> = all
            .iter()
            .filter_map(|o| match o.operand() {
                OperandRef::Tensor(t) => Some(&t.view),
                OperandRef::Scalar(_) => None,
            })
            .collect();
        let strides = elementwise_out_strides(&shape, &refs);
        let mut cur = x.clone();
        if let Some(lo) = &min {
            cur = Operand::Tensor(record(
                Op::Binary {
                    op: BinaryOp::Maximum,
                    compute: dtype,
                },
                dtype,
                dtype,
                &[&cur, lo],
            )?);
        }
        if let Some(hi) = &max {
            cur = Operand::Tensor(record(
                Op::Binary {
                    op: BinaryOp::Minimum,
                    compute: dtype,
                },
                dtype,
                dtype,
                &[&cur, hi],
            )?);
        }
        let Operand::Tensor(t) = cur else {
            unreachable!("clamp records at least one node")
        };
        // The chain's last node writes with the layout of all operands together.
        Ok(t.relayout(&shape, strides).with_dim_names(names))
    }

    /// `torch.clamp(self, min, max)`; panics where [`Tensor::try_clamp`] returns an error.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([-2.0f32, 0.5, 3.0]);
    /// let y = x.clamp(Some(0.0.into()), Some(1.0.into()));
    /// assert_eq!(y.to_vec::<f32>(), [0.0, 0.5, 1.0]);
    /// ```
    #[track_caller]
    pub fn clamp(&self, min: Option<Operand>, max: Option<Operand>) -> Tensor {
        ok(self.try_clamp(min, max))
    }

    /// Re-targets the output layout of a freshly computed, unshared tensor.
    #[track_caller]
    pub(crate) fn relayout(self, shape: &[usize], strides: Dims<isize>) -> Tensor {
        if self.view.strides == strides {
            return self;
        }
        let node = self.storage.current();
        let held = crate::lazy::walks();
        let inputs = match node.state(&held) {
            crate::lazy::NodeState::Pending(inputs) => inputs.to_vec(),
            crate::lazy::NodeState::Realized(_) | crate::lazy::NodeState::Lost => return self,
        };
        drop(held);
        // The same sizes and dtype as the node it replaces, so no size check can fail.
        Tensor::computed_unchecked(
            node.op.clone(),
            node.dtype,
            View::new(shape, strides, 0),
            inputs,
        )
    }

    /// `torch.round(self, decimals=decimals)`: each element rounded half to even, after scaling by
    /// 10^decimals (integers are unchanged when `decimals` is 0). Errors: a `dtype` error for bool
    /// input, or for integer input with `decimals != 0`; a `names` error for a named tensor, even
    /// with `decimals = 0` (PyTorch 2.11 refuses `round.decimals` on names; plain
    /// [`Tensor::round`] keeps them).
    #[track_caller]
    pub fn try_round(&self, decimals: i64) -> Result<Tensor> {
        crate::sparse::refuse_sparse("round", [self])?;
        refuse_named("round.decimals", [self])?;
        if decimals == 0 {
            return self.try_unary(UnaryOp::Round);
        }
        if !self.dtype().is_float() {
            return Err(Error::dtype(format!(
                "round with decimals is not implemented for '{}'",
                self.dtype().torch_name()
            )));
        }
        let scale = 10f64.powi(decimals as i32);
        self.try_mul(scale)?
            .try_unary(UnaryOp::Round)?
            .try_div(scale)
    }

    /// `torch.round`: each element rounded half to even, in the input's dtype, names kept; panics
    /// where `try_unary(UnaryOp::Round)` returns an error (bool input).
    #[track_caller]
    pub fn round(&self) -> Tensor {
        ok(self.try_unary(UnaryOp::Round))
    }

    /// `tensor.to(dtype, copy=copy)`: `self` when the dtype is unchanged and `copy` is false, else
    /// a converted copy with preserve-format strides (floats to integers truncate toward zero).
    /// Never an error today; `Result` for symmetry with the other conversions.
    #[track_caller]
    pub fn try_to_dtype(&self, dtype: DType, copy: bool) -> Result<Tensor> {
        if let Some(coo) = self.coo() {
            return self.sparse_to_dtype(coo, dtype, copy);
        }
        if dtype == self.dtype() && !copy {
            return Ok(self.clone());
        }
        let strides = self.view.preserve_format_strides();
        Ok(Tensor::computed(
            Op::Cast,
            dtype,
            &self.view.shape,
            strides,
            vec![self.source()],
        )?
        .with_dim_names(self.dim_names()))
    }

    /// `tensor.clone(memory_format=format)`; panics where [`Tensor::try_clone_format`] returns
    /// an error.
    #[track_caller]
    pub fn clone_format(&self, format: MemoryFormat) -> Tensor {
        ok(self.try_clone_format(format))
    }

    /// `tensor.to(dtype)`: the elements converted to `dtype` (`self` when it already has it).
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([1.7f32, -1.7]);
    /// assert_eq!(x.to_dtype(DType::I64).to_vec::<i64>(), [1, -1]);
    /// ```
    #[track_caller]
    pub fn to_dtype(&self, dtype: DType) -> Tensor {
        ok(self.try_to_dtype(dtype, false))
    }

    /// `tensor.clone(memory_format=format)`: a fresh copy of the data laid out in `format`
    /// ([`MemoryFormat::Preserve`] keeps a dense layout's strides). Errors: a `value` error (as
    /// PyTorch's) when `format` needs a rank the tensor lacks (`ChannelsLast` needs 4 dims).
    #[track_caller]
    pub fn try_clone_format(&self, format: MemoryFormat) -> Result<Tensor> {
        if let Some(coo) = self.coo()
            && format == MemoryFormat::Preserve
        {
            return self.sparse_clone(coo);
        }
        crate::sparse::refuse_sparse("clone", [self])?;
        let strides = self.view.like_strides(format)?;
        Ok(Tensor::computed(
            Op::Cast,
            self.dtype(),
            &self.view.shape,
            strides,
            vec![self.source()],
        )?
        .with_dim_names(self.dim_names()))
    }

    /// `tensor.clone()`: a copy of the data with the same strides when dense (`Clone::clone` copies
    /// only the handle). Never panics.
    #[track_caller]
    pub fn deep_clone(&self) -> Tensor {
        ok(self.try_clone_format(MemoryFormat::Preserve))
    }

    /// `tensor.contiguous(memory_format=format)`: `self` when already contiguous in `format`, else
    /// a copy laid out so. Errors: a `value` error for [`MemoryFormat::Preserve`] on a
    /// non-contiguous tensor, or when `format` needs a rank the tensor lacks.
    #[track_caller]
    pub fn try_contiguous_format(&self, format: MemoryFormat) -> Result<Tensor> {
        if self.is_sparse() {
            return Err(Error::layout(format!(
                "unsupported memory format option {format:?}: contiguous() of a sparse COO tensor"
            )));
        }
        if format == MemoryFormat::Preserve {
            if self.is_contiguous() {
                return Ok(self.clone());
            }
            return Err(Error::value(
                "preserve memory format is unsupported by the contiguous operator",
            ));
        }
        if self.view.is_contiguous_as(format) {
            // The rank check still applies to an already-contiguous tensor.
            smelt_ir::view::format_strides(&self.view.shape, format)?;
            return Ok(self.clone());
        }
        self.try_clone_format(format)
    }

    /// `tensor.contiguous()`: `self` when row-major contiguous, else a row-major copy. Never
    /// panics.
    #[track_caller]
    pub fn contiguous(&self) -> Tensor {
        ok(self.try_contiguous_format(MemoryFormat::Contiguous))
    }
}

/// Generates a binary op and its `try_` form. The doc lines given document the plain form; the
/// string after the op adds the op's own errors to those every binary op has.
macro_rules! binary_ops {
    ($(
        $(#[doc = $doc:expr])*
        $name:ident, $try_name:ident => $op:expr, $errors:expr;
    )*) => {
        impl Tensor {
            $(
                #[doc = concat!(
                    "[`Tensor::", stringify!($name), "`] returning a `Result`: a `shape` error ",
                    "when the shapes do not broadcast, a `names` error when the dim names do not ",
                    "match, a `device` error for tensors on different devices", $errors, "."
                )]
                #[track_caller]
                pub fn $try_name(&self, other: impl Into<Operand>) -> Result<Tensor> {
                    self.try_binary(other, $op)
                }

                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = concat!(
                    "`other` is a tensor or a scalar; the two broadcast, and the result's dtype ",
                    "follows PyTorch's type promotion ([`result_type`](crate::result_type)). ",
                    "Panics where [`Tensor::", stringify!($try_name), "`] returns an error."
                )]
                #[track_caller]
                pub fn $name(&self, other: impl Into<Operand>) -> Tensor {
                    ok(self.$try_name(other))
                }
            )*
        }
    };
}

binary_ops! {
    /// `torch.add`: `self + other` elementwise (also the `+` operator).
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let a = Tensor::new([[1, 2], [3, 4]]);
    /// let b = a.add(&Tensor::new([10, 20])); // broadcasts over rows
    /// assert_eq!(b.to_vec::<i64>(), [11, 22, 13, 24]);
    /// let c = &a + 0.5; // an int tensor and a float scalar: the default float dtype
    /// assert_eq!(c.dtype(), DType::F32);
    /// ```
    add, try_add => BinaryOp::Add, "";
    /// `torch.sub`: `self - other` elementwise (also the `-` operator).
    sub, try_sub => BinaryOp::Sub, ", and a `dtype` error when either operand is bool";
    /// `torch.mul`: `self * other` elementwise (also the `*` operator).
    mul, try_mul => BinaryOp::Mul, "";
    /// `torch.div`: true division `self / other` elementwise (also the `/` operator); integer
    /// and bool operands divide in the default float dtype.
    div, try_div => BinaryOp::Div, "";
    /// `torch.floor_divide`: `floor(self / other)` elementwise, in the promoted dtype.
    floor_divide, try_floor_divide => BinaryOp::DivFloor,
        ", a `dtype` error for bool operands, and a `value` error for an integer division by a \
        zero whose value is known (a scalar or a realized tensor)";
    /// `torch.remainder`: Python's `%`, the remainder with the divisor's sign (also the `%`
    /// operator).
    remainder, try_remainder => BinaryOp::Remainder,
        ", a `dtype` error for bool operands, a `value` error for an integer division by a \
        zero whose value is known, and a `names` error for a named tensor";
    /// `torch.fmod`: C's `fmod`, the remainder with the dividend's sign.
    fmod, try_fmod => BinaryOp::Fmod,
        ", a `dtype` error for bool operands, a `value` error for an integer division by a \
        zero whose value is known, and a `names` error for a named tensor";
    /// `torch.pow`: `self` to the power `other` elementwise.
    pow, try_pow => BinaryOp::Pow,
        ", and a `value` error for an integer tensor to a negative integer scalar power";
    /// `torch.maximum`: the larger of the two elements (NaN if either is NaN).
    maximum, try_maximum => BinaryOp::Maximum, ", and a `names` error for a named tensor";
    /// `torch.minimum`: the smaller of the two elements (NaN if either is NaN).
    minimum, try_minimum => BinaryOp::Minimum, ", and a `names` error for a named tensor";
    /// `torch.atan2`: the angle of the point `(other, self)` in radians; integer and bool
    /// operands compute in the default float dtype.
    atan2, try_atan2 => BinaryOp::Atan2, "";
    /// `torch.eq`: a bool tensor, true where `self == other` (compared in the promoted dtype).
    eq, try_eq => BinaryOp::Eq, "";
    /// `torch.ne`: a bool tensor, true where `self != other`.
    ne, try_ne => BinaryOp::Ne, "";
    /// `torch.lt`: a bool tensor, true where `self < other`.
    lt, try_lt => BinaryOp::Lt, "";
    /// `torch.le`: a bool tensor, true where `self <= other`.
    le, try_le => BinaryOp::Le, "";
    /// `torch.gt`: a bool tensor, true where `self > other`.
    gt, try_gt => BinaryOp::Gt, "";
    /// `torch.ge`: a bool tensor, true where `self >= other`.
    ge, try_ge => BinaryOp::Ge, "";
    /// `torch.logical_and`: a bool tensor, true where both elements are nonzero.
    logical_and, try_logical_and => BinaryOp::LogicalAnd, "";
    /// `torch.logical_or`: a bool tensor, true where either element is nonzero.
    logical_or, try_logical_or => BinaryOp::LogicalOr, "";
    /// `torch.logical_xor`: a bool tensor, true where exactly one element is nonzero.
    logical_xor, try_logical_xor => BinaryOp::LogicalXor, "";
    /// `torch.bitwise_and`: `self & other` for integer and bool operands (also the `&`
    /// operator).
    bitwise_and, try_bitwise_and => BinaryOp::BitAnd,
        ", a `dtype` error for float operands, and a `names` error for a named tensor";
    /// `torch.bitwise_or`: `self | other` for integer and bool operands (also the `|`
    /// operator).
    bitwise_or, try_bitwise_or => BinaryOp::BitOr,
        ", a `dtype` error for float operands, and a `names` error for a named tensor";
    /// `torch.bitwise_xor`: `self ^ other` for integer and bool operands (also the `^`
    /// operator).
    bitwise_xor, try_bitwise_xor => BinaryOp::BitXor,
        ", a `dtype` error for float operands, and a `names` error for a named tensor";
}

/// The `rounding_mode` of `torch.div` ([`Tensor::try_div_mode`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundingMode {
    /// `"trunc"`: round the quotient toward zero (C's integer division).
    Trunc,
    /// `"floor"`: round the quotient down (Python's `//`).
    Floor,
}

impl Tensor {
    /// `torch.div(self, other, rounding_mode=mode)`: true division for `None`, else the quotient
    /// rounded by `mode`. Errors: those of [`Tensor::try_div`] / [`Tensor::try_floor_divide`]
    /// (a `dtype` error for bool operands with a mode, a `value` error for an integer division by a
    /// known zero), and a `names` error for a named tensor with a mode.
    #[track_caller]
    pub fn try_div_mode(
        &self,
        other: impl Into<Operand>,
        mode: Option<RoundingMode>,
    ) -> Result<Tensor> {
        let op = match mode {
            None => BinaryOp::Div,
            Some(RoundingMode::Trunc) => BinaryOp::DivTrunc,
            Some(RoundingMode::Floor) => BinaryOp::DivFloor,
        };
        let other = other.into();
        if mode.is_some() {
            refuse_named_operands("div.Tensor_mode", &[&Operand::from(self), &other])?;
        }
        self.try_binary(other, op)
    }
}

/// The overload PyTorch 2.11 names when it refuses `op` on named tensors (`None`: the op keeps
/// names): the `.Tensor` or `.Scalar` overload by `other`'s kind, `op_` in place. `div` with a
/// rounding mode is always `div.Tensor_mode` (Python wraps a number); `floor_divide` is
/// supported; comparisons are supported out of place only; `maximum`/`minimum` have one overload.
pub(crate) fn refused_binary(op: BinaryOp, inplace: bool, other: &Operand) -> Option<String> {
    let underscore = if inplace { "_" } else { "" };
    let overload = match other {
        Operand::Tensor(_) => "Tensor",
        Operand::Scalar(_) => "Scalar",
    };
    let base = match op {
        BinaryOp::Remainder => "remainder",
        BinaryOp::Fmod => "fmod",
        BinaryOp::BitAnd => "bitwise_and",
        BinaryOp::BitOr => "bitwise_or",
        BinaryOp::BitXor => "bitwise_xor",
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
            if inplace =>
        {
            op.name()
        }
        BinaryOp::Maximum => return Some("maximum".to_string()),
        BinaryOp::Minimum => return Some("minimum".to_string()),
        BinaryOp::DivTrunc => return Some(format!("div{underscore}.Tensor_mode")),
        BinaryOp::Add
        | BinaryOp::Sub
        | BinaryOp::Mul
        | BinaryOp::Div
        | BinaryOp::DivFloor
        | BinaryOp::Pow
        | BinaryOp::Atan2
        | BinaryOp::Eq
        | BinaryOp::Ne
        | BinaryOp::Lt
        | BinaryOp::Le
        | BinaryOp::Gt
        | BinaryOp::Ge
        | BinaryOp::LogicalAnd
        | BinaryOp::LogicalOr
        | BinaryOp::LogicalXor => return None,
    };
    Some(format!("{base}{underscore}.{overload}"))
}

/// The name PyTorch 2.11 reports when it refuses the unary `op` on a named tensor (`op_` in
/// place); `None` for the ops that keep names.
pub(crate) fn refused_unary(op: UnaryOp, inplace: bool) -> Option<String> {
    let underscore = if inplace { "_" } else { "" };
    match op {
        UnaryOp::Exp2 => Some(format!("{}{underscore}", op.name())),
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
        | UnaryOp::Trunc
        | UnaryOp::LogicalNot
        | UnaryOp::BitwiseNot
        | UnaryOp::IsNan
        | UnaryOp::IsInf
        | UnaryOp::IsFinite
        | UnaryOp::Angle => None,
    }
}

macro_rules! operator_traits {
    ($($trait:ident, $method:ident, $op:ident;)*) => {
        $(
            impl<O: Into<Operand>> std::ops::$trait<O> for &Tensor {
                type Output = Tensor;
                #[track_caller]
                fn $method(self, rhs: O) -> Tensor {
                    self.$op(rhs)
                }
            }
            impl<O: Into<Operand>> std::ops::$trait<O> for Tensor {
                type Output = Tensor;
                #[track_caller]
                fn $method(self, rhs: O) -> Tensor {
                    (&self).$op(rhs)
                }
            }
        )*
    };
}

operator_traits! {
    Add, add, add;
    Sub, sub, sub;
    Mul, mul, mul;
    Div, div, div;
    Rem, rem, remainder;
    BitAnd, bitand, bitwise_and;
    BitOr, bitor, bitwise_or;
    BitXor, bitxor, bitwise_xor;
}

impl std::ops::Neg for &Tensor {
    type Output = Tensor;
    #[track_caller]
    fn neg(self) -> Tensor {
        Tensor::neg(self)
    }
}

impl std::ops::Neg for Tensor {
    type Output = Tensor;
    #[track_caller]
    fn neg(self) -> Tensor {
        Tensor::neg(&self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lazy::NodeState;

    /// What `record`'s general path makes of `operands`: TensorIterator's output view, the
    /// buffer length behind it, and each operand's view broadcast to the output's shape.
    fn general(operands: &[&dyn AsOperand]) -> (View, usize, Vec<View>) {
        let shape = broadcast_all(operands).expect("shapes broadcast");
        let own: Vec<View> = operands
            .iter()
            .map(|o| match o.operand() {
                OperandRef::Tensor(t) => t.view.clone(),
                OperandRef::Scalar(_) => View::contiguous(&[]),
            })
            .collect();
        let own: Vec<&View> = own.iter().collect();
        let out = View::new(shape.clone(), elementwise_out_strides(&shape, &own), 0);
        let len = out.address_range().map_or(0, |(_, hi)| hi as usize + 1);
        let read = operands
            .iter()
            .map(|o| match o.operand() {
                OperandRef::Tensor(t) => t.view.broadcast_to(&shape),
                OperandRef::Scalar(_) => View::new(shape.clone(), Dims::filled(0, shape.len()), 0),
            })
            .collect();
        (out, len, read)
    }

    /// The output view, buffer length and input views of the node behind `t`.
    fn recorded(t: &Tensor) -> (View, usize, Vec<View>) {
        let node = t.storage.current();
        let held = crate::lazy::walks();
        let NodeState::Pending(inputs) = node.state(&held) else {
            panic!("a recorded op is pending");
        };
        let read = inputs.iter().map(|(_, v)| v.clone()).collect();
        (t.view.clone(), node.len, read)
    }

    #[test]
    fn row_major_operands_record_what_the_general_path_does() {
        let add = Op::Binary {
            op: BinaryOp::Add,
            compute: DType::F32,
        };
        let half = Operand::Scalar(Scalar::Float(0.5));
        let shapes: [&[usize]; 8] = [
            &[],
            &[16],
            &[2, 3],
            &[1, 4],
            &[4, 1],
            &[3, 0],
            &[0],
            &[2, 1, 3],
        ];
        for shape in shapes {
            let numel = shape.iter().product();
            let a = Tensor::from_vec(vec![1.0f32; numel], shape);
            let b = Tensor::from_vec(vec![2.0f32; numel], shape);
            let pairs: [[&dyn AsOperand; 2]; 3] = [[&a, &half], [&half, &a], [&a, &b]];
            for operands in pairs {
                assert!(
                    row_major_operands(&add, DType::F32, &operands)
                        .is_some_and(|t| t.device() == Device::Cpu),
                    "{shape:?}"
                );
                let t = record(add.clone(), DType::F32, DType::F32, &operands).expect("records");
                assert_eq!(recorded(&t), general(&operands), "{shape:?}");
            }
        }
        // The general path's cases: a transposed operand, shapes that broadcast, an operand
        // read in another dtype, only scalars.
        let a = Tensor::from_vec(vec![1.0f32; 6], &[2, 3]);
        let at = Tensor::from_vec(vec![1.0f32; 6], &[3, 2]).t();
        let row = Tensor::from_vec(vec![1.0f32; 3], &[3]);
        let wide = Tensor::from_vec(vec![1.0f64; 6], &[2, 3]);
        let refused: [[&dyn AsOperand; 2]; 4] =
            [[&a, &at], [&a, &row], [&a, &wide], [&half, &half]];
        for operands in refused {
            assert!(row_major_operands(&add, DType::F32, &operands).is_none());
        }
    }
}
