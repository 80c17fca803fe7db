//! Advanced indexing (integer and bool index tensors): reads gather into a contiguous copy
//! (`LibraryOp::Index`), writes scatter into the storage's next version
//! (`LibraryOp::IndexPut`). PyTorch's rules: basic items (ints, slices, `None`, `...`) apply
//! first as a view; index tensors broadcast together to a shape `B`; when the indexed dims are
//! adjacent, `B` replaces them in place, otherwise `B` comes first. A bool (or uint8) mask
//! expands to the coordinates of its true elements (a graph break: its values are realized);
//! a 0-dim integer tensor acts like an int (a view). Index values are checked eagerly (the
//! index tensors are realized), so an out-of-range index is an `index` error at the op.

use crate::device::on_device;
use crate::gather::index_values;
use crate::lazy::LazyNode;
use crate::names::refuse_named;
use crate::promote::Operand;
use crate::tensor::Tensor;
use crate::views::{TensorIndex, basic_index_step, select_index};
use smelt_ir::Dims;
use smelt_ir::graph::Op;
use smelt_ir::view::{broadcast_shapes, contiguous_strides, fmt_list};
use smelt_ir::{DType, Error, LibraryOp, Result, Scalar, View};
use smelt_runtime::HostBuffer;

/// Is `item` an advanced index (a tensor that is not a 0-dim integer tensor, which acts like an
/// int)? Only advanced indexing is PyTorch's `index`/`index_put_`, which 2.11 refuses on names.
pub(crate) fn is_advanced(item: &TensorIndex) -> bool {
    match item {
        TensorIndex::Tensor(t) => !(t.ndim() == 0 && matches!(t.dtype(), DType::I64 | DType::I32)),
        TensorIndex::Int(_)
        | TensorIndex::Slice(..)
        | TensorIndex::NewAxis
        | TensorIndex::Ellipsis => false,
    }
}

/// `items` with each 0-dim integer tensor read into an int (a basic index).
pub(crate) fn basic_items(items: &[TensorIndex]) -> Result<Vec<TensorIndex>> {
    items
        .iter()
        .map(|item| match item {
            TensorIndex::Tensor(t) if !is_advanced(item) => {
                Ok(TensorIndex::Int(t.try_item()?.as_i64()))
            }
            TensorIndex::Tensor(_)
            | TensorIndex::Int(_)
            | TensorIndex::Slice(..)
            | TensorIndex::NewAxis
            | TensorIndex::Ellipsis => Ok(item.clone()),
        })
        .collect()
}

/// Refuses advanced indexing (`aten::<op>`) when `self`, an index tensor or `value` is named.
fn refuse_named_index(
    op: &str,
    this: &Tensor,
    items: &[TensorIndex],
    value: Option<&Operand>,
) -> Result<()> {
    let tensors = items.iter().filter_map(|i| match i {
        TensorIndex::Tensor(t) => Some(t),
        TensorIndex::Int(_)
        | TensorIndex::Slice(..)
        | TensorIndex::NewAxis
        | TensorIndex::Ellipsis => None,
    });
    let value = value.and_then(|v| match v {
        Operand::Tensor(t) => Some(t),
        Operand::Scalar(_) => None,
    });
    refuse_named(op, std::iter::once(this).chain(tensors).chain(value))
}

/// The resolved index: the view after basic items, and per advanced index the view dim it
/// indexes with its (integer) index tensor.
struct Plan {
    view: View,
    advanced: Vec<(usize, Tensor)>,
}

/// What the library op needs: the source/target view with the indexed dims first, the
/// broadcast index shape, the result shape and the permutation from result order to the op's
/// `[*B, *rest]` order.
struct Layout {
    target: View,
    b_shape: Vec<usize>,
    result_shape: Vec<usize>,
    to_op_order: Vec<usize>,
}

fn dims_consumed(item: &TensorIndex) -> usize {
    match item {
        TensorIndex::Int(_) | TensorIndex::Slice(..) => 1,
        TensorIndex::Tensor(t) if matches!(t.dtype(), DType::Bool | DType::U8) => t.ndim(),
        TensorIndex::Tensor(_) => 1,
        TensorIndex::NewAxis | TensorIndex::Ellipsis => 0,
    }
}

impl Tensor {
    fn index_plan(&self, items: &[TensorIndex]) -> Result<Plan> {
        if items
            .iter()
            .filter(|i| matches!(i, TensorIndex::Ellipsis))
            .count()
            > 1
        {
            return Err(Error::index(
                "an index can only have a single ellipsis ('...')",
            ));
        }
        let consumed: usize = items.iter().map(dims_consumed).sum();
        if consumed > self.ndim() {
            return Err(Error::index(format!(
                "too many indices for tensor of dimension {}",
                self.ndim()
            )));
        }
        let mut v = self.view.clone();
        let mut d = 0usize;
        let mut advanced = vec![];
        for item in items {
            if basic_index_step(&mut v, &mut d, item, self.ndim() - consumed)? {
                continue;
            }
            match item {
                TensorIndex::Int(_)
                | TensorIndex::Slice(..)
                | TensorIndex::NewAxis
                | TensorIndex::Ellipsis => {
                    unreachable!("basic items are applied by basic_index_step")
                }
                TensorIndex::Tensor(t) => match t.dtype() {
                    DType::Bool | DType::U8 if t.ndim() == 0 => {
                        // `x[True]` adds a dim of size 1, `x[False]` one of size 0.
                        v = v.unsqueeze(d as i64)?;
                        let keep: Vec<Scalar> = if t.try_item()?.as_bool() {
                            vec![Scalar::Int(0)]
                        } else {
                            vec![]
                        };
                        let n = keep.len();
                        let idx = Tensor::graph_break(
                            HostBuffer::from_scalars(DType::I64, &keep),
                            View::contiguous(&[n]),
                            "graph break: bool index",
                            self.device(),
                        )?;
                        advanced.push((d, idx));
                        d += 1;
                    }
                    DType::Bool | DType::U8 => {
                        for j in 0..t.ndim() {
                            if v.shape.get(d + j) != Some(&t.shape()[j]) {
                                return Err(Error::index(format!(
                                    "The shape of the mask {} at index {j} does not match the shape of the indexed tensor {} at index {}",
                                    fmt_list(t.shape()),
                                    fmt_list(&v.shape),
                                    d + j
                                )));
                            }
                        }
                        for (j, column) in t.try_nonzero()?.try_unbind(1)?.into_iter().enumerate() {
                            advanced.push((d + j, column));
                        }
                        d += t.ndim();
                    }
                    DType::I64 | DType::I32 if t.ndim() == 0 => {
                        v = select_index(&v, d, t.try_item()?.as_i64())?
                    }
                    DType::I64 | DType::I32 => {
                        advanced.push((d, t.clone()));
                        d += 1;
                    }
                    DType::I8 | DType::I16 | DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
                        return Err(Error::index(format!(
                            "tensors used as indices must be long, int, byte or bool tensors, got {}",
                            t.dtype().torch_name()
                        )));
                    }
                },
            }
        }
        Ok(Plan { view: v, advanced })
    }

    /// Broadcasts the index tensors, checks their values and lays the op out.
    fn index_layout(plan: &Plan) -> Result<Layout> {
        let v = &plan.view;
        let mut b_shape: Vec<usize> = vec![];
        for (_, t) in &plan.advanced {
            b_shape = broadcast_shapes(&b_shape, t.shape()).map_err(|_| {
                let shapes: Vec<String> = plan.advanced.iter().map(|(_, t)| fmt_list(t.shape())).collect();
                Error::index(format!("shape mismatch: indexing tensors could not be broadcast together with shapes {}", shapes.join(", ")))
            })?;
        }
        for (d, t) in &plan.advanced {
            let size = v.shape[*d] as i64;
            if let Some(i) = index_values(t)?
                .into_iter()
                .find(|&i| i < -size || i >= size)
            {
                return Err(Error::index(format!(
                    "index {i} is out of bounds for dimension {d} with size {size}"
                )));
            }
        }
        let indexed: Vec<usize> = plan.advanced.iter().map(|(d, _)| *d).collect();
        let rest: Vec<usize> = (0..v.ndim()).filter(|d| !indexed.contains(d)).collect();
        let order: Vec<i64> = indexed.iter().chain(&rest).map(|&d| d as i64).collect();
        let target = v.permute(&order)?;
        let adjacent = indexed.windows(2).all(|w| w[1] == w[0] + 1);
        let nb = b_shape.len();
        let rest_shape: Vec<usize> = rest.iter().map(|&d| v.shape[d]).collect();
        // Rest dims before the first indexed dim stay in front when the indexed dims are adjacent.
        let before = if adjacent {
            rest.iter().filter(|&&d| d < indexed[0]).count()
        } else {
            0
        };
        let mut result_shape = rest_shape[..before].to_vec();
        result_shape.extend_from_slice(&b_shape);
        result_shape.extend_from_slice(&rest_shape[before..]);
        let to_op_order: Vec<usize> = (before..before + nb)
            .chain(0..before)
            .chain(before + nb..result_shape.len())
            .collect();
        Ok(Layout {
            target,
            b_shape,
            result_shape,
            to_op_order,
        })
    }

    /// Advanced indexing, `self[items]` where some item is an integer or bool tensor: a contiguous
    /// copy (PyTorch's `index`). The index values are read now (a realization). Errors: an `index`
    /// error for an index out of range, an index tensor of a float dtype, index tensors that do not
    /// broadcast, a bool mask of the wrong shape, too many indices or two ellipses, a `names`
    /// error when `self` or an index tensor is named (PyTorch 2.11 refuses `index.Tensor` on
    /// names; 0-dim integer tensors index like ints, a view that keeps names).
    #[track_caller]
    pub fn try_index(&self, items: &[TensorIndex]) -> Result<Tensor> {
        if !items.iter().any(is_advanced) {
            return self.try_getitem(&basic_items(items)?);
        }
        refuse_named_index("index.Tensor", self, items, None)?;
        let plan = self.index_plan(items)?;
        if plan.advanced.is_empty() {
            // Only 0-dim integer tensors: they act like ints, so this is a view.
            return Ok(self.with_view(plan.view));
        }
        let layout = Tensor::index_layout(&plan)?;
        let strides = contiguous_strides(&layout.result_shape);
        let out = View::new(
            layout
                .to_op_order
                .iter()
                .map(|&i| layout.result_shape[i])
                .collect::<Dims<_>>(),
            layout
                .to_op_order
                .iter()
                .map(|&i| strides[i])
                .collect::<Dims<_>>(),
            0,
        );
        let mut inputs = vec![(self.storage.current(), layout.target.clone())];
        for (_, t) in &plan.advanced {
            // Index tensors on the host may index a device tensor (they are copied over).
            let t = on_device(t, self.device())?;
            inputs.push((t.storage.current(), t.view.broadcast_to(&layout.b_shape)));
        }
        let op = LibraryOp::Index {
            indices: plan.advanced.len(),
        };
        Tensor::library(op, self.dtype(), &layout.result_shape, out, inputs)
    }

    /// Advanced index assignment, `self[items] = value` where some item is a tensor (PyTorch's
    /// `index_put_`): the value broadcasts to the indexed shape and converts to `self`'s dtype;
    /// with repeated indices the last write wins. Errors: those of [`Tensor::try_index`], a `shape`
    /// error for a value that does not broadcast, an `overlap` error when `self`'s elements share
    /// memory, a `names` error when `self`, an index tensor or the value is named (PyTorch 2.11
    /// refuses `index_put_` on names).
    #[track_caller]
    pub fn try_index_put(&self, items: &[TensorIndex], value: Operand) -> Result<()> {
        if !items.iter().any(is_advanced) {
            return self.try_setitem(&basic_items(items)?, value);
        }
        refuse_named_index("index_put_", self, items, Some(&value))?;
        self.index_put(items, value, false)
    }

    /// `index_put`; `allow_overlap` lets `masked_fill_` write through an expanded self, where
    /// only the selected elements are written.
    #[track_caller]
    pub(crate) fn index_put(
        &self,
        items: &[TensorIndex],
        value: Operand,
        allow_overlap: bool,
    ) -> Result<()> {
        let plan = self.index_plan(items)?;
        if plan.advanced.is_empty() {
            return self.with_view(plan.view).try_setitem(&[], value);
        }
        if !allow_overlap && self.view.internal_overlap() == Some(true) {
            return Err(Error::overlap(
                "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.",
            ));
        }
        let layout = Tensor::index_layout(&plan)?;
        let shape = &layout.result_shape;
        if broadcast_shapes(value.shape(), shape).ok().as_ref() != Some(shape) {
            return Err(Error::shape(format!(
                "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
                fmt_list(value.shape()),
                fmt_list(shape)
            )));
        }
        // Values and index tensors from the host are copied to self's device, as `copy_`.
        let device = self.device();
        let value = match value {
            Operand::Tensor(t) => Operand::Tensor(on_device(&t, device)?),
            Operand::Scalar(_) => value,
        };
        let (node, values) = value.source(shape, self.dtype(), device);
        let order: Vec<i64> = layout.to_op_order.iter().map(|&i| i as i64).collect();
        let values = values.permute(&order)?;
        let old = self.storage.current();
        let mut inputs = vec![(old, View::contiguous(&[self.storage.len])), (node, values)];
        for (_, t) in &plan.advanced {
            let t = on_device(t, device)?;
            inputs.push((t.storage.current(), t.view.broadcast_to(&layout.b_shape)));
        }
        let op = Op::Library(LibraryOp::IndexPut {
            indices: plan.advanced.len(),
        });
        let next = LazyNode::pending(op, self.dtype(), self.storage.len, layout.target, inputs);
        self.storage.set_current(next);
        Ok(())
    }
}
