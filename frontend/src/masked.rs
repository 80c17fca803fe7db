//! Mask ops: `masked_fill` (+ in place), and the ops whose output shape depends on data —
//! `masked_select`, `nonzero` (both forms) and one-argument `where`. Those realize their
//! inputs first and compute on the host (a graph break, DESIGN §3); their results are realized
//! inputs that the dumps mark `# graph break: <op>`.

use crate::elementwise::{broadcast_all, record};
use crate::names::{DimNames, refuse_named, tensor_repr, unify_from_right};
use crate::promote::Operand;
use crate::tensor::{Tensor, ok};
use crate::views::TensorIndex;
use smelt_ir::graph::Op;
use smelt_ir::view::{contiguous_strides, fmt_list};
use smelt_ir::{DType, Error, Result, Scalar, View};
use smelt_runtime::HostBuffer;

fn check_mask(op: &str, mask: &Tensor) -> Result<()> {
    if mask.dtype() != DType::Bool {
        return Err(Error::dtype(format!(
            "{op}: expected a bool mask, but got mask with dtype {}",
            mask.dtype().torch_name()
        )));
    }
    Ok(())
}

fn check_fill_value(value: &Operand) -> Result<()> {
    if let Operand::Tensor(t) = value
        && t.ndim() != 0
    {
        return Err(Error::shape(format!(
            "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
            t.ndim()
        )));
    }
    Ok(())
}

/// PyTorch's `broadcast_to_outnames(tensor, reference)`: when either is named, `tensor` may
/// not have more dims than `reference`, and the names unify from the right.
fn broadcast_to_outnames(
    tensor: &Tensor,
    reference: &Tensor,
    op: &str,
) -> Result<Option<DimNames>> {
    if !tensor.has_names() && !reference.has_names() {
        return Ok(None);
    }
    let (names, ref_names) = (tensor.names(), reference.names());
    if names.len() > ref_names.len() {
        return Err(Error::names(format!(
            "{op}: attempted to broadcast {} to {} but the number of dims ({}) must be less than or equal to the number of dims in the tensor ({})",
            tensor_repr(&names),
            tensor_repr(&ref_names),
            names.len(),
            ref_names.len()
        )));
    }
    let unified = unify_from_right(&ref_names, &names, "broadcast")?;
    Ok(crate::names::to_dim_names(unified))
}

/// Row-major coordinates of the nonzero elements of `values` (of `shape`).
fn nonzero_coords(values: &[Scalar], shape: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![];
    for (flat, v) in values.iter().enumerate() {
        if v.as_bool() {
            let mut rest = flat;
            let mut coord = vec![0usize; shape.len()];
            for d in (0..shape.len()).rev() {
                coord[d] = rest % shape[d];
                rest /= shape[d];
            }
            out.push(coord);
        }
    }
    out
}

impl Tensor {
    /// `torch.masked_fill(self, mask, value)`: a contiguous copy of `self` broadcast with `mask`,
    /// with `value` (a scalar or 0-dim tensor, cast to `self`'s dtype) where the mask is true.
    /// Errors: a `dtype` error for a mask that is not bool, a `shape` error for a value tensor that
    /// is not 0-dim or shapes that do not broadcast, a `names` error when names conflict.
    #[track_caller]
    pub fn try_masked_fill(&self, mask: &Tensor, value: impl Into<Operand>) -> Result<Tensor> {
        crate::sparse::refuse_sparse("masked_fill", [self, mask])?;
        let value = value.into();
        let names = broadcast_to_outnames(mask, self, "masked_fill")?;
        check_mask("masked_fill", mask)?;
        check_fill_value(&value)?;
        let (m, s) = (Operand::from(mask), Operand::from(self));
        let shape = broadcast_all(&[&m, &s])?;
        let r = record(Op::Where, self.dtype(), self.dtype(), &[&m, &value, &s])?;
        Ok(r.relayout(&shape, contiguous_strides(&shape))
            .with_dim_names(names))
    }
    /// `torch.masked_fill(self, mask, value)`; panics where [`Tensor::try_masked_fill`] returns an
    /// error.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([1.0f32, 2.0, 3.0]);
    /// let y = x.masked_fill(&x.gt(1.5), 0.0);
    /// assert_eq!(y.to_vec::<f32>(), [1.0, 0.0, 0.0]);
    /// ```
    #[track_caller]
    pub fn masked_fill(&self, mask: &Tensor, value: impl Into<Operand>) -> Tensor {
        ok(self.try_masked_fill(mask, value))
    }

    /// `tensor.masked_fill_(mask, value)`: [`Tensor::try_masked_fill`] in place; the mask must
    /// broadcast to `self`'s shape. Allowed on expanded (stride-0) tensors, as in PyTorch. Returns
    /// `self`. Errors: those of `try_masked_fill`, a `shape` error when the mask does not broadcast
    /// to `self`'s shape.
    #[track_caller]
    pub fn try_masked_fill_(&self, mask: &Tensor, value: impl Into<Operand>) -> Result<&Tensor> {
        crate::sparse::refuse_sparse("masked_fill_", [self, mask])?;
        let value = value.into();
        let (m, s) = (Operand::from(mask), Operand::from(self));
        let names = self.inplace_names(&[&m])?;
        if (self.has_names() || mask.has_names()) && mask.ndim() < self.ndim() {
            // PyTorch 2.11 broadcasts self's names to the mask's.
            return Err(Error::names(format!(
                "masked_fill_: attempted to broadcast {} to {} but the number of dims ({}) must be less than or equal to the number of dims in the tensor ({})",
                tensor_repr(&self.names()),
                tensor_repr(&mask.names()),
                self.ndim(),
                mask.ndim()
            )));
        }
        check_mask("masked_fill_", mask)?;
        check_fill_value(&value)?;
        let shape = broadcast_all(&[&m, &s])?;
        if shape != self.shape() {
            return Err(Error::shape(format!(
                "masked_fill_: mask of shape {} does not broadcast to self's shape {} (broadcast shape {})",
                fmt_list(mask.shape()),
                fmt_list(self.shape()),
                fmt_list(&shape)
            )));
        }
        self.receive_names(names)?;
        if self.view.internal_overlap() != Some(false) {
            // Several elements share memory: only the selected ones may be written (a
            // `where` would write the old value back through the unselected aliases), so
            // scatter the value at the mask's true positions (a graph break on the mask).
            let mask = mask.with_view(mask.view.broadcast_to(&shape));
            self.index_put(&[TensorIndex::Tensor(mask)], value, true)?;
            return Ok(self);
        }
        let r = record(Op::Where, self.dtype(), self.dtype(), &[&m, &value, &s])?;
        self.assign(&Operand::Tensor(r), "masked_fill_")?;
        Ok(self)
    }
    /// `tensor.masked_fill_(mask, value)`; panics where [`Tensor::try_masked_fill_`] returns an
    /// error.
    #[track_caller]
    pub fn masked_fill_(&self, mask: &Tensor, value: impl Into<Operand>) -> &Tensor {
        ok(self.try_masked_fill_(mask, value))
    }

    /// `torch.masked_select(self, mask)`: the elements of `self` (broadcast with the mask) where
    /// the mask is true, as a 1-D tensor. A graph break: the values are computed now (the result's
    /// size depends on them); on a device they make a round trip through the host. Errors: a
    /// `dtype` error for a mask that is not bool, a `shape` error when the shapes do not broadcast,
    /// a `device` error for tensors on different devices, and those of realizing.
    #[track_caller]
    pub fn try_masked_select(&self, mask: &Tensor) -> Result<Tensor> {
        crate::sparse::refuse_sparse("masked_select", [self, mask])?;
        check_mask("masked_select", mask)?;
        crate::device::common_device("masked_select", &[self, mask], false)?;
        let shape = broadcast_all(&[&Operand::from(mask), &Operand::from(self)])?;
        let values = self
            .with_view(self.view.broadcast_to(&shape))
            .try_to_scalars()?;
        let keep = mask
            .with_view(mask.view.broadcast_to(&shape))
            .try_to_scalars()?;
        let picked: Vec<Scalar> = values
            .into_iter()
            .zip(keep)
            .filter(|(_, k)| k.as_bool())
            .map(|(v, _)| v)
            .collect();
        let n = picked.len();
        Tensor::graph_break(
            HostBuffer::from_scalars(self.dtype(), &picked),
            View::contiguous(&[n]),
            "graph break: masked_select",
            self.device(),
        )
    }
    /// `torch.masked_select(self, mask)`; panics where [`Tensor::try_masked_select`] returns an
    /// error.
    #[track_caller]
    pub fn masked_select(&self, mask: &Tensor) -> Tensor {
        ok(self.try_masked_select(mask))
    }

    /// `torch.nonzero(self)`: int64 `[n, ndim]`, the coordinates of the nonzero elements in
    /// row-major order, laid out column-major (strides `[1, n]`) as PyTorch's CPU kernel does.
    /// A graph break: the values are computed now (the result's size depends on them); on a
    /// device they make a round trip through the host. Errors: those of realizing `self`.
    #[track_caller]
    pub fn try_nonzero(&self) -> Result<Tensor> {
        crate::sparse::refuse_sparse("nonzero", [self])?;
        refuse_named("nonzero", [self])?;
        let coords = nonzero_coords(&self.try_to_scalars()?, self.shape());
        let (n, nd) = (coords.len(), self.ndim());
        let mut buffer = HostBuffer::zeros(DType::I64, n * nd);
        for (r, c) in coords.iter().enumerate() {
            for (d, &x) in c.iter().enumerate() {
                buffer.set(d * n + r, Scalar::Int(x as i64));
            }
        }
        Tensor::graph_break(
            buffer,
            View::new(vec![n, nd], vec![1, n as isize], 0),
            "graph break: nonzero",
            self.device(),
        )
    }
    /// `torch.nonzero(self)`; panics where [`Tensor::try_nonzero`] returns an error.
    #[track_caller]
    pub fn nonzero(&self) -> Tensor {
        ok(self.try_nonzero())
    }

    /// `torch.nonzero(self, as_tuple=True)`: one 1-D int64 tensor per dim (a 0-dim self counts as
    /// 1-D); views of one `[n, ndim]` result. A graph break: the values are computed now (the
    /// result's size depends on them); on a device they make a round trip through the host. Errors:
    /// those of realizing `self`.
    #[track_caller]
    pub fn try_nonzero_tuple(&self) -> Result<Vec<Tensor>> {
        let base = if self.ndim() == 0 {
            self.try_reshape(&[1])?
        } else {
            self.clone()
        };
        base.try_nonzero()?.try_unbind(1)
    }
    /// `torch.nonzero(self, as_tuple=True)`; panics where [`Tensor::try_nonzero_tuple`] returns an
    /// error.
    #[track_caller]
    pub fn nonzero_tuple(&self) -> Vec<Tensor> {
        ok(self.try_nonzero_tuple())
    }

    /// One-argument `torch.where(condition)`: [`Tensor::try_nonzero_tuple`] of the condition.
    #[track_caller]
    pub fn try_where_nonzero(condition: &Tensor) -> Result<Vec<Tensor>> {
        condition.try_nonzero_tuple()
    }
    /// One-argument `torch.where(condition)`; panics where [`Tensor::try_where_nonzero`] returns an
    /// error.
    #[track_caller]
    pub fn where_nonzero(condition: &Tensor) -> Vec<Tensor> {
        ok(Tensor::try_where_nonzero(condition))
    }
}
