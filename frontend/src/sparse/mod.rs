//! Sparse COO tensors (PyTorch's `torch.sparse_coo`): a [`Tensor`] whose layout is
//! [`Layout::SparseCoo`] holds two ordinary strided tensors, its int64 `indices`
//! `[sparse_dim, nnz]` and its `values` `[nnz, *dense dims]`, plus its size and PyTorch's
//! `is_coalesced` flag. Everything computed on them is ordinary lazy work on those two
//! tensors, so it records graph nodes, fuses and runs on the tensors' device like any other.
//!
//! Where the work goes: construction and conversion (`sparse_coo_tensor`, `to_sparse`,
//! `to_dense`) in `construct.rs`; sorting by linear index and `coalesce` (a sort, a cumsum and
//! the `Segment` library op, which sums runs of equal keys on every backend) in
//! `coalesce.rs`; `add`/`sub` (PyTorch's merge of two entry lists), dense + sparse, scalar
//! `mul`/`div`, `neg`, `sum`/`sparse.sum` in `arith.rs`; `transpose`, `t` and `narrow_copy` in
//! `shape.rs`; `mm`/`matmul`/`sparse.mm` (the `SpMM` library op, or a structural product of
//! two sparse operands) in `matmul.rs`; printing in `display.rs`.
//!
//! A sparse tensor's strided fields describe nothing real: its view has the tensor's shape
//! with zero strides (so `stride()` and `storage_offset()` answer zeros, as PyTorch 2.15 does)
//! over a storage of its own that no op reads. Every strided-only op refuses a sparse operand
//! with a `layout` error first ([`refuse_sparse`]), as PyTorch's dispatcher refuses an op
//! without a sparse kernel.
//!
//! Results whose size depends on the data are graph breaks, as `nonzero` is: inferring a size
//! reads the indices' extremes, `coalesce` and `sparse.sum` read the number of distinct
//! indices, `add` of two sparse tensors, `narrow_copy` along a sparse dim, `to_sparse` and a
//! sparse × sparse product read the indices. Values are never read on the host.

mod arith;
mod coalesce;
mod construct;
mod display;
mod matmul;
mod shape;

pub(crate) use arith::{add, binary};
pub(crate) use display::fmt_sparse;
pub(crate) use matmul::{Product, product};

use crate::lazy::{LazyNode, Storage};
use crate::promote::{AsOperand, OperandRef};
use crate::tensor::{Tensor, ok};
use smelt_ir::graph::Op;
use smelt_ir::view::fmt_list;
use smelt_ir::{DType, Dims, Error, LibraryOp, Result, Scalar, View};
use smelt_runtime::{Device, HostBuffer};
use std::fmt;
use std::sync::Arc;

/// How a tensor's elements are stored (`tensor.layout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// A dense block addressed through sizes, strides and an offset (`torch.strided`).
    Strided,
    /// Coordinates and values of the stored entries (`torch.sparse_coo`).
    SparseCoo,
}

impl fmt::Display for Layout {
    /// PyTorch's spelling: `torch.strided`, `torch.sparse_coo`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layout::Strided => "torch.strided",
            Layout::SparseCoo => "torch.sparse_coo",
        })
    }
}

/// The parts of a sparse COO tensor. `indices` is int64 `[sparse_dim, nnz]`, `values` is
/// `[nnz, *dense dims]`, both on the tensor's device; entry `j` puts `values[j]` at index
/// tuple `indices[:, j]`, and entries with the same tuple add up.
#[derive(Debug)]
pub(crate) struct SparseCoo {
    pub(crate) indices: Tensor,
    pub(crate) values: Tensor,
    /// PyTorch's flag: the entries are known to be sorted and unique. Set by the ops that
    /// make them so, never recomputed from the indices.
    pub(crate) coalesced: bool,
}

impl SparseCoo {
    pub(crate) fn sparse_dim(&self) -> usize {
        self.indices.shape()[0]
    }
    pub(crate) fn nnz(&self) -> usize {
        self.indices.shape()[1]
    }
}

/// The PyTorch backend name of a sparse tensor on `device` (`SparseCPU`, `SparseCUDA`).
fn backend(device: Device) -> &'static str {
    match device {
        Device::Cpu => "SparseCPU",
        Device::Cuda(_) => "SparseCUDA",
    }
}

/// The error of a strided-only op given a sparse tensor: PyTorch's dispatcher has no sparse
/// kernel for it.
pub(crate) fn no_sparse_kernel(op: &str, t: &Tensor) -> Error {
    Error::layout(format!(
        "Could not run 'aten::{op}' with arguments from the '{}' backend: {op} takes strided \
         tensors, and this argument is a sparse COO tensor of size {}",
        backend(t.device()),
        fmt_list(t.shape())
    ))
}

/// Refuses `op` when any of `tensors` is sparse (a `layout` error).
pub(crate) fn refuse_sparse<'a>(
    op: &str,
    tensors: impl IntoIterator<Item = &'a Tensor>,
) -> Result<()> {
    match tensors.into_iter().find(|t| t.is_sparse()) {
        Some(t) => Err(no_sparse_kernel(op, t)),
        None => Ok(()),
    }
}

/// Refuses the op named by `op()` when any tensor operand is sparse (the name is only
/// formatted for the error: every elementwise op passes through here).
pub(crate) fn refuse_sparse_operands(
    op: impl FnOnce() -> String,
    operands: &[&dyn AsOperand],
) -> Result<()> {
    let sparse = operands.iter().find_map(|o| match o.operand() {
        OperandRef::Tensor(t) if t.is_sparse() => Some(t),
        OperandRef::Tensor(_) | OperandRef::Scalar(_) => None,
    });
    match sparse {
        Some(t) => Err(no_sparse_kernel(&op(), t)),
        None => Ok(()),
    }
}

/// Refuses `op` when `t` or a tensor among `items` is sparse.
pub(crate) fn refuse_sparse_items(
    op: &str,
    t: &Tensor,
    items: &[crate::views::TensorIndex],
) -> Result<()> {
    refuse_sparse(
        op,
        std::iter::once(t).chain(items.iter().filter_map(|i| match i {
            crate::views::TensorIndex::Tensor(x) => Some(x),
            crate::views::TensorIndex::Int(_)
            | crate::views::TensorIndex::Slice(..)
            | crate::views::TensorIndex::NewAxis
            | crate::views::TensorIndex::Ellipsis => None,
        })),
    )
}

impl Tensor {
    /// A sparse COO tensor of `shape` holding `indices` and `values` (checked by the caller).
    /// Its own storage is a pending one-element fill that no op reads.
    #[track_caller]
    pub(crate) fn from_coo(
        shape: &[usize],
        indices: Tensor,
        values: Tensor,
        coalesced: bool,
    ) -> Tensor {
        debug_assert!(
            indices.dtype() == DType::I64
                && indices.ndim() == 2
                && values.ndim() >= 1
                && indices.shape()[1] == values.shape()[0]
                && indices.shape()[0] + values.ndim() - 1 == shape.len()
                && values.shape()[1..] == shape[indices.shape()[0]..]
                && indices.device() == values.device(),
            "invariant: sparse parts fit the shape: {indices:?} {values:?} {shape:?}"
        );
        let (dtype, device) = (values.dtype(), values.device());
        let unread = LazyNode::pending_on(
            device,
            Op::Fill {
                value: Scalar::Int(0).cast(dtype),
            },
            dtype,
            1,
            View::contiguous(&[1]),
            vec![],
        );
        Tensor {
            storage: Storage::new(unread),
            view: View::new(shape, Dims::filled(0, shape.len()), 0),
            names: Default::default(),
            sparse: Some(Arc::new(SparseCoo {
                indices,
                values,
                coalesced,
            })),
        }
    }

    /// The parts of a sparse tensor, `None` for a strided one.
    pub(crate) fn coo(&self) -> Option<&SparseCoo> {
        self.sparse.as_deref()
    }

    /// The parts of a sparse tensor, or the `layout` error of `op` given a strided one.
    pub(crate) fn coo_for(&self, op: &str) -> Result<&SparseCoo> {
        self.coo().ok_or_else(|| {
            Error::layout(format!(
                "{op} expected sparse coordinate tensor layout but got Strided"
            ))
        })
    }

    /// The lazy nodes that hold this tensor's data: its storage's current version, or for a
    /// sparse tensor those of its indices and values.
    pub(crate) fn data_nodes(&self) -> Vec<Arc<LazyNode>> {
        match self.coo() {
            Some(c) => vec![c.indices.storage.current(), c.values.storage.current()],
            None => vec![self.storage.current()],
        }
    }

    /// The storages this tensor's data lives in (two for a sparse tensor).
    pub(crate) fn data_storages(&self) -> Vec<&Arc<Storage>> {
        match self.coo() {
            Some(c) => vec![&c.indices.storage, &c.values.storage],
            None => vec![&self.storage],
        }
    }

    /// `tensor.layout`: [`Layout::Strided`] or [`Layout::SparseCoo`].
    pub fn layout(&self) -> Layout {
        match self.coo() {
            Some(_) => Layout::SparseCoo,
            None => Layout::Strided,
        }
    }

    /// `tensor.is_sparse`: is the layout sparse COO?
    pub fn is_sparse(&self) -> bool {
        self.sparse.is_some()
    }

    /// `tensor.sparse_dim()`: the number of leading dims the indices address (0 for a strided
    /// tensor, as in PyTorch).
    pub fn sparse_dim(&self) -> usize {
        self.coo().map_or(0, SparseCoo::sparse_dim)
    }

    /// `tensor.dense_dim()`: the number of trailing dims each stored value has (all dims of a
    /// strided tensor, as in PyTorch).
    pub fn dense_dim(&self) -> usize {
        self.ndim() - self.sparse_dim()
    }

    /// `tensor._nnz()`: the number of stored entries, duplicates included. Errors: a `layout`
    /// error for a strided tensor.
    pub fn try_nnz(&self) -> Result<usize> {
        Ok(self.coo_for("_nnz")?.nnz())
    }
    /// `tensor._nnz()`; panics where [`Tensor::try_nnz`] returns an error.
    #[track_caller]
    pub fn nnz(&self) -> usize {
        ok(self.try_nnz())
    }

    /// `tensor.is_coalesced()`: PyTorch's flag saying the entries are sorted and unique. It is
    /// set by the ops that make them so (`coalesce`, `to_sparse`, `sparse.sum` with dims, a
    /// sparse × sparse product; `sparse_coo_tensor` only for at most one entry) and never
    /// recomputed from the indices. Errors: a `layout` error for a strided tensor.
    pub fn try_is_coalesced(&self) -> Result<bool> {
        Ok(self.coo_for("is_coalesced")?.coalesced)
    }
    /// `tensor.is_coalesced()`; panics where [`Tensor::try_is_coalesced`] returns an error.
    #[track_caller]
    pub fn is_coalesced(&self) -> bool {
        ok(self.try_is_coalesced())
    }

    /// `tensor.indices()`: the int64 `[sparse_dim, nnz]` indices of a coalesced tensor, an alias
    /// of the stored tensor (writes through it change this tensor). Errors: a `layout` error for
    /// a strided or an uncoalesced tensor.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let i = Tensor::new([[1i64, 0, 1], [2, 0, 2]]);
    /// let s = Tensor::sparse_coo_tensor(&i, &Tensor::new([1.0f32, 2.0, 3.0]), Some(&[2, 3]));
    /// assert_eq!(s.try_indices().unwrap_err().kind, ErrorKind::Layout);
    /// assert_eq!(s.coalesce().indices().to_vec::<i64>(), [0, 1, 0, 2]);
    /// ```
    pub fn try_indices(&self) -> Result<Tensor> {
        let coo = self.coo_for("indices")?;
        if !coo.coalesced {
            return Err(Error::layout(
                "Cannot get indices on an uncoalesced tensor, please call .coalesce() first",
            ));
        }
        Ok(coo.indices.alias())
    }
    /// `tensor.indices()`; panics where [`Tensor::try_indices`] returns an error.
    #[track_caller]
    pub fn indices(&self) -> Tensor {
        ok(self.try_indices())
    }

    /// `tensor.values()`: the `[nnz, *dense dims]` values of a coalesced tensor, an alias of
    /// the stored tensor. Errors: a `layout` error for a strided or an uncoalesced tensor.
    pub fn try_values(&self) -> Result<Tensor> {
        let coo = self.coo_for("values")?;
        if !coo.coalesced {
            return Err(Error::layout(
                "Cannot get values on an uncoalesced tensor, please call .coalesce() first",
            ));
        }
        Ok(coo.values.alias())
    }
    /// `tensor.values()`; panics where [`Tensor::try_values`] returns an error.
    #[track_caller]
    pub fn values(&self) -> Tensor {
        ok(self.try_values())
    }

    /// `tensor._indices()`: the indices as stored (unsorted, duplicates included), an alias.
    /// Errors: a `layout` error for a strided tensor.
    pub fn try_stored_indices(&self) -> Result<Tensor> {
        Ok(self.coo_for("_indices")?.indices.alias())
    }
    /// `tensor._indices()`; panics where [`Tensor::try_stored_indices`] returns an error.
    #[track_caller]
    pub fn stored_indices(&self) -> Tensor {
        ok(self.try_stored_indices())
    }

    /// `tensor._values()`: the values as stored, an alias. Errors: a `layout` error for a
    /// strided tensor.
    pub fn try_stored_values(&self) -> Result<Tensor> {
        Ok(self.coo_for("_values")?.values.alias())
    }
    /// `tensor._values()`; panics where [`Tensor::try_stored_values`] returns an error.
    #[track_caller]
    pub fn stored_values(&self) -> Tensor {
        ok(self.try_stored_values())
    }

    /// A sparse tensor of this one's shape with new parts.
    #[track_caller]
    pub(crate) fn with_coo(&self, indices: Tensor, values: Tensor, coalesced: bool) -> Tensor {
        Tensor::from_coo(self.shape(), indices, values, coalesced)
    }

    /// `clone()` of a sparse tensor: copies of both parts, the flag kept.
    #[track_caller]
    pub(crate) fn sparse_clone(&self, coo: &SparseCoo) -> Result<Tensor> {
        Ok(self.with_coo(
            coo.indices.try_contiguous_copy()?,
            coo.values.try_contiguous_copy()?,
            coo.coalesced,
        ))
    }

    /// `to(dtype)` of a sparse tensor: itself for its own dtype, else converted values (the
    /// indices shared).
    #[track_caller]
    pub(crate) fn sparse_to_dtype(
        &self,
        coo: &SparseCoo,
        dtype: DType,
        copy: bool,
    ) -> Result<Tensor> {
        if dtype == self.dtype() && !copy {
            return Ok(self.clone());
        }
        let values = coo.values.try_to_dtype(dtype, true)?;
        let indices = if copy {
            coo.indices.try_contiguous_copy()?
        } else {
            coo.indices.clone()
        };
        Ok(self.with_coo(indices, values, coo.coalesced))
    }

    /// `to(device)` of a sparse tensor: both parts moved.
    #[track_caller]
    pub(crate) fn sparse_to_device(&self, coo: &SparseCoo, device: Device) -> Result<Tensor> {
        Ok(self.with_coo(
            coo.indices.try_to(device)?,
            coo.values.try_to(device)?,
            coo.coalesced,
        ))
    }

    /// A fresh contiguous copy of a strided tensor (`clone(memory_format=contiguous)`).
    #[track_caller]
    pub(crate) fn try_contiguous_copy(&self) -> Result<Tensor> {
        self.try_clone_format(smelt_ir::MemoryFormat::Contiguous)
    }
}

/// A fresh int64 tensor of `shape` holding `data`, computed on the host (a graph break named
/// `note`) and placed on `device`.
#[track_caller]
pub(crate) fn host_i64(
    data: Vec<i64>,
    shape: &[usize],
    device: Device,
    note: &'static str,
) -> Result<Tensor> {
    Tensor::graph_break(
        HostBuffer::I64(data.into()),
        View::contiguous(shape),
        note,
        device,
    )
}

/// Zeros of `shape` and `dtype` on `device`, contiguous (a lazy fill).
#[track_caller]
pub(crate) fn zeros_on(shape: &[usize], dtype: DType, device: Device) -> Tensor {
    let view = View::contiguous(shape);
    Tensor::from_node(LazyNode::pending_on(
        device,
        Op::Fill {
            value: Scalar::Int(0).cast(dtype),
        },
        dtype,
        view.numel(),
        view,
        vec![],
    ))
}

/// `out[.., i, ..] = t[.., index[i], ..]` along `dim`: an index_select the frontend knows to be
/// in range (an index outside reads zeros), recorded lazily without reading the index.
#[track_caller]
pub(crate) fn take(t: &Tensor, dim: usize, index: &Tensor) -> Result<Tensor> {
    let mut shape = t.shape().to_vec();
    shape[dim] = index.numel();
    let inputs = vec![t.source(), index.source()];
    Tensor::library(
        LibraryOp::IndexSelect { dim },
        t.dtype(),
        &shape,
        View::contiguous(&shape),
        inputs,
    )
}

/// [`take`] along dim 0: `out[i, ...] = t[index[i], ...]`.
#[track_caller]
pub(crate) fn take_rows(t: &Tensor, index: &Tensor) -> Result<Tensor> {
    take(t, 0, index)
}
