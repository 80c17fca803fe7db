//! Copying shape ops: `flip`, `roll`, `repeat`, `tril`, `triu`. Each produces a fresh
//! contiguous tensor, as PyTorch does. PyTorch 2.11 refuses all of them on named tensors.

use crate::elementwise::record;
use crate::names::refuse_named;
use crate::promote::Operand;
use crate::tensor::{Tensor, ok};
use smelt_ir::graph::Op;
use smelt_ir::view::{contiguous_strides, wrap_dim, wrap_dims};
use smelt_ir::{DType, Error, Result, Scalar, View};
use smelt_runtime::HostBuffer;

impl Tensor {
    /// A contiguous copy of what `view` (over self's storage) shows.
    #[track_caller]
    fn copy_of_view(&self, view: View) -> Result<Tensor> {
        let shape = view.shape.clone();
        Tensor::computed(
            Op::Cast,
            self.dtype(),
            &shape,
            contiguous_strides(&shape),
            vec![(self.storage.current(), view)],
        )
    }

    /// `torch.flip(self, dims)`: a copy (laid out as `self` when dense) with the listed dims
    /// reversed. Errors: an `index` error for a dim out of range, a `value` error for a
    /// repeated dim, a `names` error for a named tensor.
    #[track_caller]
    pub fn try_flip(&self, dims: &[i64]) -> Result<Tensor> {
        refuse_named("flip", [self])?;
        let dims = wrap_dims(dims, self.ndim())?;
        let mut v = self.view.clone();
        for &d in &dims {
            if d < v.ndim() && v.shape[d] > 0 {
                v.offset = (v.offset as isize + (v.shape[d] as isize - 1) * v.strides[d]) as usize;
                v.strides[d] = -v.strides[d];
            }
        }
        let strides = self.view.preserve_format_strides();
        Tensor::computed(
            Op::Cast,
            self.dtype(),
            &v.shape.clone(),
            strides,
            vec![(self.storage.current(), v)],
        )
    }
    /// `torch.flip(self, dims)`; panics where [`Tensor::try_flip`] returns an error.
    #[track_caller]
    pub fn flip(&self, dims: &[i64]) -> Tensor {
        ok(self.try_flip(dims))
    }

    /// `torch.roll(self, shifts, dims)`: a copy with the elements shifted cyclically by `shifts[i]`
    /// along `dims[i]`; with no dims the flattened tensor rolls and keeps its shape. Errors: a
    /// `value` error when `shifts` and `dims` do not align, an `index` error for a dim out of
    /// range, a `names` error for a named tensor.
    #[track_caller]
    pub fn try_roll(&self, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
        refuse_named("roll", [self])?;
        if dims.is_empty() {
            if shifts.len() != 1 {
                return Err(Error::value(format!(
                    "shifts and dimensions must align. shifts: {}, dims:0",
                    shifts.len()
                )));
            }
            // PyTorch: `self.contiguous().view(numel)` rolled along dim 0, viewed back.
            let flat = self
                .try_contiguous_format(smelt_ir::MemoryFormat::Contiguous)?
                .try_view(&[self.numel() as i64])?;
            let shape: Vec<i64> = self.shape().iter().map(|&s| s as i64).collect();
            return flat.try_roll(shifts, &[0])?.try_view(&shape);
        }
        if shifts.len() != dims.len() {
            return Err(Error::value(format!(
                "shifts and dimensions must align. shifts: {}, dims:{}",
                shifts.len(),
                dims.len()
            )));
        }
        // PyTorch returns a preserve-format clone of an empty tensor before it looks at the dims
        // (so a dim out of range goes unnoticed), and an empty tensor keeps its strides.
        if self.numel() == 0 {
            return self.try_clone_format(smelt_ir::MemoryFormat::Preserve);
        }
        if self.ndim() == 0 {
            return Err(Error::index(format!(
                "roll: Dimension specified as {} but tensor has no dimensions",
                dims[0]
            )));
        }
        let out = self.try_clone_format(smelt_ir::MemoryFormat::Contiguous)?;
        let mut cur = self.clone();
        for (&shift, &dim) in shifts.iter().zip(dims) {
            let d = wrap_dim(dim, self.ndim())?;
            let n = cur.shape()[d] as i64;
            if n == 0 {
                continue;
            }
            let s = shift.rem_euclid(n);
            let next = out.try_clone_format(smelt_ir::MemoryFormat::Contiguous)?;
            next.try_narrow(d as i64, s, n - s)?
                .try_copy_(&cur.try_narrow(d as i64, 0, n - s)?)?;
            next.try_narrow(d as i64, 0, s)?
                .try_copy_(&cur.try_narrow(d as i64, n - s, s)?)?;
            cur = next;
        }
        if Tensor::shares_storage(&cur, self) {
            return Ok(out);
        }
        Ok(cur)
    }
    /// `torch.roll(self, shifts, dims)`; panics where [`Tensor::try_roll`] returns an error.
    #[track_caller]
    pub fn roll(&self, shifts: &[i64], dims: &[i64]) -> Tensor {
        ok(self.try_roll(shifts, dims))
    }

    /// `tensor.repeat(repeats)`: a copy tiling the tensor `repeats[i]` times along dim `i`; extra
    /// leading repeats add dims. Errors: a `value` error for fewer repeats than dims or a negative
    /// repeat, a `names` error for a named tensor.
    #[track_caller]
    pub fn try_repeat(&self, repeats: &[i64]) -> Result<Tensor> {
        refuse_named("repeat", [self])?;
        if repeats.len() < self.ndim() {
            return Err(Error::value(
                "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor",
            ));
        }
        if let Some(r) = repeats.iter().find(|&&r| r < 0) {
            return Err(Error::value(format!(
                "Trying to create tensor with negative dimension {r}"
            )));
        }
        let pad = repeats.len() - self.ndim();
        let out: Vec<usize> = repeats
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                (r as usize).saturating_mul(if i < pad { 1 } else { self.view.shape[i - pad] })
            })
            .collect();
        smelt_ir::view::check_sizes(&out, self.dtype().size())?;
        let mut shape = vec![];
        let mut strides = vec![];
        for (i, &r) in repeats.iter().enumerate() {
            let (size, stride) = if i < pad {
                (1, 0)
            } else {
                (self.view.shape[i - pad], self.view.strides[i - pad])
            };
            shape.extend([r as usize, size]);
            strides.extend([0, stride]);
        }
        let copy = self.copy_of_view(View::new(shape, strides, self.view.offset))?;
        Ok(copy.with_view(View::contiguous(&out)))
    }
    /// `tensor.repeat(repeats)`; panics where [`Tensor::try_repeat`] returns an error.
    #[track_caller]
    pub fn repeat(&self, repeats: &[i64]) -> Tensor {
        ok(self.try_repeat(repeats))
    }

    /// Keeps the elements where `keep(row, col)` on the last two dims, zeroes the rest.
    #[track_caller]
    fn triangle(&self, op: &str, keep: impl Fn(i64, i64) -> bool) -> Result<Tensor> {
        refuse_named(op, [self])?;
        if self.ndim() < 2 {
            return Err(Error::shape(format!(
                "{op}: input tensor must have at least 2 dimensions"
            )));
        }
        let (rows, cols) = (self.shape()[self.ndim() - 2], self.shape()[self.ndim() - 1]);
        let mask: Vec<Scalar> = (0..rows * cols)
            .map(|i| Scalar::Bool(keep((i / cols) as i64, (i % cols) as i64)))
            .collect();
        let mask = Tensor::try_from_buffer_on(
            HostBuffer::from_scalars(DType::Bool, &mask),
            View::contiguous(&[rows, cols]),
            self.device(),
        )?;
        let t = record(
            Op::Where,
            self.dtype(),
            self.dtype(),
            &[
                &Operand::Tensor(mask),
                &Operand::from(self),
                &Operand::Scalar(Scalar::Int(0)),
            ],
        )?;
        let shape = self.shape().to_vec();
        Ok(t.relayout(&shape, contiguous_strides(&shape)))
    }

    /// `torch.tril(self, diagonal)`: a copy keeping the lower triangle of the last two dims (on and
    /// below the `diagonal`-th diagonal), zeros above. Errors: a `shape` error for fewer than 2
    /// dims.
    #[track_caller]
    pub fn try_tril(&self, diagonal: i64) -> Result<Tensor> {
        self.triangle("tril", |r, c| c - r <= diagonal)
    }
    /// `torch.tril(self, diagonal)`; panics where [`Tensor::try_tril`] returns an error.
    #[track_caller]
    pub fn tril(&self, diagonal: i64) -> Tensor {
        ok(self.try_tril(diagonal))
    }
    /// `torch.triu(self, diagonal)`: a copy keeping the upper triangle of the last two dims (on and
    /// above the `diagonal`-th diagonal), zeros below. Errors: a `shape` error for fewer than 2
    /// dims.
    #[track_caller]
    pub fn try_triu(&self, diagonal: i64) -> Result<Tensor> {
        self.triangle("triu", |r, c| c - r >= diagonal)
    }
    /// `torch.triu(self, diagonal)`; panics where [`Tensor::try_triu`] returns an error.
    #[track_caller]
    pub fn triu(&self, diagonal: i64) -> Tensor {
        ok(self.try_triu(diagonal))
    }
}
