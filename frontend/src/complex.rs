//! Complex tensors: the views that read a storage as another dtype (`real`, `imag`,
//! `view_as_real`, `view_as_complex`, `view(dtype)`), lazy conjugation (`conj` flips a bit on
//! the view that the consuming kernel's loads apply; `resolve_conj` and `conj_physical` copy),
//! the conjugating transposes (`H`, `mH`, `adjoint`), and the factories and ops that only exist
//! for complex numbers (`complex`, `polar`, `sgn`, `angle`).
//!
//! A complex storage of `n` elements is a buffer of `2n` parts; a view's [`Reading`] says
//! whether it reads whole elements, one part of each, or pairs of a real storage's elements,
//! and strides and offsets count elements of the dtype it reads (DESIGN §2). None of these
//! views records a node: `x.real` and `x.conj()` are new handles on `x`'s storage.

use crate::elementwise::record;
use crate::tensor::{Tensor, ok};
use smelt_ir::graph::Op;
use smelt_ir::{DType, Dims, Error, Parts, Reading, Result, UnaryOp, View};

/// `view` reading the storage's complex elements as their real counterpart: every stride and
/// the offset doubled (its storage is complex, or it reads a real storage as complex and then
/// reads that storage plainly again).
fn split(view: &View) -> View {
    let mut v = view.clone();
    v.strides = view.strides.iter().map(|s| 2 * s).collect();
    v.offset = 2 * view.offset;
    v.read.parts = match view.read.parts {
        Parts::Whole => Parts::Split,
        Parts::Paired => Parts::Whole,
        Parts::Split => unreachable!("a split view reads a real dtype"),
    };
    v
}

impl Tensor {
    /// Is the dtype complex (`tensor.is_complex()`)?
    pub fn is_complex(&self) -> bool {
        self.dtype().is_complex()
    }

    /// `tensor.real`: for a complex tensor, a view of the real parts (float32 for complex64,
    /// float64 for complex128) on the same storage: strides and offset doubled, and writes
    /// through it change the tensor. The real part of a conjugate view is the plain real view.
    /// A real tensor is its own real part. Never an error; `Result` for symmetry.
    pub fn try_real(&self) -> Result<Tensor> {
        if !self.is_complex() {
            return Ok(self.clone());
        }
        let mut v = split(&self.view);
        v.read.conj = false;
        Ok(self.with_view(v).with_dim_names(self.dim_names()))
    }

    /// `tensor.real`; see [`Tensor::try_real`]. Never panics.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let z = Tensor::new([Complex32::new(1.0, 2.0), Complex32::new(3.0, 4.0)]);
    /// let re = z.real();
    /// assert_eq!((re.dtype(), re.stride()), (DType::F32, vec![2]));
    /// re.fill_(0.5);
    /// assert_eq!(z.to_vec::<Complex32>()[1], Complex32::new(0.5, 4.0));
    /// ```
    pub fn real(&self) -> Tensor {
        ok(self.try_real())
    }

    /// `tensor.imag`: a view of a complex tensor's imaginary parts on the same storage
    /// (strides doubled, offset doubled plus 1); writes through it change the tensor. Of a
    /// conjugate view it reads the negated imaginary parts (PyTorch's negative bit,
    /// [`Tensor::is_neg`]) and writes land negated. Errors: a `dtype` error for a real tensor.
    pub fn try_imag(&self) -> Result<Tensor> {
        if !self.is_complex() {
            return Err(Error::dtype(
                "imag is not implemented for tensors with non-complex dtypes.",
            ));
        }
        let mut v = split(&self.view);
        v.offset += 1;
        v.read.neg = self.view.read.neg != self.view.read.conj;
        v.read.conj = false;
        Ok(self.with_view(v).with_dim_names(self.dim_names()))
    }

    /// `tensor.imag`; panics where [`Tensor::try_imag`] returns an error.
    #[track_caller]
    pub fn imag(&self) -> Tensor {
        ok(self.try_imag())
    }

    /// `torch.view_as_real(self)`: a complex tensor's storage as its real counterpart with a
    /// new last dim of size 2 (stride 1) holding each element's real and imaginary part; the
    /// other strides and the offset doubled. Errors: a `dtype` error for a real tensor, a
    /// `layout` error for a conjugate view (resolve it first).
    pub fn try_view_as_real(&self) -> Result<Tensor> {
        if !self.is_complex() {
            return Err(Error::dtype(
                "view_as_real is only supported for complex tensors",
            ));
        }
        if self.is_conj() {
            return Err(Error::layout(
                "view_as_real doesn't work on unresolved conjugated tensors.  To resolve the conjugate tensor so you can view it as real, use self.resolve_conj()",
            ));
        }
        let mut v = split(&self.view);
        v.shape.push(2);
        v.strides.push(1);
        Ok(self.with_view(v))
    }

    /// `torch.view_as_real(self)`; panics where [`Tensor::try_view_as_real`] returns an error.
    #[track_caller]
    pub fn view_as_real(&self) -> Tensor {
        ok(self.try_view_as_real())
    }

    /// `torch.view_as_complex(self)`: a float32 (float64) tensor whose last dim has size 2 and
    /// stride 1 viewed as complex64 (complex128) without that dim; the other strides and the
    /// offset halved (a size-1 dim's stride rounds down). Errors: a `dtype` error for another
    /// dtype, a `shape` error for a 0-dim tensor or a last dim whose size is not 2, a `stride`
    /// error for a last-dim stride other than 1, an odd stride on a dim longer than 1, or an
    /// odd storage offset.
    pub fn try_view_as_complex(&self) -> Result<Tensor> {
        let dtype = self.dtype();
        let Some(complex) = dtype.complex().filter(|_| dtype.is_float()) else {
            return Err(Error::dtype(format!(
                "view_as_complex is only supported for half, float and double tensors, but got a tensor of scalar type: {}{}",
                dtype.torch_name(),
                if dtype == DType::F16 {
                    " (smelt has no complex32)"
                } else {
                    ""
                }
            )));
        };
        let v = &self.view;
        let n = v.ndim();
        if n == 0 {
            return Err(Error::shape(
                "Input tensor must have one or more dimensions",
            ));
        }
        if v.shape[n - 1] != 2 {
            return Err(Error::shape("Tensor must have a last dimension of size 2"));
        }
        if v.strides[n - 1] != 1 {
            return Err(Error::stride(
                "Tensor must have a last dimension with stride 1",
            ));
        }
        if (0..n - 1).any(|d| v.shape[d] != 1 && v.strides[d] % 2 != 0) {
            return Err(Error::stride(
                "Tensor must have a stride divisible by 2 for all but last dimension",
            ));
        }
        if !v.offset.is_multiple_of(2) {
            return Err(Error::stride(
                "Tensor must have a storage_offset divisible by 2",
            ));
        }
        debug_assert_eq!(complex, dtype.complex().unwrap_or(complex));
        Ok(self.with_view(halve(v, n - 1)))
    }

    /// `torch.view_as_complex(self)`; panics where [`Tensor::try_view_as_complex`] returns an
    /// error.
    #[track_caller]
    pub fn view_as_complex(&self) -> Tensor {
        ok(self.try_view_as_complex())
    }

    /// `tensor.view(dtype)`: the same memory read as `dtype`. Viewing as its own dtype returns
    /// `self`; a complex dtype and its real counterpart view each other with the last dim
    /// doubled or halved and the other strides and the offset scaled with it. Errors: a
    /// `layout` error for a conjugate or negative view, a `shape` error for a 0-dim tensor or,
    /// towards complex, an odd last dim, a `stride` error for a last-dim stride other than 1
    /// or, towards complex, an odd stride or storage offset, and an `unsupported` error for
    /// every other pair of dtypes (reinterpreting bits across kinds, which smelt does not do).
    pub fn try_view_dtype(&self, dtype: DType) -> Result<Tensor> {
        let from = self.dtype();
        if dtype == from {
            return Ok(self.clone());
        }
        if self.is_conj() {
            return Err(Error::layout(
                "torch.Tensor.view is not supported for conjugate view tensors when converting to a different dtype.",
            ));
        }
        if self.is_neg() {
            return Err(Error::layout(
                "torch.Tensor.view is not supported for tensors with negative bit set when converting to a different dtype.",
            ));
        }
        let towards_complex = from.is_float() && from.complex() == Some(dtype);
        let towards_real = from.is_complex() && from.real() == dtype;
        if !towards_complex && !towards_real {
            return Err(Error::unsupported(format!(
                "view({dtype}) of a {from} tensor: smelt views a complex dtype as its real counterpart and back, and reinterprets no other bits"
            )));
        }
        let (f, t) = (from.torch_name(), dtype.torch_name());
        let v = &self.view;
        let n = v.ndim();
        if n == 0 {
            return Err(Error::shape(format!(
                "self.dim() cannot be 0 to view {f} as {t} (different element sizes)"
            )));
        }
        if towards_real {
            if v.strides[n - 1] != 1 {
                return Err(Error::stride(format!(
                    "self.stride(-1) must be 1 to view {f} as {t} (different element sizes), but got {}",
                    v.strides[n - 1]
                )));
            }
            let mut w = split(v);
            w.shape[n - 1] *= 2;
            w.strides[n - 1] = 1;
            return Ok(self.with_view(w));
        }
        if !v.shape[n - 1].is_multiple_of(2) {
            return Err(Error::shape(format!(
                "self.size(-1) must be divisible by 2 to view {f} as {t} (different element sizes), but got {}",
                v.shape[n - 1]
            )));
        }
        if v.strides[n - 1] != 1 {
            return Err(Error::stride(format!(
                "self.stride(-1) must be 1 to view {f} as {t} (different element sizes), but got {}",
                v.strides[n - 1]
            )));
        }
        if let Some(d) = (0..n - 1).find(|&d| v.strides[d] % 2 != 0) {
            return Err(Error::stride(format!(
                "self.stride({d}) must be divisible by 2 to view {f} as {t} (different element sizes), but got {}",
                v.strides[d]
            )));
        }
        if !v.offset.is_multiple_of(2) {
            return Err(Error::stride(format!(
                "self.storage_offset() must be divisible by 2 to view {f} as {t} (different element sizes), but got {}",
                v.offset
            )));
        }
        let mut w = halve(v, n - 1);
        w.shape.push(v.shape[n - 1] / 2);
        w.strides.push(1);
        Ok(self.with_view(w))
    }

    /// `tensor.view(dtype)`; panics where [`Tensor::try_view_dtype`] returns an error.
    #[track_caller]
    pub fn view_dtype(&self, dtype: DType) -> Tensor {
        ok(self.try_view_dtype(dtype))
    }

    /// `torch.conj(self)`: for a complex tensor, a lazy conjugate view (same storage, sizes,
    /// strides and offset, [`Tensor::is_conj`] flipped): reads conjugate the values and writes
    /// store the conjugate of what is written; the conjugate of a conjugate view is a plain
    /// view. No node is recorded: the consuming kernel's loads negate the imaginary parts. A
    /// real tensor is returned itself.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let z = Tensor::new([Complex64::new(1.0, 2.0)]);
    /// let c = z.conj();
    /// assert!(c.is_conj() && c.shares_storage(&z));
    /// assert_eq!(c.to_vec::<Complex64>(), [Complex64::new(1.0, -2.0)]);
    /// ```
    pub fn conj(&self) -> Tensor {
        if !self.is_complex() {
            return self.clone();
        }
        let mut v = self.view.clone();
        v.read.conj = !v.read.conj;
        self.with_view(v).with_dim_names(self.dim_names())
    }

    /// `tensor.resolve_conj()`: a conjugate view's values in a fresh tensor (not a conjugate
    /// view; elementwise strides); any other tensor is returned itself.
    #[track_caller]
    pub fn resolve_conj(&self) -> Tensor {
        if !self.is_conj() {
            return self.clone();
        }
        self.materialized()
    }

    /// `tensor.resolve_neg()`: a negative view's values in a fresh tensor; any other tensor is
    /// returned itself.
    #[track_caller]
    pub fn resolve_neg(&self) -> Tensor {
        if !self.is_neg() {
            return self.clone();
        }
        self.materialized()
    }

    /// `torch.conj_physical(self)`: the conjugated values of a complex tensor in a fresh tensor
    /// (not a conjugate view; elementwise strides); a real tensor is returned itself.
    #[track_caller]
    pub fn conj_physical(&self) -> Tensor {
        if !self.is_complex() {
            return self.clone();
        }
        self.conj().materialized()
    }

    /// The values this view reads, copied into a fresh tensor laid out as an elementwise op's
    /// output (a copy of a conjugate view stores the conjugated values).
    #[track_caller]
    fn materialized(&self) -> Tensor {
        let shape = self.shape().to_vec();
        let strides = smelt_ir::view::elementwise_out_strides(&shape, &[&self.view]);
        // The copy is the size of a tensor that exists: the size check cannot refuse it.
        crate::tensor::ok(Tensor::computed(
            Op::Cast,
            self.dtype(),
            &shape,
            strides,
            vec![self.source()],
        ))
        .with_dim_names(self.dim_names())
    }

    /// `tensor.H`: the conjugate transpose of a matrix (`conj().t()`; of a 0-dim tensor its
    /// conjugate). A view. Errors: a `shape` error for a tensor that is not 0-D or 2-D.
    pub fn try_big_h(&self) -> Result<Tensor> {
        let n = self.ndim();
        if n != 0 && n != 2 {
            return Err(Error::shape(format!(
                "tensor.H is only supported on matrices (2-D tensors). Got {n}-D tensor.{}",
                if n > 2 {
                    " For batches of matrices, consider using tensor.mH"
                } else {
                    ""
                }
            )));
        }
        self.conj_transposed("H")
    }

    /// `tensor.H`; panics where [`Tensor::try_big_h`] returns an error.
    #[track_caller]
    pub fn big_h(&self) -> Tensor {
        ok(self.try_big_h())
    }

    /// `tensor.mH`: the conjugate transpose of the last two dims (of a 0-dim tensor its
    /// conjugate). A view. Errors: a `shape` error for a 1-D tensor.
    pub fn try_mh(&self) -> Result<Tensor> {
        self.conj_transposed("mH")
    }

    /// `tensor.mH`; panics where [`Tensor::try_mh`] returns an error.
    #[track_caller]
    pub fn mh(&self) -> Tensor {
        ok(self.try_mh())
    }

    /// `tensor.adjoint()`: [`Tensor::try_mh`], with PyTorch's message for a 1-D tensor.
    pub fn try_adjoint(&self) -> Result<Tensor> {
        self.conj_transposed("adjoint()")
    }

    /// `tensor.adjoint()`: the conjugate transpose of the last two dims (a view); panics where
    /// [`Tensor::try_adjoint`] returns an error.
    #[track_caller]
    pub fn adjoint(&self) -> Tensor {
        ok(self.try_adjoint())
    }

    fn conj_transposed(&self, name: &str) -> Result<Tensor> {
        match self.ndim() {
            0 => Ok(self.conj()),
            1 => Err(Error::shape(format!(
                "tensor.{name} is only supported on matrices or batches of matrices. Got 1-D tensor."
            ))),
            _ => Ok(self.try_transpose(-2, -1)?.conj()),
        }
    }

    /// `torch.complex(real, imag)`: a fresh complex tensor with real parts `real` and
    /// imaginary parts `imag` (broadcast): complex64 from two float32 tensors, complex128 from
    /// two float64 ones. Errors: a `dtype` error for other or mismatched dtypes, a `shape`
    /// error when the shapes do not broadcast, a `device` error for tensors on different
    /// devices.
    #[track_caller]
    pub fn try_complex(real: &Tensor, imag: &Tensor) -> Result<Tensor> {
        let dtype = complex_of("complex", real.dtype(), imag.dtype())?;
        crate::names::refuse_named("complex", [real, imag])?;
        record(Op::Complex, dtype, real.dtype(), &[real, imag])
    }

    /// `torch.complex(real, imag)`; panics where [`Tensor::try_complex`] returns an error.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let z = Tensor::complex(&Tensor::new([1.0f32, 2.0]), &Tensor::new([0.5f32]));
    /// assert_eq!(z.dtype(), DType::C64);
    /// assert_eq!(z.to_vec::<Complex32>(), [Complex32::new(1.0, 0.5), Complex32::new(2.0, 0.5)]);
    /// ```
    #[track_caller]
    pub fn complex(real: &Tensor, imag: &Tensor) -> Tensor {
        ok(Tensor::try_complex(real, imag))
    }

    /// `torch.polar(abs, angle)`: `abs·cos(angle) + i·abs·sin(angle)` (broadcast), complex64
    /// from float32, complex128 from float64. Errors: as [`Tensor::try_complex`].
    #[track_caller]
    pub fn try_polar(abs: &Tensor, angle: &Tensor) -> Result<Tensor> {
        complex_of("polar", abs.dtype(), angle.dtype())?;
        let re = abs.try_mul(&angle.try_cos()?)?;
        let im = abs.try_mul(&angle.try_sin()?)?;
        Tensor::try_complex(&re, &im)
    }

    /// `torch.polar(abs, angle)`; panics where [`Tensor::try_polar`] returns an error.
    #[track_caller]
    pub fn polar(abs: &Tensor, angle: &Tensor) -> Tensor {
        ok(Tensor::try_polar(abs, angle))
    }

    /// `torch.sgn(self)`: `z / |z|` for a complex tensor (0 where `z` is 0); [`Tensor::sign`]
    /// for a real one. Never an error; `Result` for symmetry.
    #[track_caller]
    pub fn try_sgn(&self) -> Result<Tensor> {
        if !self.is_complex() {
            return self.try_sign();
        }
        let dtype = self.dtype();
        Ok(record(
            Op::Unary {
                op: UnaryOp::Sign,
                compute: dtype,
            },
            dtype,
            dtype,
            &[self],
        )?
        .with_dim_names(self.dim_names()))
    }

    /// `torch.sgn(self)`; never panics.
    #[track_caller]
    pub fn sgn(&self) -> Tensor {
        ok(self.try_sgn())
    }

    /// `torch.angle(self)`: the argument `atan2(im, re)` of each complex element, in the real
    /// counterpart dtype; of a real tensor π where the element is negative, 0 elsewhere, NaN
    /// for NaN (integer and bool inputs compute in the default float dtype). Never an error;
    /// `Result` for symmetry.
    #[track_caller]
    pub fn try_angle(&self) -> Result<Tensor> {
        self.try_unary(UnaryOp::Angle)
    }

    /// `torch.angle(self)`; never panics.
    #[track_caller]
    pub fn angle(&self) -> Tensor {
        ok(self.try_angle())
    }
}

/// `view` of a real storage read as complex: dims `..n` kept with their strides halved
/// (rounding down: a size-1 dim's odd stride), the offset halved.
fn halve(view: &View, n: usize) -> View {
    let mut v = view.clone();
    v.shape = view.shape[..n].into();
    v.strides = view.strides[..n]
        .iter()
        .map(|s| s.div_euclid(2))
        .collect::<Dims<isize>>();
    v.offset = view.offset / 2;
    v.read = Reading {
        parts: match view.read.parts {
            Parts::Whole => Parts::Paired,
            Parts::Split => Parts::Whole,
            Parts::Paired => unreachable!("a paired view reads a complex dtype"),
        },
        ..view.read
    };
    v
}

/// The complex dtype `torch.complex`/`torch.polar` make from parts of `a` and `b`.
fn complex_of(op: &str, a: DType, b: DType) -> Result<DType> {
    let float = |d: DType| matches!(d, DType::F32 | DType::F64);
    if !float(a) || !float(b) {
        return Err(Error::dtype(format!(
            "{op}: Expected both inputs to be Half, Float or Double tensors but got {} and {} (smelt: Float or Double)",
            a.torch_name(),
            b.torch_name()
        )));
    }
    if a != b {
        return Err(Error::dtype(format!(
            "{op}: Expected object of scalar type {} but got scalar type {} for second argument",
            a.torch_name(),
            b.torch_name()
        )));
    }
    Ok(a.complex()
        .expect("float32 and float64 have complex counterparts"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn z(values: &[(f32, f32)], shape: &[usize]) -> Tensor {
        let v: Vec<smelt_ir::Scalar> = values
            .iter()
            .map(|&(re, im)| smelt_ir::Scalar::Complex(re as f64, im as f64))
            .collect();
        Tensor::from_scalars(&v, shape, DType::C64)
    }

    fn parts(t: &Tensor) -> Vec<(f64, f64)> {
        t.to_scalars().iter().map(|s| s.as_complex()).collect()
    }

    #[test]
    fn real_and_imag_are_strided_float_views_of_the_storage() {
        let x = z(&[(1.0, 2.0), (3.0, 4.0), (5.0, 6.0)], &[3]);
        let (re, im) = (x.real(), x.imag());
        assert_eq!(
            (re.dtype(), re.stride(), re.storage_offset()),
            (DType::F32, vec![2], 0)
        );
        assert_eq!((im.stride(), im.storage_offset()), (vec![2], 1));
        assert_eq!(re.to_vec::<f32>(), [1.0, 3.0, 5.0]);
        assert_eq!(im.to_vec::<f32>(), [2.0, 4.0, 6.0]);
        assert!(re.shares_storage(&x) && im.shares_storage(&x));
        // Writes through a part change the complex tensor.
        im.mul_(10.0);
        assert_eq!(parts(&x), [(1.0, 20.0), (3.0, 40.0), (5.0, 60.0)]);
        // The conjugate's imaginary part reads (and writes) negated.
        let c = x.conj();
        assert!(c.imag().is_neg());
        assert_eq!(c.imag().to_vec::<f32>(), [-20.0, -40.0, -60.0]);
        assert_eq!(c.real().to_vec::<f32>(), [1.0, 3.0, 5.0]);
        c.imag().fill_(1.0);
        assert_eq!(parts(&x)[0], (1.0, -1.0));
    }

    #[test]
    fn view_as_real_and_back_round_trip_the_geometry() {
        let x = z(&[(1.0, 2.0), (3.0, 4.0), (5.0, 6.0), (7.0, 8.0)], &[2, 2]).t();
        let r = x.view_as_real();
        assert_eq!((r.shape(), r.stride()), (&[2, 2, 2][..], vec![2, 4, 1]));
        assert_eq!(r.to_vec::<f32>(), [1.0, 2.0, 5.0, 6.0, 3.0, 4.0, 7.0, 8.0]);
        let back = r.view_as_complex();
        assert_eq!((back.stride(), back.dtype()), (x.stride(), DType::C64));
        assert_eq!(parts(&back), parts(&x));
        assert_eq!(
            x.conj().try_view_as_real().unwrap_err().kind,
            smelt_ir::ErrorKind::Layout
        );
        let f = Tensor::new([1.0f32, 2.0, 3.0]);
        assert_eq!(
            f.try_view_as_complex().unwrap_err().kind,
            smelt_ir::ErrorKind::Shape
        );
        let odd = Tensor::new([1.0f32, 2.0, 3.0]).slice(0, Some(1), None, 1);
        assert_eq!(
            odd.try_view_as_complex().unwrap_err().kind,
            smelt_ir::ErrorKind::Stride
        );
    }

    #[test]
    fn view_dtype_doubles_and_halves_the_last_dim() {
        let x = z(&[(1.0, 2.0), (3.0, 4.0)], &[1, 2]);
        let f = x.view_dtype(DType::F32);
        assert_eq!((f.shape(), f.stride()), (&[1, 4][..], vec![4, 1]));
        assert_eq!(f.to_vec::<f32>(), [1.0, 2.0, 3.0, 4.0]);
        let back = f.view_dtype(DType::C64);
        assert_eq!(parts(&back), parts(&x));
        assert_eq!(
            x.conj().try_view_dtype(DType::F32).unwrap_err().kind,
            smelt_ir::ErrorKind::Layout
        );
        let three = Tensor::new([[1.0f32, 2.0, 3.0]]);
        assert_eq!(
            three.try_view_dtype(DType::C64).unwrap_err().kind,
            smelt_ir::ErrorKind::Shape
        );
    }

    #[test]
    fn conjugation_is_a_bit_that_resolves_into_copies() {
        let x = z(&[(1.0, 2.0), (3.0, -4.0)], &[2]);
        let c = x.conj();
        assert!(c.is_conj() && !c.conj().is_conj() && c.shares_storage(&x));
        assert_eq!(parts(&c), [(1.0, -2.0), (3.0, 4.0)]);
        let r = c.resolve_conj();
        assert!(!r.is_conj() && !r.shares_storage(&x));
        assert_eq!(parts(&r), [(1.0, -2.0), (3.0, 4.0)]);
        let p = x.conj_physical();
        assert!(!p.is_conj());
        assert_eq!(parts(&p), parts(&c));
        // Writes through a conjugate view store the conjugate.
        c.fill_(smelt_ir::Scalar::Complex(0.5, 1.5));
        assert_eq!(parts(&x), [(0.5, -1.5), (0.5, -1.5)]);
        let f = Tensor::new([1.0f32]);
        assert!(f.conj().is_same(&f) && !f.conj().is_conj());
    }
}
