//! Elementwise ops: unary math, binary arithmetic and comparisons with broadcasting and type
//! promotion, `where`, `clamp`, casts, `contiguous` and `clone`. Output strides follow
//! TensorIterator (SEMANTICS.md §4.1).

use crate::default_dtype::get_default_dtype;
use crate::device::{different_devices, on_device};
use crate::names::{refuse_named, refuse_named_operands, unify_operands};
use crate::promote::{AsOperand, Operand, OperandRef, result_type, result_type_of};
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
    let scalar = View::contiguous(&[]);
    let mut converted = converted.iter();
    let views = operands.iter().enumerate().map(|(i, o)| match o.operand() {
        OperandRef::Tensor(t) if converts(i, t) => converted
            .next()
            .expect("invariant: one converted view per converted operand"),
        OperandRef::Tensor(t) => &t.view,
        OperandRef::Scalar(_) => &scalar,
    });
    // Ops have at most three operands: their views are listed on the stack.
    let mut listed = [&scalar; 3];
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
    let mut inputs = Vec::with_capacity(operands.len());
    for (i, o) in operands.iter().enumerate() {
        let operand = match moved.get(i) {
            Some(Some(t)) => OperandRef::Tensor(t),
            Some(None) | None => o.operand(),
        };
        inputs.push(operand.source(&shape, scalar_dtype, device));
    }
    Ok(Tensor::computed_into(
        op,
        dtype,
        View::new(shape, strides, 0),
        inputs,
    ))
}

/// Which dtype family an op accepts and what it returns for ints.
fn unary_dtypes(op: UnaryOp, input: DType) -> Result<(DType, DType)> {
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
        | UnaryOp::Erf => (float_out(), float_out()),
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

macro_rules! unary_ops {
    ($($name:ident, $try_name:ident => $op:expr;)*) => {
        impl Tensor {
            $(
                #[track_caller]
                pub fn $try_name(&self) -> Result<Tensor> {
                    self.try_unary($op)
                }
                #[track_caller]
                pub fn $name(&self) -> Tensor {
                    ok(self.$try_name())
                }
            )*
        }
    };
}

unary_ops! {
    neg, try_neg => UnaryOp::Neg;
    abs, try_abs => UnaryOp::Abs;
    sign, try_sign => UnaryOp::Sign;
    exp, try_exp => UnaryOp::Exp;
    expm1, try_expm1 => UnaryOp::Expm1;
    log, try_log => UnaryOp::Log;
    log2, try_log2 => UnaryOp::Log2;
    log1p, try_log1p => UnaryOp::Log1p;
    exp2, try_exp2 => UnaryOp::Exp2;
    sqrt, try_sqrt => UnaryOp::Sqrt;
    rsqrt, try_rsqrt => UnaryOp::Rsqrt;
    reciprocal, try_reciprocal => UnaryOp::Reciprocal;
    square, try_square => UnaryOp::Square;
    sin, try_sin => UnaryOp::Sin;
    cos, try_cos => UnaryOp::Cos;
    tan, try_tan => UnaryOp::Tan;
    tanh, try_tanh => UnaryOp::Tanh;
    sigmoid, try_sigmoid => UnaryOp::Sigmoid;
    relu, try_relu => UnaryOp::Relu;
    erf, try_erf => UnaryOp::Erf;
    floor, try_floor => UnaryOp::Floor;
    ceil, try_ceil => UnaryOp::Ceil;
    trunc, try_trunc => UnaryOp::Trunc;
    logical_not, try_logical_not => UnaryOp::LogicalNot;
    bitwise_not, try_bitwise_not => UnaryOp::BitwiseNot;
    isnan, try_isnan => UnaryOp::IsNan;
    isinf, try_isinf => UnaryOp::IsInf;
    isfinite, try_isfinite => UnaryOp::IsFinite;
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

/// The kinds of binary op, for dtype rules.
fn binary_dtypes(op: BinaryOp, common: DType, a: DType, b: DType) -> Result<(DType, DType)> {
    let name = op.name();
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

impl Tensor {
    /// A unary elementwise op with PyTorch's dtype rules.
    #[track_caller]
    pub fn try_unary(&self, op: UnaryOp) -> Result<Tensor> {
        Ok(self.unary_unnamed(op)?.with_dim_names(self.dim_names()))
    }

    #[track_caller]
    fn unary_unnamed(&self, op: UnaryOp) -> Result<Tensor> {
        let (compute, out) = unary_dtypes(op, self.dtype())?;
        if matches!(op, UnaryOp::IsInf | UnaryOp::IsFinite) && !self.dtype().is_float() {
            // PyTorch answers these with `zeros_like`/`ones_like(self, bool)`: self's layout.
            return self.try_full_like(
                Scalar::Bool(op == UnaryOp::IsFinite),
                Some(DType::Bool),
                None,
            );
        }
        record(Op::Unary { op, compute }, out, compute, &[self])
    }

    /// A binary elementwise op with broadcasting, promotion and PyTorch's dtype rules.
    #[track_caller]
    pub fn try_binary(&self, other: impl Into<Operand>, op: BinaryOp) -> Result<Tensor> {
        let a = self;
        let b = other.into();
        if let Some(name) = refused_binary(op) {
            refuse_named_operands(name, &[a, &b])?;
        }
        let names = unify_operands(&[a, &b], "broadcast")?;
        let common = result_type_of([a.operand(), b.operand()]);
        if op == BinaryOp::Pow
            && !common.is_float()
            && let Operand::Scalar(Scalar::Int(e)) = b
            && e < 0
        {
            return Err(Error::value(
                "Integers to negative integer powers are not allowed.",
            ));
        }
        let (compute, out) = binary_dtypes(op, common, a.dtype(), b.dtype())?;
        if !compute.is_float()
            && matches!(
                op,
                BinaryOp::DivTrunc | BinaryOp::DivFloor | BinaryOp::Remainder | BinaryOp::Fmod
            )
        {
            check_nonzero_divisor(&b)?;
        }
        Ok(record(Op::Binary { op, compute }, out, compute, &[a, &b])?.with_dim_names(names))
    }

    /// `self + alpha * other`.
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
        let names = unify_operands(&[a, &b], "broadcast")?;
        let common = result_type_of([a.operand(), b.operand()]);
        let (compute, out) = binary_dtypes(op, common, a.dtype(), b.dtype())?;
        if !compute.is_float() && matches!(alpha, Scalar::Float(_)) {
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

    /// `torch.where(condition, self, other)` as a method of the condition.
    #[track_caller]
    pub fn try_where_(&self, a: impl Into<Operand>, b: impl Into<Operand>) -> Result<Tensor> {
        Tensor::try_where(self, a, b)
    }

    /// `torch.where(condition, a, b)`.
    #[track_caller]
    pub fn try_where(
        condition: &Tensor,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
    ) -> Result<Tensor> {
        if condition.dtype() != DType::Bool && condition.dtype() != DType::U8 {
            return Err(Error::dtype(format!(
                "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
                condition.dtype().torch_name()
            )));
        }
        let (a, b) = (a.into(), b.into());
        let c = Operand::from(condition);
        refuse_named_operands("where.self", &[&c, &a, &b])?;
        let dtype = result_type(&[&a, &b]);
        record(Op::Where, dtype, dtype, &[&c, &a, &b])
    }

    #[track_caller]
    pub fn r#where(condition: &Tensor, a: impl Into<Operand>, b: impl Into<Operand>) -> Tensor {
        ok(Tensor::try_where(condition, a, b))
    }

    /// `clamp(min, max)`: when `min > max` every element becomes `max`.
    #[track_caller]
    pub fn try_clamp(&self, min: Option<Operand>, max: Option<Operand>) -> Result<Tensor> {
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
        let dtype = result_type_of(all.iter().map(|o| o.operand()));
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

    #[track_caller]
    pub fn clamp(&self, min: Option<Operand>, max: Option<Operand>) -> Tensor {
        ok(self.try_clamp(min, max))
    }

    /// Re-targets the output layout of a freshly computed, unshared tensor.
    pub(crate) fn relayout(self, shape: &[usize], strides: Dims<isize>) -> Tensor {
        if self.view.strides == strides {
            return self;
        }
        let node = self.storage.current();
        let inputs = match &*node.state() {
            crate::lazy::NodeState::Pending(inputs) => inputs.to_vec(),
            crate::lazy::NodeState::Realized(_) | crate::lazy::NodeState::Lost => return self,
        };
        Tensor::computed(node.op.clone(), node.dtype, shape, strides, inputs)
    }

    /// `round(decimals)`: half to even, after scaling by 10^decimals.
    #[track_caller]
    pub fn try_round(&self, decimals: i64) -> Result<Tensor> {
        if decimals == 0 {
            return self.try_unary(UnaryOp::Round);
        }
        refuse_named("round.decimals", [self])?;
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

    #[track_caller]
    pub fn round(&self) -> Tensor {
        ok(self.try_round(0))
    }

    /// `to(dtype)`: self when the dtype is unchanged (unless `copy`), else a converted copy
    /// with preserve-format strides.
    #[track_caller]
    pub fn try_to_dtype(&self, dtype: DType, copy: bool) -> Result<Tensor> {
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
        )
        .with_dim_names(self.dim_names()))
    }

    #[track_caller]
    pub fn to_dtype(&self, dtype: DType) -> Tensor {
        ok(self.try_to_dtype(dtype, false))
    }

    /// `clone(memory_format)`: a fresh copy (preserve format by default).
    #[track_caller]
    pub fn try_clone_format(&self, format: MemoryFormat) -> Result<Tensor> {
        let strides = self.view.like_strides(format)?;
        Ok(Tensor::computed(
            Op::Cast,
            self.dtype(),
            &self.view.shape,
            strides,
            vec![self.source()],
        )
        .with_dim_names(self.dim_names()))
    }

    /// A copy of the data (PyTorch's `clone()`; `Clone::clone` copies only the handle).
    #[track_caller]
    pub fn deep_clone(&self) -> Tensor {
        ok(self.try_clone_format(MemoryFormat::Preserve))
    }

    /// `contiguous(memory_format)`: self when already contiguous in that format.
    #[track_caller]
    pub fn try_contiguous_format(&self, format: MemoryFormat) -> Result<Tensor> {
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

    #[track_caller]
    pub fn contiguous(&self) -> Tensor {
        ok(self.try_contiguous_format(MemoryFormat::Contiguous))
    }
}

macro_rules! binary_ops {
    ($($name:ident, $try_name:ident => $op:expr;)*) => {
        impl Tensor {
            $(
                #[track_caller]
                pub fn $try_name(&self, other: impl Into<Operand>) -> Result<Tensor> {
                    self.try_binary(other, $op)
                }
                #[track_caller]
                pub fn $name(&self, other: impl Into<Operand>) -> Tensor {
                    ok(self.$try_name(other))
                }
            )*
        }
    };
}

binary_ops! {
    add, try_add => BinaryOp::Add;
    sub, try_sub => BinaryOp::Sub;
    mul, try_mul => BinaryOp::Mul;
    div, try_div => BinaryOp::Div;
    floor_divide, try_floor_divide => BinaryOp::DivFloor;
    remainder, try_remainder => BinaryOp::Remainder;
    fmod, try_fmod => BinaryOp::Fmod;
    pow, try_pow => BinaryOp::Pow;
    maximum, try_maximum => BinaryOp::Maximum;
    minimum, try_minimum => BinaryOp::Minimum;
    atan2, try_atan2 => BinaryOp::Atan2;
    eq, try_eq => BinaryOp::Eq;
    ne, try_ne => BinaryOp::Ne;
    lt, try_lt => BinaryOp::Lt;
    le, try_le => BinaryOp::Le;
    gt, try_gt => BinaryOp::Gt;
    ge, try_ge => BinaryOp::Ge;
    logical_and, try_logical_and => BinaryOp::LogicalAnd;
    logical_or, try_logical_or => BinaryOp::LogicalOr;
    logical_xor, try_logical_xor => BinaryOp::LogicalXor;
    bitwise_and, try_bitwise_and => BinaryOp::BitAnd;
    bitwise_or, try_bitwise_or => BinaryOp::BitOr;
    bitwise_xor, try_bitwise_xor => BinaryOp::BitXor;
}

/// Division rounding modes of `div`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundingMode {
    Trunc,
    Floor,
}

impl Tensor {
    /// `div(other, rounding_mode)`.
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

/// The binary ops PyTorch 2.11 refuses on named tensors, with the name it reports.
/// (`div` with `rounding_mode="floor"` is refused in [`Tensor::try_div_mode`]; `floor_divide`
/// is supported.)
fn refused_binary(op: BinaryOp) -> Option<&'static str> {
    match op {
        BinaryOp::Remainder => Some("remainder.Tensor"),
        BinaryOp::Fmod => Some("fmod.Tensor"),
        BinaryOp::BitAnd => Some("bitwise_and.Tensor"),
        BinaryOp::BitOr => Some("bitwise_or.Tensor"),
        BinaryOp::BitXor => Some("bitwise_xor.Tensor"),
        BinaryOp::Maximum => Some("maximum"),
        BinaryOp::Minimum => Some("minimum"),
        BinaryOp::DivTrunc => Some("div.Tensor_mode"),
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
        | BinaryOp::LogicalXor => None,
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
