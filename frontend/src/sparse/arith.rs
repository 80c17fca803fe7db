//! Arithmetic on sparse tensors as PyTorch 2.15 allows it: sparse ± sparse (one merge pass
//! over both entry lists, PyTorch's `add_out_sparse_contiguous`), dense ± sparse (a dense
//! result), sparse × or ÷ a scalar, `neg`, and the sums (`sum`, `torch.sparse.sum`).
//!
//! The merge reads both index lists (a graph break: the result's size depends on them) and
//! plans, on the host, which entry of each operand every result entry takes; the values are
//! then gathered and added lazily, on the values' device.

use super::{SparseCoo, host_i64, take_rows};
use crate::promote::{AsOperand, Operand, OperandRef};
use crate::tensor::Tensor;
use smelt_ir::view::fmt_list;
use smelt_ir::{BinaryOp, DType, Error, Result, Scalar, promote_types};
use smelt_runtime::HostBuffer;

/// The error of an op given a sparse operand in a combination PyTorch refuses or smelt does
/// not implement.
fn combination(op: &str, what: &str) -> Error {
    Error::layout(format!("{op}: {what}"))
}

/// PyTorch's `sub` check: subtraction refuses bool operands.
fn sub_check(a: DType, b: DType) -> Result<()> {
    match (a.is_bool(), b.is_bool()) {
        (true, true) => Err(Error::dtype(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` \
             or `logical_xor()` operator instead.",
        )),
        (true, false) | (false, true) => Err(Error::dtype(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are \
             trying to invert a mask, use the `~` or `logical_not()` operator instead.",
        )),
        (false, false) => Ok(()),
    }
}

/// PyTorch's `alpha` check for a result of `dtype`.
fn alpha_check(dtype: DType, alpha: Scalar) -> Result<()> {
    if !dtype.is_float() && matches!(alpha, Scalar::Float(_)) {
        return Err(Error::dtype(
            "For integral input tensors, argument alpha must not be a floating point number.",
        ));
    }
    if !dtype.is_bool() && matches!(alpha, Scalar::Bool(_)) {
        return Err(Error::dtype(
            "Boolean alpha only supported for Boolean results.",
        ));
    }
    Ok(())
}

/// `a + alpha·b` (`op` = Add) or `a - alpha·b` (`op` = Sub) where `a` or `b` is sparse.
#[track_caller]
pub(crate) fn add(a: &Tensor, b: &Operand, alpha: Scalar, op: BinaryOp) -> Result<Tensor> {
    let alpha = if op == BinaryOp::Sub {
        match alpha {
            Scalar::Int(i) => Scalar::Int(i.wrapping_neg()),
            Scalar::Float(x) => Scalar::Float(-x),
            Scalar::Bool(v) => Scalar::Int(-(v as i64)),
            Scalar::Complex(re, im) => Scalar::Complex(-re, -im),
        }
    } else {
        alpha
    };
    match (a.coo(), b) {
        (Some(sa), Operand::Tensor(bt)) if bt.is_sparse() => {
            if op == BinaryOp::Sub {
                sub_check(a.dtype(), bt.dtype())?;
            }
            add_sparse(a, sa, bt, alpha)
        }
        (Some(_), Operand::Tensor(_) | Operand::Scalar(_)) => Err(Error::layout(
            "add(sparse, dense) is not supported. Use add(dense, sparse) instead.",
        )),
        (None, Operand::Tensor(bt)) => {
            if op == BinaryOp::Sub {
                sub_check(a.dtype(), bt.dtype())?;
            }
            add_dense_sparse(a, bt, alpha)
        }
        (None, Operand::Scalar(_)) => {
            unreachable!("invariant: sparse add is reached with a sparse operand")
        }
    }
}

/// `dense + alpha·sparse`: a dense tensor with row-major strides; no broadcasting.
#[track_caller]
fn add_dense_sparse(dense: &Tensor, sparse: &Tensor, alpha: Scalar) -> Result<Tensor> {
    if dense.shape() != sparse.shape() {
        return Err(Error::shape(format!(
            "add: expected 'self' and 'other' to have same size, but self has size {} while \
             other has size {} (FYI: dense-sparse addition does not currently support \
             broadcasting)",
            fmt_list(dense.shape()),
            fmt_list(sparse.shape())
        )));
    }
    let sum = dense.try_add_scaled(&sparse.try_to_dense()?, alpha, BinaryOp::Add)?;
    if sum.is_contiguous() {
        Ok(sum)
    } else {
        sum.try_contiguous_copy()
    }
}

/// `s + alpha·o` of two sparse tensors of one shape.
#[track_caller]
fn add_sparse(s: &Tensor, sc: &SparseCoo, o: &Tensor, alpha: Scalar) -> Result<Tensor> {
    let oc = o.coo().expect("invariant: the other operand is sparse");
    if s.shape() != o.shape() {
        return Err(Error::shape(format!(
            "add: expected sizes of 'self' and 'other' to match, but {} != {}",
            fmt_list(s.shape()),
            fmt_list(o.shape())
        )));
    }
    crate::device::common_device("add", &[s, o], false)?;
    let common = promote_types(s.dtype(), o.dtype());
    alpha_check(common, alpha)?;
    let scaled = |v: &Tensor| -> Result<Tensor> {
        if alpha == Scalar::Int(1) {
            Ok(v.clone())
        } else {
            v.try_mul(alpha)
        }
    };
    if oc.nnz() == 0 {
        let values = sc.values.try_to_dtype(common, true)?;
        return Ok(s.with_coo(sc.indices.try_contiguous_copy()?, values, sc.coalesced));
    }
    if sc.nnz() == 0 {
        let values = scaled(&oc.values)?.try_to_dtype(common, false)?;
        let values = if values.shares_storage(&oc.values) {
            values.try_contiguous_copy()?
        } else {
            values
        };
        return Ok(s.with_coo(oc.indices.try_contiguous_copy()?, values, oc.coalesced));
    }
    if sc.sparse_dim() != oc.sparse_dim() {
        return Err(Error::shape(format!(
            "add: expected 'self' and 'other' to have same density, but 'self' has {} sparse \
             dimensions while 'other' has {} sparse dimensions",
            sc.sparse_dim(),
            oc.sparse_dim()
        )));
    }
    if common.is_bool() {
        return Err(Error::dtype("\"cadd_sparse\" not implemented for 'Bool'"));
    }
    let (sv, ov) = (
        sc.values.try_to_dtype(common, false)?,
        oc.values.try_to_dtype(common, false)?,
    );
    if !sc.values.is_contiguous() || !oc.values.is_contiguous() {
        // PyTorch's `add_out_sparse_non_contiguous`: both entry lists concatenated, coalesced
        // only when there are more entries than elements.
        let indices = Tensor::try_cat(&[sc.indices.clone(), oc.indices.clone()], 1)?;
        let values = Tensor::try_cat(&[sv, scaled(&ov)?], 0)?;
        let n = indices.shape()[1];
        let r = s.with_coo(indices, values, n < 2);
        return if n > s.numel() {
            r.try_coalesce()
        } else {
            Ok(r)
        };
    }
    let plan = merge(sc, oc)?;
    let device = s.device();
    let note = "graph break: sparse add";
    let (k, n) = (sc.sparse_dim(), plan.from_s.len());
    // PyTorch merges into `[k, nnz(s) + nnz(o)]` indices and narrows them to the entries it
    // wrote: the same row stride here.
    let room = sc.nnz() + oc.nnz();
    let mut padded = vec![0i64; k * room];
    for d in 0..k {
        padded[d * room..d * room + n].copy_from_slice(&plan.indices[d * n..(d + 1) * n]);
    }
    let indices = host_i64(padded, &[k, room], device, note)?.try_narrow(1, 0, n as i64)?;
    let side = |v: &Tensor, from: &[i64]| -> Result<Tensor> {
        let index = host_i64(from.iter().map(|&i| i.max(0)).collect(), &[n], device, note)?;
        let mut mask_shape = vec![1usize; v.ndim()];
        mask_shape[0] = n;
        let missing: Vec<bool> = from.iter().map(|&i| i < 0).collect();
        let missing = Tensor::graph_break(
            HostBuffer::Bool(missing.into()),
            smelt_ir::View::contiguous(&mask_shape),
            note,
            device,
        )?;
        take_rows(v, &index)?.try_masked_fill(&missing, 0)
    };
    let values = side(&sv, &plan.from_s)?.try_add(&side(&scaled(&ov)?, &plan.from_o)?)?;
    Ok(s.with_coo(indices, values, sc.coalesced && oc.coalesced))
}

/// Which entry of each operand every result entry of a sparse add takes (-1: none), and the
/// result's indices `[k, n]` row-major.
struct Merge {
    from_s: Vec<i64>,
    from_o: Vec<i64>,
    indices: Vec<i64>,
}

/// PyTorch's merge: walk both entry lists in their stored order as if both were sorted; the
/// smaller index tuple goes first, equal ones combine into one entry, and what is left of
/// either list follows in order. (An uncoalesced operand's duplicates and order survive.)
fn merge(s: &SparseCoo, o: &SparseCoo) -> Result<Merge> {
    crate::tensor::realize(&[&s.indices, &o.indices])?;
    let (si, oi) = (s.indices.to_vec::<i64>(), o.indices.to_vec::<i64>());
    let (k, ns, no) = (s.sparse_dim(), s.nnz(), o.nnz());
    let (sr, or) = (&si, &oi);
    let tuple_s = |j: usize| (0..k).map(move |d| sr[d * ns + j]);
    let tuple_o = |j: usize| (0..k).map(move |d| or[d * no + j]);
    let (mut from_s, mut from_o) = (Vec::with_capacity(ns + no), Vec::with_capacity(ns + no));
    let (mut i, mut j) = (0usize, 0usize);
    while i < ns || j < no {
        let order = if i >= ns {
            std::cmp::Ordering::Greater
        } else if j >= no {
            std::cmp::Ordering::Less
        } else {
            tuple_s(i).cmp(tuple_o(j))
        };
        from_s.push(if order.is_le() { i as i64 } else { -1 });
        from_o.push(if order.is_ge() { j as i64 } else { -1 });
        i += order.is_le() as usize;
        j += order.is_ge() as usize;
    }
    let n = from_s.len();
    let mut indices = vec![0i64; k * n];
    for (e, (&a, &b)) in from_s.iter().zip(&from_o).enumerate() {
        for d in 0..k {
            indices[d * n + e] = if a >= 0 {
                si[d * ns + a as usize]
            } else {
                oi[d * no + b as usize]
            };
        }
    }
    Ok(Merge {
        from_s,
        from_o,
        indices,
    })
}

/// An elementwise binary op with a sparse operand: `mul`/`div` of a sparse tensor by a scalar
/// (or a 0-dim dense tensor) scale its values; `add`/`sub` go to [`add`]; anything else is
/// refused.
#[track_caller]
pub(crate) fn binary(a: &Tensor, b: &Operand, op: BinaryOp) -> Result<Tensor> {
    if matches!(op, BinaryOp::Add | BinaryOp::Sub) {
        return add(a, b, Scalar::Int(1), op);
    }
    let other = match b.operand() {
        OperandRef::Tensor(t) => Some(t),
        OperandRef::Scalar(_) => None,
    };
    let scalar_like = other.is_none_or(|t| !t.is_sparse() && t.ndim() == 0);
    let scales = matches!(
        op,
        BinaryOp::Mul | BinaryOp::Div | BinaryOp::DivTrunc | BinaryOp::DivFloor
    );
    if let Some(coo) = a.coo()
        && scalar_like
        && scales
    {
        let values = coo.values.try_binary(b.clone(), op)?;
        return Ok(a.with_coo(coo.indices.try_contiguous_copy()?, values, coo.coalesced));
    }
    if op == BinaryOp::Mul {
        return Err(combination(
            "mul",
            "smelt multiplies a sparse COO tensor only by a scalar or a 0-dim dense tensor",
        ));
    }
    let sparse = std::iter::once(a)
        .chain(other)
        .find(|t| t.is_sparse())
        .expect("invariant: sparse binary ops have a sparse operand");
    Err(super::no_sparse_kernel(op.name(), sparse))
}

impl Tensor {
    /// `neg` of a sparse tensor: negated values, copied indices, the flag kept.
    #[track_caller]
    pub(crate) fn sparse_neg(&self, coo: &SparseCoo) -> Result<Tensor> {
        let values = coo.values.try_neg()?;
        Ok(self.with_coo(coo.indices.try_contiguous_copy()?, values, coo.coalesced))
    }

    /// `torch.sparse.sum(self, dim)`: with no dims, the 0-dim dense sum of every entry (bool
    /// and integer values sum to int64). With dims (positions, no repeats): the summed dims
    /// removed, as a coalesced sparse tensor over the remaining dims (a graph break, as for
    /// [`Tensor::try_coalesce`]), or as a dense tensor over the remaining dense dims when every
    /// sparse dim is summed. Errors: a `layout` error for a strided tensor, an `index` error for a
    /// dim out of range, a `value` error for a repeated dim.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let i = Tensor::new([[0i64, 1, 1], [2, 0, 2]]);
    /// let s = Tensor::sparse_coo_tensor(&i, &Tensor::new([3.0f32, 4.0, 5.0]), Some(&[2, 3]));
    /// assert_eq!(s.sparse_sum(&[]).item().as_f64(), 12.0);
    /// let rows = s.sparse_sum(&[1]);
    /// assert_eq!((rows.layout(), rows.to_dense().to_vec::<f32>()), (Layout::SparseCoo, vec![3.0, 9.0]));
    /// ```
    #[track_caller]
    pub fn try_sparse_sum(&self, dim: &[i64]) -> Result<Tensor> {
        let coo = self.coo_for("_sparse_sum")?;
        if dim.is_empty() {
            return coo.values.try_sum(&[], false, None);
        }
        let dims = smelt_ir::view::wrap_dims(dim, self.ndim())?;
        let k = coo.sparse_dim();
        let dense: Vec<i64> = dims
            .iter()
            .filter(|&&d| d >= k)
            .map(|&d| (d + 1 - k) as i64)
            .collect();
        let summed_sparse = dims.len() - dense.len();
        let values = if dense.is_empty() {
            coo.values.try_contiguous_copy()?
        } else {
            coo.values.try_sum(&dense, false, None)?
        };
        if summed_sparse == k {
            return values.try_sum(&[0], false, None);
        }
        let kept: Vec<usize> = (0..self.ndim()).filter(|d| !dims.contains(d)).collect();
        let indices = if summed_sparse == 0 {
            coo.indices.try_contiguous_copy()?
        } else {
            let rows = kept
                .iter()
                .filter(|&&d| d < k)
                .map(|&d| coo.indices.try_select(0, d as i64))
                .collect::<Result<Vec<_>>>()?;
            Tensor::try_stack(&rows, 0)?
        };
        let shape: Vec<usize> = kept.iter().map(|&d| self.shape()[d]).collect();
        Tensor::from_coo(&shape, indices, values, false).try_coalesce()
    }

    /// `torch.sparse.sum(self, dim)`; panics where [`Tensor::try_sparse_sum`] returns an error.
    #[track_caller]
    pub fn sparse_sum(&self, dim: &[i64]) -> Tensor {
        crate::tensor::ok(self.try_sparse_sum(dim))
    }

    /// `sum(self, dim, keepdim, dtype)` of a sparse tensor: [`Tensor::try_sparse_sum`] of the
    /// values converted to `dtype`; keepdim is refused, as in PyTorch.
    #[track_caller]
    pub(crate) fn sparse_sum_dims(
        &self,
        coo: &SparseCoo,
        dims: &[i64],
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        if keepdim {
            return Err(combination(
                "sum",
                "keepdim=True is not supported for sparse tensors",
            ));
        }
        let this = match dtype {
            Some(d) => self.sparse_to_dtype(coo, d, false)?,
            None => self.clone(),
        };
        if dims.is_empty() {
            let coo = this.coo().expect("invariant: still sparse");
            return coo.values.try_sum(&[], false, None);
        }
        this.try_sparse_sum(dims)
    }
}
