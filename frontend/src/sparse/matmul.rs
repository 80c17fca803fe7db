//! Products with a sparse left operand: sparse × dense through the `SpMM` library op (a real
//! kernel on every backend: rows in parallel on the host, one thread per output element on
//! CUDA), and sparse × sparse, whose structure (every `(i, j)` some `k` connects) is planned on
//! the host and whose values are summed lazily by the `Segment` op.

use super::coalesce::segment;
use super::{SparseCoo, host_i64, take_rows, zeros_on};
use crate::tensor::{Tensor, ok};
use smelt_ir::view::fmt_list;
use smelt_ir::{DType, Error, LibraryOp, Result, View};

/// Which product a call asked for: the name its errors report.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Product {
    Mm,
    Matmul,
    SparseMm,
}

impl Product {
    fn name(self) -> &'static str {
        match self {
            Product::Mm => "mm",
            Product::Matmul => "matmul",
            Product::SparseMm => "sparse.mm",
        }
    }
}

/// `a @ b` where `a` or `b` is sparse: a 2-D sparse `a` (no dense dims) times a dense 2-D `b`
/// (1-D too for `matmul`) is dense and row-major; times a sparse `b`, sparse and coalesced.
#[track_caller]
pub(crate) fn product(a: &Tensor, b: &Tensor, which: Product) -> Result<Tensor> {
    let op = which.name();
    let Some(coo) = a.coo() else {
        return Err(Error::layout(format!(
            "{op}: smelt multiplies by a sparse COO tensor only from the left (sparse @ dense \
             or sparse @ sparse)"
        )));
    };
    crate::device::common_device(op, &[a, b], false)?;
    if coo.sparse_dim() != 2 || a.dense_dim() != 0 {
        return Err(Error::shape(format!(
            "addmm: matrices expected, got {}D tensor with {} dense dims",
            coo.sparse_dim(),
            a.dense_dim()
        )));
    }
    if let Some(bc) = b.coo() {
        return sparse_sparse(a, coo, b, bc);
    }
    let vector = b.ndim() == 1 && which == Product::Matmul;
    if b.ndim() != 2 && !vector {
        return Err(Error::shape(format!(
            "addmm: matrices expected, got {}D tensor",
            b.ndim()
        )));
    }
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(format!(
            "expected scalar type {} but found {}",
            a.dtype().torch_name(),
            b.dtype().torch_name()
        )));
    }
    if a.dtype().is_bool() {
        return Err(Error::dtype(
            "\"addmm_sparse_dense\" not implemented for 'Bool'",
        ));
    }
    let (m, k) = (a.shape()[0], a.shape()[1]);
    if b.shape()[0] != k {
        return Err(Error::shape(format!(
            "addmm: Argument #3 (dense): Expected dim 0 size {k}, got {}",
            b.shape()[0]
        )));
    }
    let dense = if vector {
        b.view.unsqueeze(1)?
    } else {
        b.view.clone()
    };
    let n = dense.shape[1];
    let rows = coo.indices.try_select(0, 0)?;
    let cols = coo.indices.try_select(0, 1)?;
    let (rows, cols, values) = if coo.coalesced {
        (rows, cols, coo.values.clone())
    } else {
        // Entries grouped by row, stably: each row's entries keep their stored order.
        let (_, order) = rows.try_sort(0, false)?;
        (
            take_rows(&rows, &order)?,
            take_rows(&cols, &order)?,
            take_rows(&coo.values, &order)?,
        )
    };
    let shape: Vec<usize> = if vector { vec![m] } else { vec![m, n] };
    let inputs = vec![
        rows.source(),
        cols.source(),
        values.source(),
        (b.storage.current(), dense),
    ];
    super::coalesce::refuse_complex_values("mm", &values)?;
    Tensor::library(
        LibraryOp::SpMM,
        a.dtype(),
        &shape,
        View::contiguous(&[m, n]),
        inputs,
    )
}

/// `a @ b` of two sparse matrices: the `(i, j)` that some `k` connects (`a[i, k]` and
/// `b[k, j]` both stored), sorted and unique, each with the sum of its products. A graph
/// break: both index lists are read.
#[track_caller]
fn sparse_sparse(a: &Tensor, ac: &SparseCoo, b: &Tensor, bc: &SparseCoo) -> Result<Tensor> {
    if bc.sparse_dim() != 2 || b.dense_dim() != 0 {
        return Err(Error::shape(format!(
            "sparse_sparse_matmul_cpu: scalar values expected, got {}D values",
            b.dense_dim()
        )));
    }
    if a.shape()[1] != b.shape()[0] {
        return Err(Error::shape(format!(
            "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
            a.shape()[0],
            a.shape()[1],
            b.shape()[0],
            b.shape()[1]
        )));
    }
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(format!(
            "mat1 dtype {} does not match mat2 dtype {}",
            a.dtype().torch_name(),
            b.dtype().torch_name()
        )));
    }
    if !matches!(a.dtype(), DType::F32 | DType::F64) {
        return Err(Error::dtype(format!(
            "\"sparse_matmul\" not implemented for '{}'",
            a.dtype().torch_name()
        )));
    }
    let (rows, cols) = (a.shape()[0], b.shape()[1]);
    let shape = [rows, cols];
    let device = a.device();
    if rows * cols == 0 || ac.nnz() == 0 || bc.nnz() == 0 {
        return Ok(Tensor::from_coo(
            &shape,
            zeros_on(&[2, 0], DType::I64, device),
            zeros_on(&[0], a.dtype(), device),
            true,
        ));
    }
    crate::tensor::realize(&[&ac.indices, &bc.indices])?;
    let (ai, bi) = (ac.indices.to_vec::<i64>(), bc.indices.to_vec::<i64>());
    let (na, nb) = (ac.nnz(), bc.nnz());
    // b's entries by row, in stored order.
    let mut by_row: Vec<Vec<usize>> = vec![vec![]; b.shape()[0]];
    for (e, &row) in bi[..nb].iter().enumerate() {
        if let Some(list) = usize::try_from(row).ok().and_then(|r| by_row.get_mut(r)) {
            list.push(e);
        }
    }
    // Every (a entry, b entry) pair that meets, keyed by its output position.
    let mut pairs: Vec<(i64, usize, usize)> = vec![];
    for ea in 0..na {
        let (i, kk) = (ai[ea], ai[na + ea]);
        let Some(list) = usize::try_from(kk).ok().and_then(|k| by_row.get(k)) else {
            continue;
        };
        for &eb in list {
            pairs.push((
                i.wrapping_mul(cols as i64).wrapping_add(bi[nb + eb]),
                ea,
                eb,
            ));
        }
    }
    pairs.sort_by_key(|p| p.0);
    let note = "graph break: sparse @ sparse";
    let np = pairs.len();
    let mut run = Vec::with_capacity(np);
    let mut unique: Vec<i64> = vec![];
    for p in &pairs {
        if unique.last() != Some(&p.0) {
            unique.push(p.0);
        }
        run.push(unique.len() as i64 - 1);
    }
    let nout = unique.len();
    let mut indices = unique
        .iter()
        .map(|&key| key.div_euclid(cols as i64))
        .collect::<Vec<_>>();
    indices.extend(unique.iter().map(|&key| key.rem_euclid(cols as i64)));
    if np == 0 {
        return Ok(Tensor::from_coo(
            &shape,
            zeros_on(&[2, 0], DType::I64, device),
            zeros_on(&[0], a.dtype(), device),
            true,
        ));
    }
    let pick = |v: &Tensor, which: Vec<i64>| -> Result<Tensor> {
        take_rows(v, &host_i64(which, &[np], device, note)?)
    };
    let products = pick(&ac.values, pairs.iter().map(|p| p.1 as i64).collect())?.try_mul(&pick(
        &bc.values,
        pairs.iter().map(|p| p.2 as i64).collect(),
    )?)?;
    let keys = host_i64(pairs.iter().map(|p| p.0).collect(), &[np], device, note)?;
    let run = host_i64(run, &[np], device, note)?;
    let values = segment(&products, &keys, &run, nout, false, None)?;
    Ok(Tensor::from_coo(
        &shape,
        host_i64(indices, &[2, nout], device, note)?,
        values,
        true,
    ))
}

impl Tensor {
    /// `torch.sparse.mm(self, other)`: a 2-D sparse `self` (no dense dims) times a dense 2-D
    /// `other` gives a dense row-major result computed by the `SpMM` kernel; times a 2-D sparse
    /// `other`, a coalesced sparse result (a graph break: the index lists are read). No type
    /// promotion. Errors: `shape` errors for operands that are not matrices or whose inner
    /// sizes differ; `dtype` errors for different dtypes, a bool product, or a sparse × sparse
    /// product of a dtype other than float32/float64; a `layout` error for a strided `self`.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let i = Tensor::new([[0i64, 1, 1], [2, 0, 2]]);
    /// let a = Tensor::sparse_coo_tensor(&i, &Tensor::new([3.0f32, 4.0, 5.0]), Some(&[2, 3]));
    /// let b = Tensor::new([[1.0f32, 0.0], [0.0, 1.0], [1.0, 1.0]]);
    /// assert_eq!(a.sparse_mm(&b).to_vec::<f32>(), [3.0, 3.0, 9.0, 5.0]);
    /// assert_eq!(a.sparse_mm(&b).to_vec::<f32>(), a.to_dense().mm(&b).to_vec::<f32>());
    /// ```
    #[track_caller]
    pub fn try_sparse_mm(&self, other: &Tensor) -> Result<Tensor> {
        if !self.is_sparse() {
            return Err(Error::layout(format!(
                "sparse.mm: expected a sparse COO self, got a strided tensor of size {}",
                fmt_list(self.shape())
            )));
        }
        product(self, other, Product::SparseMm)
    }

    /// `torch.sparse.mm(self, other)`; panics where [`Tensor::try_sparse_mm`] returns an error.
    #[track_caller]
    pub fn sparse_mm(&self, other: &Tensor) -> Tensor {
        ok(self.try_sparse_mm(other))
    }
}
