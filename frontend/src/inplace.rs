//! In-place ops, functionalised (DESIGN §4): writing through a view appends an `Assign` node
//! that produces the storage's next version; every handle on the storage reads it from then
//! on, nodes recorded earlier keep the old version. Names follow PyTorch's out rule: an
//! unnamed self receives the unified names, a named self must already have them.

use crate::device::{different_devices, on_device};
use crate::elementwise::broadcast_all;
use crate::lazy::LazyNode;
use crate::names::{DimNames, check_out_names, refuse_named_operands, unify_operands};
use crate::promote::{AsOperand, Operand};
use crate::tensor::{Tensor, ok};
use crate::views::TensorIndex;
use smelt_ir::graph::Op;
use smelt_ir::view::{Overlap, fmt_list};
use smelt_ir::{BinaryOp, DType, Error, Result, Scalar, UnaryOp, View};
use smelt_runtime::{Buffer, Device};

const INTERNAL_OVERLAP: &str = "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.";
const PARTIAL_OVERLAP: &str = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.";

impl Tensor {
    /// Makes `values` (of self's shape) the contents of self's elements: the storage's next
    /// version. `values` must be on self's device, or be a 0-dim host tensor (read there like
    /// a scalar); otherwise a `device` error naming `op`.
    #[track_caller]
    pub(crate) fn assign(&self, values: &Operand, op: &str) -> Result<()> {
        crate::sparse::refuse_sparse_operands(|| op.to_string(), &[self, values])?;
        let device = self.device();
        let moved;
        let values = match values {
            Operand::Tensor(t) if t.device() != device => {
                if t.ndim() != 0 || t.device() != Device::Cpu {
                    return Err(different_devices(op, device, t.device()));
                }
                moved = Operand::Tensor(on_device(t, device)?);
                &moved
            }
            Operand::Scalar(s) if s.is_complex() && !self.dtype().is_complex() => {
                return Err(Error::dtype(format!(
                    "{op}: value cannot be converted to type {} without overflow (a complex value into a {} tensor)",
                    self.dtype().torch_name().to_lowercase(),
                    self.dtype()
                )));
            }
            Operand::Tensor(_) | Operand::Scalar(_) => values,
        };
        let old = self.storage.current();
        let whole = View::contiguous(&[self.storage.len]);
        // The values, in the dtype this view reads, are stored through it (a conjugate view
        // stores their conjugate, a float view of a complex storage stores parts).
        let src = values.source(&self.view.shape, self.dtype(), device);
        let node = LazyNode::pending(
            Op::Assign,
            self.storage.dtype,
            self.storage.len,
            self.view.clone(),
            vec![(old, whole), src],
        );
        self.storage.set_current(node);
        Ok(())
    }

    /// The out/in-place name rule: checks `names` against self's, then names an unnamed self.
    pub(crate) fn receive_names(&self, names: Option<DimNames>) -> Result<()> {
        check_out_names(self, &names)?;
        if !self.has_names() {
            self.names.set(names);
        }
        Ok(())
    }

    /// Unified names of self and the other operands of an in-place op (checked before sizes).
    pub(crate) fn inplace_names(&self, others: &[&Operand]) -> Result<Option<DimNames>> {
        let mut all: Vec<&dyn AsOperand> = vec![self];
        all.extend(others.iter().map(|o| *o as &dyn AsOperand));
        unify_operands(&all, "broadcast")
    }

    fn check_writable(&self) -> Result<()> {
        if self.view.internal_overlap() == Some(true) {
            return Err(Error::overlap(INTERNAL_OVERLAP));
        }
        Ok(())
    }

    fn check_partial_overlap(&self, other: &Operand) -> Result<()> {
        let Operand::Tensor(o) = other else {
            return Ok(());
        };
        if !o.shares_storage(self) {
            return Ok(());
        }
        // PyTorch's `assert_no_partial_overlap`: full overlap, none, or too hard to tell pass.
        // Views in another dtype of the same storage (real, imag, view_as_real) compare bytes.
        let overlap = if o.dtype() == self.dtype() {
            self.view.overlap_with(&o.view)
        } else {
            self.byte_overlap(o)
        };
        if overlap == Overlap::Partial {
            return Err(Error::overlap(PARTIAL_OVERLAP));
        }
        Ok(())
    }

    /// [`View::overlap_with`] for a view of the same storage in another dtype, by bytes: never
    /// full, as the two read the bytes as different elements.
    fn byte_overlap(&self, other: &Tensor) -> Overlap {
        let (a, b) = (&self.view, &other.view);
        if a.numel() == 0 || b.numel() == 0 {
            return Overlap::No;
        }
        if !a.is_non_overlapping_and_dense() || !b.is_non_overlapping_and_dense() {
            return Overlap::TooHard;
        }
        let range = |v: &View, size: usize| (v.offset * size, (v.offset + v.numel()) * size);
        let (a0, a1) = range(a, self.dtype().size());
        let (b0, b1) = range(b, other.dtype().size());
        if a0 < b1 && b0 < a1 {
            Overlap::Partial
        } else {
            Overlap::No
        }
    }

    /// Checks that the broadcast of self and `others` is self's shape.
    fn check_inplace_shape(&self, others: &[&Operand]) -> Result<()> {
        let mut all: Vec<&dyn AsOperand> = vec![self];
        all.extend(others.iter().map(|o| *o as &dyn AsOperand));
        let shape = broadcast_all(&all)?;
        if shape != self.view.shape {
            return Err(Error::shape(format!(
                "output with shape {} doesn't match the broadcast shape {}",
                fmt_list(&self.view.shape),
                fmt_list(&shape)
            )));
        }
        Ok(())
    }

    fn check_cast(&self, result: DType) -> Result<()> {
        if !result.can_cast_to(self.dtype()) {
            return Err(Error::dtype(format!(
                "result type {} can't be cast to the desired output type {}",
                result.torch_name(),
                self.dtype().torch_name()
            )));
        }
        Ok(())
    }

    /// Writes `result` (computed from self's current values) back into self.
    #[track_caller]
    fn write_back(&self, result: Result<Tensor>, op: &str) -> Result<&Tensor> {
        let r = result?;
        self.check_cast(r.dtype())?;
        self.assign(&Operand::Tensor(r), op)?;
        Ok(self)
    }

    /// `self op= other` in place for the binary op `op` (with `alpha` scaling `other` for add and
    /// sub): what [`Tensor::add_`] and its siblings call. Every handle on `self`'s storage sees the
    /// new values; returns `self`. Errors: a `shape` error when the broadcast result is not
    /// `self`'s shape, a `dtype` error when the result's dtype cannot be cast to `self`'s (a float
    /// result into an integer tensor), an `overlap` error when `self`'s elements share memory (an
    /// expanded tensor) or partly overlap the operand, a `names` error when names conflict or an
    /// operand is named and PyTorch 2.11 refuses the op in place on names (comparisons,
    /// `remainder_`, `fmod_`, the bitwise ops, `div_` with a rounding mode), a `device` error for
    /// tensors on different devices, and those of [`Tensor::try_binary`].
    #[track_caller]
    pub fn try_binary_(
        &self,
        other: impl Into<Operand>,
        op: BinaryOp,
        alpha: Option<Scalar>,
    ) -> Result<&Tensor> {
        crate::sparse::refuse_sparse(&format!("{}_", op.name()), [self])?;
        let other = other.into();
        if let Some(name) = crate::elementwise::refused_binary(op, true, &other) {
            refuse_named_operands(&name, &[&Operand::from(self), &other])?;
        }
        let names = self.inplace_names(&[&other])?;
        // PyTorch's TensorIterator checks memory overlap first, then shapes, then the result
        // type; an integer division by zero only traps in the kernel, after all of them.
        self.check_writable()?;
        self.check_partial_overlap(&other)?;
        self.check_inplace_shape(&[&other])?;
        if matches!(
            op,
            BinaryOp::DivTrunc | BinaryOp::DivFloor | BinaryOp::Remainder | BinaryOp::Fmod
        ) {
            self.check_cast(crate::promote::result_type_of([
                self.operand(),
                other.operand(),
            ])?)?;
        }
        let r = match alpha {
            Some(a) => self.try_add_scaled(other.clone(), a, op),
            None => self.try_binary(other.clone(), op),
        };
        let r = r?;
        self.check_cast(r.dtype())?;
        self.receive_names(names)?;
        if self.view.internal_overlap().is_none() {
            // Elements of self share memory in a way PyTorch does not reject (overlapping
            // unfold windows, as_strided): its result is a sequential read-modify-write.
            return self.sequential_update(&other, op, alpha, r.dtype());
        }
        self.assign(&Operand::Tensor(r), &format!("{}_", op.name()))?;
        Ok(self)
    }

    /// PyTorch's element-by-element in-place update for a self-overlapping view: each element
    /// reads the storage as the previous elements left it. A graph break: the storage is
    /// realized and updated on the host, and becomes a new realized version.
    #[track_caller]
    fn sequential_update(
        &self,
        other: &Operand,
        op: BinaryOp,
        alpha: Option<Scalar>,
        compute: DType,
    ) -> Result<&Tensor> {
        let old = self.storage.current();
        crate::lazy::realize_nodes(std::slice::from_ref(&old))?;
        let mut buffer = (*old
            .buffer()
            .ok_or_else(|| Error::device("realisation produced no buffer"))?
            .to_host()?)
        .clone();
        let values = match other {
            Operand::Tensor(t) => t
                .try_expand(&crate::views::shape_i64(self.shape()))?
                .try_to_scalars()?,
            Operand::Scalar(s) => vec![*s; self.numel()],
        };
        let alpha = alpha.unwrap_or(Scalar::Int(1)).cast(compute);
        let shape = self.view.shape.clone();
        let mut idx = vec![0usize; shape.len()];
        // A complex element read by the view is the pair of buffer parts at `2a` and `2a + 1`
        // (a complex storage, or a real one read as complex); a real one is at `a` (a real
        // storage, or a complex one read as its parts). Conjugation and negation are undone
        // on the way back (both are involutions).
        let complex = self.dtype().is_complex();
        let read = self.view.read;
        let turn = |x: Scalar| -> Scalar {
            let (mut re, mut im) = x.as_complex();
            if read.conj {
                im = -im;
            }
            if read.neg {
                (re, im) = (-re, -im);
            }
            if complex {
                Scalar::Complex(re, im)
            } else if read.neg {
                Scalar::Float(re)
            } else {
                x
            }
        };
        for v in values {
            let addr = self.view.address(&idx) as usize;
            if complex {
                let cur = turn(Scalar::Complex(
                    buffer.get(2 * addr).as_f64(),
                    buffer.get(2 * addr + 1).as_f64(),
                ));
                let new = turn(complex_update(op, cur, v, alpha)?);
                let (re, im) = new.cast(self.dtype()).as_complex();
                buffer.set(2 * addr, Scalar::Float(re));
                buffer.set(2 * addr + 1, Scalar::Float(im));
            } else {
                let cur = turn(buffer.get(addr)).cast(compute);
                let v = smelt_runtime::scalar_ops::binary(
                    BinaryOp::Mul,
                    v.cast(compute),
                    alpha,
                    compute,
                );
                let new = smelt_runtime::scalar_ops::binary(op, cur, v, compute);
                buffer.set(addr, turn(new));
            }
            for d in (0..shape.len()).rev() {
                idx[d] += 1;
                if idx[d] < shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        let len = self.storage.len;
        let buffer = Buffer::from(buffer).to_device(self.device())?;
        self.storage.set_current(LazyNode::realized(
            buffer,
            self.storage.dtype,
            View::contiguous(&[len]),
        ));
        Ok(self)
    }

    /// `self = op(self)` in place for the unary op `op`; returns `self`. Errors: a `dtype` error
    /// for a dtype the op refuses or a result that cannot be cast to `self`'s dtype (`exp_` on an
    /// integer tensor), an `overlap` error when `self`'s elements share memory, a `names` error
    /// for an op PyTorch 2.11 refuses on a named tensor (`exp2_`).
    #[track_caller]
    pub fn try_unary_(&self, op: UnaryOp) -> Result<&Tensor> {
        crate::sparse::refuse_sparse(&format!("{}_", op.name()), [self])?;
        if let Some(name) = crate::elementwise::refused_unary(op, true) {
            crate::names::refuse_named(&name, [self])?;
        }
        let r = self.try_unary(op)?;
        self.check_cast(r.dtype())?;
        self.check_writable()?;
        self.write_back(Ok(r), &format!("{}_", op.name()))
    }

    /// `tensor.add_(other, alpha=alpha)`: `self += alpha * other` in place; returns `self`. Errors:
    /// a `shape` error when the broadcast result is not `self`'s shape, a `dtype` error when the
    /// result's dtype cannot be cast to `self`'s (a float result into an integer tensor), an
    /// `overlap` error when `self`'s elements share memory (an expanded tensor) or partly overlap
    /// the operand, a `names` error when names conflict, a `device` error for tensors on different
    /// devices.
    #[track_caller]
    pub fn try_add_(&self, other: impl Into<Operand>, alpha: Option<Scalar>) -> Result<&Tensor> {
        self.try_binary_(other, BinaryOp::Add, alpha)
    }
    /// `tensor.add_(other)`: `self += other` in place (also `+=`); panics where
    /// [`Tensor::try_add_`] returns an error.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([1.0f32, 2.0]);
    /// let view = x.clone(); // another handle on the same storage
    /// x.add_(1.0);
    /// assert_eq!(view.to_vec::<f32>(), [2.0, 3.0]);
    /// ```
    #[track_caller]
    pub fn add_(&self, other: impl Into<Operand>) -> &Tensor {
        ok(self.try_add_(other, None))
    }
    /// `tensor.sub_(other, alpha=alpha)`: `self -= alpha * other` in place; returns `self`. Errors:
    /// a `shape` error when the broadcast result is not `self`'s shape, a `dtype` error when the
    /// result's dtype cannot be cast to `self`'s (a float result into an integer tensor), an
    /// `overlap` error when `self`'s elements share memory (an expanded tensor) or partly overlap
    /// the operand, a `names` error when names conflict, a `device` error for tensors on different
    /// devices, and a `dtype` error for bool operands.
    #[track_caller]
    pub fn try_sub_(&self, other: impl Into<Operand>, alpha: Option<Scalar>) -> Result<&Tensor> {
        self.try_binary_(other, BinaryOp::Sub, alpha)
    }
    /// `tensor.sub_(other)`: `self -= other` in place (also `-=`); panics where
    /// [`Tensor::try_sub_`] returns an error.
    #[track_caller]
    pub fn sub_(&self, other: impl Into<Operand>) -> &Tensor {
        ok(self.try_sub_(other, None))
    }
    /// `tensor.mul_(other)`: `self *= other` in place; returns `self`. Errors: a `shape` error when
    /// the broadcast result is not `self`'s shape, a `dtype` error when the result's dtype cannot
    /// be cast to `self`'s (a float result into an integer tensor), an `overlap` error when
    /// `self`'s elements share memory (an expanded tensor) or partly overlap the operand, a `names`
    /// error when names conflict, a `device` error for tensors on different devices.
    #[track_caller]
    pub fn try_mul_(&self, other: impl Into<Operand>) -> Result<&Tensor> {
        self.try_binary_(other, BinaryOp::Mul, None)
    }
    /// `tensor.mul_(other)`: `self *= other` in place (also `*=`); panics where
    /// [`Tensor::try_mul_`] returns an error.
    #[track_caller]
    pub fn mul_(&self, other: impl Into<Operand>) -> &Tensor {
        ok(self.try_mul_(other))
    }
    /// `tensor.div_(other, rounding_mode=mode)`: `self /= other` in place, rounded by `mode` when
    /// given; returns `self`. Errors: a `shape` error when the broadcast result is not `self`'s
    /// shape, a `dtype` error when the result's dtype cannot be cast to `self`'s (a float result
    /// into an integer tensor), an `overlap` error when `self`'s elements share memory (an expanded
    /// tensor) or partly overlap the operand, a `names` error when names conflict, a `device` error
    /// for tensors on different devices (true division of an integer tensor is a `dtype` error: its
    /// result is float).
    #[track_caller]
    pub fn try_div_(
        &self,
        other: impl Into<Operand>,
        mode: Option<crate::elementwise::RoundingMode>,
    ) -> Result<&Tensor> {
        let op = match mode {
            None => BinaryOp::Div,
            Some(crate::elementwise::RoundingMode::Trunc) => BinaryOp::DivTrunc,
            Some(crate::elementwise::RoundingMode::Floor) => BinaryOp::DivFloor,
        };
        let other = other.into();
        if mode.is_some() {
            refuse_named_operands("div_.Tensor_mode", &[&Operand::from(self), &other])?;
        }
        self.try_binary_(other, op, None)
    }
    /// `tensor.div_(other)`: `self /= other` in place (also `/=`); panics where
    /// [`Tensor::try_div_`] returns an error.
    #[track_caller]
    pub fn div_(&self, other: impl Into<Operand>) -> &Tensor {
        ok(self.try_div_(other, None))
    }

    /// `tensor.neg_()`: `self = -self` in place, as [`Tensor::try_unary_`].
    #[track_caller]
    pub fn try_neg_(&self) -> Result<&Tensor> {
        self.try_unary_(UnaryOp::Neg)
    }
    /// `tensor.abs_()`: `self = |self|` in place, as [`Tensor::try_unary_`].
    #[track_caller]
    pub fn try_abs_(&self) -> Result<&Tensor> {
        self.try_unary_(UnaryOp::Abs)
    }
    /// `tensor.exp_()`: `self = e^self` in place, as [`Tensor::try_unary_`] (a `dtype` error for an
    /// integer tensor).
    #[track_caller]
    pub fn try_exp_(&self) -> Result<&Tensor> {
        self.try_unary_(UnaryOp::Exp)
    }

    /// `tensor.clamp_(min, max)`: [`Tensor::try_clamp`] written back into `self`; returns `self`.
    /// Errors: those of `try_clamp`, and of an in-place op (shape, dtype cast, overlap, names).
    #[track_caller]
    pub fn try_clamp_(&self, min: Option<Operand>, max: Option<Operand>) -> Result<&Tensor> {
        crate::sparse::refuse_sparse("clamp_", [self])?;
        let others: Vec<&Operand> = min.iter().chain(max.iter()).collect();
        let names = self.inplace_names(&others)?;
        self.check_inplace_shape(&others)?;
        let r = self.try_clamp(min.clone(), max.clone())?;
        self.check_cast(r.dtype())?;
        self.check_writable()?;
        for o in &others {
            self.check_partial_overlap(o)?;
        }
        self.receive_names(names)?;
        self.assign(&Operand::Tensor(r), "clamp_")?;
        Ok(self)
    }

    /// `tensor.copy_(src)`: `src`'s values written into `self`; `src` broadcasts to `self`'s shape
    /// and converts to its dtype; a source on another device is copied over first (PyTorch's
    /// cross-device copy). Returns `self`. Errors: a `shape` error when `src` does not broadcast to
    /// `self`, an `overlap` error when `self`'s elements share memory or partly overlap `src`, a
    /// `names` error when names conflict, a `device` error when a device is unusable.
    #[track_caller]
    pub fn try_copy_(&self, src: &Tensor) -> Result<&Tensor> {
        crate::sparse::refuse_sparse("copy_", [self, src])?;
        let moved = on_device(src, self.device())?;
        let src = &moved;
        let src_op = Operand::from(src);
        let names = self.inplace_names(&[&src_op])?;
        self.check_inplace_shape(&[&src_op])?;
        if self.is_same(src) {
            // PyTorch returns early when source and destination are the same memory.
            return Ok(self);
        }
        self.check_writable()?;
        self.check_partial_overlap(&src_op)?;
        self.receive_names(names)?;
        self.assign(&src_op, "copy_")?;
        Ok(self)
    }
    /// `tensor.copy_(src)`; panics where [`Tensor::try_copy_`] returns an error.
    #[track_caller]
    pub fn copy_(&self, src: &Tensor) -> &Tensor {
        ok(self.try_copy_(src))
    }

    /// `tensor.fill_(value)`: every element of `self` set to `value` (cast to `self`'s dtype),
    /// allowed on expanded tensors; returns `self`. Errors: a `shape` error for a tensor value that
    /// is not 0-dim, a `device` error for a value on another device that is not a 0-dim host
    /// tensor.
    #[track_caller]
    pub fn try_fill_(&self, value: impl Into<Operand>) -> Result<&Tensor> {
        crate::sparse::refuse_sparse("fill_", [self])?;
        let value = value.into();
        if let Operand::Tensor(t) = &value
            && t.ndim() != 0
        {
            return Err(Error::shape(format!(
                "fill_ only supports 0-dimension value tensor but got tensor with {} dimensions.",
                t.ndim()
            )));
        }
        self.assign(&value, "fill_")?;
        Ok(self)
    }
    /// `tensor.fill_(value)`; panics where [`Tensor::try_fill_`] returns an error.
    #[track_caller]
    pub fn fill_(&self, value: impl Into<Operand>) -> &Tensor {
        ok(self.try_fill_(value))
    }
    /// `tensor.zero_()`: [`Tensor::try_fill_`] with 0.
    #[track_caller]
    pub fn try_zero_(&self) -> Result<&Tensor> {
        self.try_fill_(Scalar::Int(0))
    }
    /// `tensor.zero_()`: every element set to 0; panics where [`Tensor::try_zero_`] returns an
    /// error.
    #[track_caller]
    pub fn zero_(&self) -> &Tensor {
        ok(self.try_zero_())
    }

    /// Python's `self[items] = value`: with basic items ([`TensorIndex`] ints, slices, `None`,
    /// `...`) the selected view is filled with a scalar or copied from a tensor that broadcasts
    /// (from any device, converted to `self`'s dtype); with tensor items it is
    /// [`Tensor::try_index_put`]. Errors: those of [`Tensor::try_getitem`] for the items, and of
    /// [`Tensor::try_copy_`] for the write.
    #[track_caller]
    pub fn try_setitem(&self, items: &[TensorIndex], value: impl Into<Operand>) -> Result<()> {
        crate::sparse::refuse_sparse_items("index_put_", self, items)?;
        if items.iter().any(|i| matches!(i, TensorIndex::Tensor(_))) {
            return self.try_index_put(items, value.into());
        }
        // The write goes through a temporary view: self's names never change.
        let names = self.index_names(items)?;
        let target = self
            .with_view(self.basic_index_view(items)?)
            .with_dim_names(names);
        match value.into() {
            Operand::Scalar(s) => {
                target.try_fill_(s)?;
            }
            Operand::Tensor(t) => {
                // Assigning a tensor is a `copy_`: from any device.
                let t = on_device(&t, self.device())?;
                let src = Operand::from(&t);
                let names = target.inplace_names(&[&src])?;
                target.check_inplace_shape(&[&src])?;
                check_out_names(&target, &names)?;
                target.check_partial_overlap(&src)?;
                target.assign(&src, "copy_")?;
            }
        }
        Ok(())
    }
    /// Python's `self[items] = value`; panics where [`Tensor::try_setitem`] returns an error.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::zeros(&[2, 3], None);
    /// x.setitem(&[TensorIndex::Int(1)], 5.0); // x[1] = 5
    /// assert_eq!(x.to_vec::<f32>(), [0.0, 0.0, 0.0, 5.0, 5.0, 5.0]);
    /// ```
    #[track_caller]
    pub fn setitem(&self, items: &[TensorIndex], value: impl Into<Operand>) {
        ok(self.try_setitem(items, value))
    }
}

macro_rules! assign_ops {
    ($($trait:ident, $method:ident, $op:expr;)*) => {
        $(
            impl<O: Into<Operand>> std::ops::$trait<O> for Tensor {
                #[track_caller]
                fn $method(&mut self, rhs: O) {
                    ok(self.try_binary_(rhs, $op, None));
                }
            }
        )*
    };
}

assign_ops! {
    AddAssign, add_assign, BinaryOp::Add;
    SubAssign, sub_assign, BinaryOp::Sub;
    MulAssign, mul_assign, BinaryOp::Mul;
    DivAssign, div_assign, BinaryOp::Div;
}

/// `cur op alpha * v` on complex values (in double precision; the caller rounds to the
/// tensor's dtype): the in-place arithmetic a complex tensor accepts.
fn complex_update(op: BinaryOp, cur: Scalar, v: Scalar, alpha: Scalar) -> Result<Scalar> {
    use num_complex::Complex64 as C;
    let z = |s: Scalar| {
        let (re, im) = s.as_complex();
        C::new(re, im)
    };
    let (x, y) = (z(cur), z(v) * z(alpha));
    let r = match op {
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        BinaryOp::Mul => x * y,
        BinaryOp::Div => x / y,
        BinaryOp::DivTrunc
        | BinaryOp::DivFloor
        | BinaryOp::Remainder
        | BinaryOp::Fmod
        | BinaryOp::Pow
        | BinaryOp::Maximum
        | BinaryOp::Minimum
        | BinaryOp::Atan2
        | BinaryOp::Eq
        | BinaryOp::Ne
        | BinaryOp::Lt
        | BinaryOp::Le
        | BinaryOp::Gt
        | BinaryOp::Ge
        | BinaryOp::LogicalAnd
        | BinaryOp::LogicalOr
        | BinaryOp::LogicalXor
        | BinaryOp::BitAnd
        | BinaryOp::BitOr
        | BinaryOp::BitXor => {
            return Err(Error::unsupported(format!(
                "{}_: smelt has no in-place update of a self-overlapping complex view",
                op.name()
            )));
        }
    };
    Ok(Scalar::Complex(r.re, r.im))
}
