//! Joining tensors: `cat` and `stack`. The output is a fresh contiguous storage; each input is
//! written into its slice by an `Assign` node, so the unfused graph is one copy per input.

use crate::creation::filled_on;
use crate::names::{Dim, DimNames, refuse_named, unify_from_right};
use crate::promote::Operand;
use crate::tensor::{Tensor, ok};
use smelt_ir::view::{contiguous_strides, fmt_list, wrap_dim};
use smelt_ir::{Error, Result, Scalar, promote_types};

impl Tensor {
    /// `torch.cat(tensors, dim)`: the tensors joined along an existing dim; the dtype promotes
    /// across inputs; legacy 1-D empty tensors are skipped. A dim name is looked up in
    /// `tensors[0]`; names unify from the right across all inputs, checked before sizes. Errors: a
    /// `value` error for an empty list or a 0-dim input, a `shape` error for inputs of different
    /// ranks or sizes outside `dim`, an `index` error for a dim out of range, a `names` error when
    /// names conflict, a `device` error for tensors on different devices.
    #[track_caller]
    pub fn try_cat(tensors: &[Tensor], dim: impl Into<Dim>) -> Result<Tensor> {
        let dim = match (dim.into(), tensors.first()) {
            (Dim::Index(d), _) => d,
            (name, Some(first)) => name.resolve(first)?,
            (Dim::Name(_), None) => 0,
        };
        if tensors.is_empty() {
            return Err(Error::value(
                "torch.cat(): expected a non-empty list of Tensors",
            ));
        }
        for (i, t) in tensors.iter().enumerate() {
            if t.ndim() == 0 {
                return Err(Error::value(format!(
                    "zero-dimensional tensor (at position {i}) cannot be concatenated"
                )));
            }
        }
        let dtype = tensors
            .iter()
            .map(Tensor::dtype)
            .reduce(promote_types)
            .expect("non-empty");
        let parts: Vec<(usize, &Tensor)> = tensors
            .iter()
            .enumerate()
            .filter(|(_, t)| !(t.ndim() == 1 && t.numel() == 0))
            .collect();
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let device = crate::device::common_device("cat", &refs, false)?;
        let Some(&(_, first)) = parts.first() else {
            return Ok(filled_on(
                &[0],
                contiguous_strides(&[0]),
                Scalar::Int(0),
                dtype,
                device,
            ));
        };
        let d = wrap_dim(dim, first.ndim())?;
        let names = cat_names(tensors)?;
        let mut shape = first.shape().to_vec();
        shape[d] = 0;
        for &(i, t) in &parts {
            if t.ndim() != first.ndim() {
                return Err(Error::shape(format!(
                    "Tensors must have same number of dimensions: got {} and {}",
                    first.ndim(),
                    t.ndim()
                )));
            }
            for k in 0..t.ndim() {
                if k != d && t.shape()[k] != first.shape()[k] {
                    return Err(Error::shape(format!(
                        "Sizes of tensors must match except in dimension {d}. Expected size {} but got size {} for tensor number {i} in the list.",
                        first.shape()[k],
                        t.shape()[k]
                    )));
                }
            }
            shape[d] += t.shape()[d];
        }
        let out = filled_on(
            &shape,
            contiguous_strides(&shape),
            Scalar::Int(0),
            dtype,
            device,
        );
        debug_assert_eq!(out.stride(), contiguous_strides(&shape));
        let mut start = 0i64;
        for &(_, t) in &parts {
            let len = t.shape()[d] as i64;
            out.try_narrow(d as i64, start, len)?
                .assign(&Operand::from(t), "cat")?;
            start += len;
        }
        Ok(out.with_dim_names(names))
    }

    /// `torch.cat(tensors, dim)`; panics where [`Tensor::try_cat`] returns an error.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let a = Tensor::new([[1, 2]]);
    /// let b = Tensor::new([[3, 4]]);
    /// assert_eq!(Tensor::cat(&[a.clone(), b.clone()], 0).shape(), &[2, 2]);
    /// assert_eq!(Tensor::stack(&[a, b], 0).shape(), &[2, 1, 2]);
    /// ```
    #[track_caller]
    pub fn cat(tensors: &[Tensor], dim: impl Into<Dim>) -> Tensor {
        ok(Tensor::try_cat(tensors, dim))
    }

    /// `torch.stack(tensors, dim)`: the tensors (all of one shape) joined along a new dim at `dim`.
    /// Errors: a `value` error for an empty list, a `shape` error for different shapes, and those
    /// of [`Tensor::try_cat`].
    #[track_caller]
    pub fn try_stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
        let Some(first) = tensors.first() else {
            return Err(Error::value("stack expects a non-empty TensorList"));
        };
        refuse_named("stack", tensors)?;
        // PyTorch wraps the dim (against the first tensor's rank + 1) before comparing sizes.
        let d = wrap_dim(dim, first.ndim() + 1)?;
        for (i, t) in tensors.iter().enumerate() {
            if t.shape() != first.shape() {
                return Err(Error::shape(format!(
                    "stack expects each tensor to be equal size, but got {} at entry 0 and {} at entry {i}",
                    fmt_list(first.shape()),
                    fmt_list(t.shape())
                )));
            }
        }
        let parts: Vec<Tensor> = tensors
            .iter()
            .map(|t| t.try_unsqueeze(d as i64))
            .collect::<Result<_>>()?;
        Tensor::try_cat(&parts, d as i64)
    }

    /// `torch.stack(tensors, dim)`; panics where [`Tensor::try_stack`] returns an error.
    #[track_caller]
    pub fn stack(tensors: &[Tensor], dim: i64) -> Tensor {
        ok(Tensor::try_stack(tensors, dim))
    }
}

/// Names of `cat`'s output: every input (legacy empty ones too) unified from the right.
fn cat_names(tensors: &[Tensor]) -> Result<Option<DimNames>> {
    if !tensors.iter().any(Tensor::has_names) {
        return Ok(None);
    }
    let mut names: Option<Vec<Option<String>>> = None;
    for t in tensors {
        let own = t.names();
        names = Some(match names {
            None => own,
            Some(acc) => {
                if acc.len() != own.len() {
                    return Err(Error::shape(format!(
                        "Tensors must have same number of dimensions: got {} and {}",
                        acc.len(),
                        own.len()
                    )));
                }
                unify_from_right(&acc, &own, "cat")?
            }
        });
    }
    Ok(crate::names::to_dim_names(names.unwrap_or_default()))
}
