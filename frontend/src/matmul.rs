//! The matmul family: `matmul` (PyTorch's 1-D and batch-broadcasting rules), `mm`, `bmm`,
//! `mv`, `dot`, `outer` and `addmm`. Every product is one `LibraryOp::Matmul` node reading its
//! operands through their views (transposed, sliced and expanded operands are not copied);
//! results are contiguous. mm/bmm/mv/dot/matmul do not promote: mixed dtypes are a `dtype`
//! error. `outer` promotes like `mul`; `addmm`'s bias broadcasts but must share the matrices'
//! dtype, as in PyTorch ("self and mat2 must have the same dtype").
//!
//! Names (SEMANTICS.md §7.2, contracts_away_dims): after the size checks, the output takes the
//! unified batch names, self's row name and other's column name; see `product_names`.

use crate::names::{
    DimNames, fmt_names, refuse_named, tensor_repr, to_dim_names, unify_from_right,
};
use crate::promote::Operand;
use crate::tensor::{Tensor, ok};
use smelt_ir::view::{broadcast_shapes, contiguous_strides, fmt_list};
use smelt_ir::{BinaryOp, DType, Error, LibraryOp, Result, Scalar, View};

/// `2x3`-style size of a matrix view.
fn mat(shape: &[usize]) -> String {
    shape
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

fn check_dtypes(op: &str, a: DType, b: DType) -> Result<()> {
    if a != b {
        return Err(Error::dtype(format!(
            "{op}: expected m1 and m2 to have the same dtype, but got: {} != {}",
            a.name(),
            b.name()
        )));
    }
    if a.is_bool() {
        return Err(Error::dtype(format!(
            "{op}: \"addmm_impl_cpu_\" not implemented for 'Bool'"
        )));
    }
    Ok(())
}

/// The product of `a` and `b` after rank checks: a 1-D `a` is a row `[1, K]`, a 1-D `b` a
/// column `[K, 1]`, batch dims broadcast; the vector dims are dropped from the result.
#[track_caller]
fn product(op: &str, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    crate::device::common_device(op, &[a, b], false)?;
    let (da, db) = (a.ndim(), b.ndim());
    if da == 0 || db == 0 {
        return Err(Error::shape(format!(
            "{op}: both arguments to matmul need to be at least 1D, but they are {da}D and {db}D"
        )));
    }
    let av = if da == 1 {
        a.view.unsqueeze(0)?
    } else {
        a.view.clone()
    };
    let bv = if db == 1 {
        b.view.unsqueeze(1)?
    } else {
        b.view.clone()
    };
    let (ra, rb) = (av.ndim(), bv.ndim());
    let (m, k) = (av.shape[ra - 2], av.shape[ra - 1]);
    let (k2, n) = (bv.shape[rb - 2], bv.shape[rb - 1]);
    if k != k2 {
        let msg = match (da, db) {
            (1, 1) => format!(
                "{op}: inconsistent tensor size, expected tensor [{k}] and src [{k2}] to have the same number of elements, but got {k} and {k2} elements respectively"
            ),
            (2, 1) => format!(
                "{op}: size mismatch, got input ({m}), mat ({}), vec ({k2})",
                mat(a.shape())
            ),
            _ => format!(
                "{op}: mat1 and mat2 shapes cannot be multiplied ({} and {}) for inputs of shape {} and {}",
                mat(&av.shape[ra - 2..]),
                mat(&bv.shape[rb - 2..]),
                fmt_list(a.shape()),
                fmt_list(b.shape())
            ),
        };
        return Err(Error::shape(msg));
    }
    check_dtypes(op, a.dtype(), b.dtype())?;
    let batch = broadcast_shapes(&av.shape[..ra - 2], &bv.shape[..rb - 2]).map_err(|e| {
        Error::shape(format!(
            "{op}: batch dims of {} and {} do not broadcast: {}",
            fmt_list(a.shape()),
            fmt_list(b.shape()),
            e.message
        ))
    })?;
    let with = |tail: [usize; 2]| -> Vec<usize> { batch.iter().copied().chain(tail).collect() };
    let a_in = av.broadcast_to(&with([m, k]));
    let b_in = bv.broadcast_to(&with([k, n]));
    let mut shape = batch.clone();
    if da >= 2 {
        shape.push(m);
    }
    if db >= 2 {
        shape.push(n);
    }
    // The dropped vector dims have size 1, so the contiguous [*batch, m, n] view addresses the
    // same buffer as the contiguous result.
    let out = View::contiguous(&with([m, n]));
    let inputs = vec![(a.storage.current(), a_in), (b.storage.current(), b_in)];
    Tensor::library(LibraryOp::Matmul, a.dtype(), &shape, out, inputs)
}

/// Batch names of a matmul (PyTorch's `TensorNames::unifyFromRight`): right-aligned, a
/// missing or unnamed dim takes the other's name, two different names are an error naming
/// both dims by their index in their tensor. No misalignment check.
fn unify_batch(
    a: &[Option<String>],
    na: usize,
    b: &[Option<String>],
    nb: usize,
) -> Result<Vec<Option<String>>> {
    let size = na.max(nb);
    let mut out = vec![None; size];
    for k in 0..size {
        let x = (k < na).then(|| (na - 1 - k, &a[na - 1 - k]));
        let y = (k < nb).then(|| (nb - 1 - k, &b[nb - 1 - k]));
        out[size - 1 - k] = match (x, y) {
            (Some((i, Some(p))), Some((j, Some(q)))) if p != q => {
                return Err(Error::names(format!(
                    "matmul: Expected '{p}' (index {i} of {}) to match '{q}' (index {j} of {}) but they do not match.",
                    fmt_names(a),
                    fmt_names(b)
                )));
            }
            (Some((_, Some(p))), _) | (_, Some((_, Some(p)))) => Some(p.clone()),
            _ => None,
        };
    }
    Ok(out)
}

/// Output names of a product of `a` and `b` (called after the sizes were checked): the
/// unified batch names, then `a`'s row name (none for a vector), then `b`'s column name (none
/// for a vector); contracted dims' names are not compared. Equal output names are an error,
/// except (PyTorch 2.11) for `matmul` of a ≥3-D tensor with a 2-D one.
fn product_names(op: &str, a: &Tensor, b: &Tensor) -> Result<Option<DimNames>> {
    if !a.has_names() && !b.has_names() {
        return Ok(None);
    }
    let (an, bn) = (a.names(), b.names());
    let (da, db) = (an.len(), bn.len());
    let mut out = unify_batch(&an, da.saturating_sub(2), &bn, db.saturating_sub(2))?;
    if da >= 2 {
        out.push(an[da - 2].clone());
    }
    if db >= 2 {
        out.push(bn[db - 1].clone());
    }
    let quirk = op == "matmul" && ((da >= 3 && db == 2) || (da == 2 && db >= 3));
    let duplicate = out
        .iter()
        .enumerate()
        .any(|(i, n)| n.is_some() && out[..i].contains(n));
    if duplicate && !quirk {
        return Err(Error::names(format!(
            "Matrix multiplying {} with {} would produce output tensor with duplicate names {}. Please rename the input tensors with `Tensor.rename` to prevent this.",
            tensor_repr(&an),
            tensor_repr(&bn),
            fmt_names(&out)
        )));
    }
    Ok(to_dim_names(out))
}

/// `product` with the output names.
#[track_caller]
fn named_product(op: &str, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let r = product(op, a, b)?;
    let names = product_names(op, a, b)?;
    Ok(r.with_dim_names(names))
}

fn expect_ndim(op: &str, what: &str, t: &Tensor, ndim: usize) -> Result<()> {
    if t.ndim() != ndim {
        return Err(Error::shape(format!(
            "{op}: {what} must be a {ndim}-D tensor, got {}-D of shape {}",
            t.ndim(),
            fmt_list(t.shape())
        )));
    }
    Ok(())
}

impl Tensor {
    /// `torch.matmul(self, other)` (Python's `@`): the dot product for two vectors, `mv`/`mm` for
    /// matrices, else a batched product whose batch dims broadcast (a vector operand gains and then
    /// loses a dim). Errors: a `shape` error for a 0-dim operand or inner sizes that differ or
    /// batch dims that do not broadcast, a `dtype` error for operands of different dtypes or bool
    /// ones, a `names` error when batch or output names conflict, a `device` error for tensors on
    /// different devices.
    #[track_caller]
    pub fn try_matmul(&self, other: &Tensor) -> Result<Tensor> {
        named_product("matmul", self, other)
    }
    /// `torch.matmul(self, other)`; panics where [`Tensor::try_matmul`] returns an error.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let a = Tensor::new([[1.0f32, 2.0], [3.0, 4.0]]);
    /// let v = Tensor::new([1.0f32, 1.0]);
    /// assert_eq!(a.matmul(&v).to_vec::<f32>(), [3.0, 7.0]);
    /// assert_eq!(a.matmul(&a).shape(), &[2, 2]);
    /// ```
    #[track_caller]
    pub fn matmul(&self, other: &Tensor) -> Tensor {
        ok(self.try_matmul(other))
    }

    /// `torch.mm(self, mat2)`: the product of two 2-D matrices. Errors: a `shape` error for another
    /// rank or inner sizes that differ, a `dtype` error for operands of different dtypes or bool
    /// ones, a `names` error when batch or output names conflict, a `device` error for tensors on
    /// different devices.
    #[track_caller]
    pub fn try_mm(&self, mat2: &Tensor) -> Result<Tensor> {
        expect_ndim("mm", "self", self, 2)?;
        expect_ndim("mm", "mat2", mat2, 2)?;
        named_product("mm", self, mat2)
    }
    /// `torch.mm(self, mat2)`; panics where [`Tensor::try_mm`] returns an error.
    #[track_caller]
    pub fn mm(&self, mat2: &Tensor) -> Tensor {
        ok(self.try_mm(mat2))
    }

    /// `torch.bmm(self, mat2)`: batched products of 3-D tensors with equal batch sizes (no
    /// broadcasting). Errors: a `shape` error for another rank, batch sizes or inner sizes that
    /// differ, a `dtype` error for operands of different dtypes or bool ones, a `names` error when
    /// batch or output names conflict, a `device` error for tensors on different devices.
    #[track_caller]
    pub fn try_bmm(&self, mat2: &Tensor) -> Result<Tensor> {
        expect_ndim("bmm", "batch1", self, 3)?;
        expect_ndim("bmm", "batch2", mat2, 3)?;
        let (s, o) = (self.shape(), mat2.shape());
        if s[0] != o[0] || s[2] != o[1] {
            return Err(Error::shape(format!(
                "bmm: Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
                s[0], s[2], o[0], o[1]
            )));
        }
        named_product("bmm", self, mat2)
    }
    /// `torch.bmm(self, mat2)`; panics where [`Tensor::try_bmm`] returns an error.
    #[track_caller]
    pub fn bmm(&self, mat2: &Tensor) -> Tensor {
        ok(self.try_bmm(mat2))
    }

    /// `torch.mv(self, vec)`: a 2-D matrix times a 1-D vector. Errors: a `shape` error for other
    /// ranks or sizes that differ, a `dtype` error for operands of different dtypes or bool ones, a
    /// `names` error when batch or output names conflict, a `device` error for tensors on different
    /// devices.
    #[track_caller]
    pub fn try_mv(&self, vec: &Tensor) -> Result<Tensor> {
        expect_ndim("mv", "self", self, 2)?;
        expect_ndim("mv", "vec", vec, 1)?;
        named_product("mv", self, vec)
    }
    /// `torch.mv(self, vec)`; panics where [`Tensor::try_mv`] returns an error.
    #[track_caller]
    pub fn mv(&self, vec: &Tensor) -> Tensor {
        ok(self.try_mv(vec))
    }

    /// `torch.dot(self, tensor)`: the inner product of two 1-D tensors as a 0-dim tensor. Errors: a
    /// `shape` error for another rank or lengths that differ, a `dtype` error for different
    /// dtypes, a `device` error for tensors on different devices.
    #[track_caller]
    pub fn try_dot(&self, tensor: &Tensor) -> Result<Tensor> {
        if self.ndim() != 1 || tensor.ndim() != 1 {
            return Err(Error::shape(format!(
                "dot: 1D tensors expected, but got {}D and {}D tensors",
                self.ndim(),
                tensor.ndim()
            )));
        }
        if self.dtype() != tensor.dtype() {
            return Err(Error::dtype(format!(
                "dot : expected both vectors to have same dtype, but found {} and {}",
                self.dtype().torch_name(),
                tensor.dtype().torch_name()
            )));
        }
        named_product("dot", self, tensor)
    }
    /// `torch.dot(self, tensor)`; panics where [`Tensor::try_dot`] returns an error.
    #[track_caller]
    pub fn dot(&self, tensor: &Tensor) -> Tensor {
        ok(self.try_dot(tensor))
    }

    /// `torch.outer(self, vec2)`: `self[:, None] * vec2` for two 1-D tensors, with type promotion;
    /// strides as PyTorch's product gives them. Errors: a `shape` error for another rank, a `names` error for a named `self`.
    #[track_caller]
    pub fn try_outer(&self, vec2: &Tensor) -> Result<Tensor> {
        // PyTorch computes `self.reshape(n, 1) * vec2`: a named self is refused by the reshape
        // (`aten::view`), vec2's names take part in the broadcast (`[None, 'N']`).
        refuse_named("view", [self])?;
        for (what, t) in [("self", self), ("vec2", vec2)] {
            if t.ndim() != 1 {
                return Err(Error::shape(format!(
                    "outer: Expected 1-D argument {what}, but got {}-D",
                    t.ndim()
                )));
            }
        }
        // The product's strides are the elementwise rule's for those operands (an empty result
        // is not always row-major).
        let n = self.shape()[0] as i64;
        self.try_reshape(&[n, 1])?.try_binary(vec2, BinaryOp::Mul)
    }
    /// `torch.outer(self, vec2)`; panics where [`Tensor::try_outer`] returns an error.
    #[track_caller]
    pub fn outer(&self, vec2: &Tensor) -> Tensor {
        ok(self.try_outer(vec2))
    }

    /// `torch.addmm(self, mat1, mat2, beta=beta, alpha=alpha)`: `beta·self + alpha·(mat1 @ mat2)`;
    /// `self` broadcasts to the product's shape and is ignored (NaNs included) when `beta` is 0.
    /// Errors: those of [`Tensor::try_mm`], a `shape` error when `self` does not broadcast to the
    /// product, a `dtype` error when `self`'s dtype differs or for a float `beta`/`alpha` with
    /// integer tensors.
    #[track_caller]
    pub fn try_addmm(
        &self,
        mat1: &Tensor,
        mat2: &Tensor,
        beta: Scalar,
        alpha: Scalar,
    ) -> Result<Tensor> {
        expect_ndim("addmm", "mat1", mat1, 2)?;
        expect_ndim("addmm", "mat2", mat2, 2)?;
        let prod = product("addmm", mat1, mat2)?;
        let mm_names = product_names("addmm", mat1, mat2)?;
        let names = if mm_names.is_some() || self.has_names() {
            let mm: Vec<Option<String>> = match &mm_names {
                Some(n) => n.to_vec(),
                None => vec![None; prod.ndim()],
            };
            to_dim_names(unify_from_right(&mm, &self.names(), "broadcast")?)
        } else {
            None
        };
        let shape = prod.shape().to_vec();
        if broadcast_shapes(self.shape(), &shape).ok().as_deref() != Some(shape.as_slice()) {
            return Err(Error::shape(format!(
                "addmm: self of shape {} cannot be broadcast to the product's shape {}",
                fmt_list(self.shape()),
                fmt_list(&shape)
            )));
        }
        if self.dtype() != mat2.dtype() {
            return Err(Error::dtype(format!(
                "addmm: self and mat2 must have the same dtype, but got {} and {}",
                self.dtype().torch_name(),
                mat2.dtype().torch_name()
            )));
        }
        for (name, s) in [("beta", beta), ("alpha", alpha)] {
            if !prod.dtype().is_float() && matches!(s, Scalar::Float(_)) {
                return Err(Error::dtype(format!(
                    "addmm: for integral input tensors, argument {name} must not be a floating point number"
                )));
            }
        }
        let is = |s: Scalar, v: f64| s.as_f64() == v;
        let scaled = if is(alpha, 1.0) {
            prod
        } else {
            prod.try_binary(Operand::Scalar(alpha), BinaryOp::Mul)?
        };
        if is(beta, 0.0) {
            return Ok(scaled.with_dim_names(names));
        }
        let bias = if is(beta, 1.0) {
            self.drop_names()
        } else {
            self.drop_names()
                .try_binary(Operand::Scalar(beta), BinaryOp::Mul)?
        };
        let r = scaled.try_binary(&bias, BinaryOp::Add)?;
        Ok(r.relayout(&shape, contiguous_strides(&shape))
            .with_dim_names(names))
    }
    /// `torch.addmm(self, mat1, mat2)`: `self + mat1 @ mat2` (`beta = alpha = 1`); panics where
    /// [`Tensor::try_addmm`] returns an error.
    #[track_caller]
    pub fn addmm(&self, mat1: &Tensor, mat2: &Tensor) -> Tensor {
        ok(self.try_addmm(mat1, mat2, Scalar::Int(1), Scalar::Int(1)))
    }
}
