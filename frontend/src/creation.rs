//! Factories: tensors from host data, constant fills, ranges, `*_like`, `empty_strided`,
//! `empty_permuted`, random tensors from an explicit seeded generator.

use crate::default_dtype::get_default_dtype;
use crate::lazy::LazyNode;
use crate::tensor::{Element, Tensor, ok};
use smelt_ir::Dims;
use smelt_ir::graph::Op;
use smelt_ir::view::{contiguous_strides, format_strides, permuted_strides};
use smelt_ir::{DType, Error, MemoryFormat, Result, Scalar, View};
use smelt_runtime::HostBuffer;

/// Nested host data (`[[1.0, 2.0], [3.0, 4.0]]`, `vec![…]`, a scalar) for [`Tensor::new`].
pub trait TensorData {
    /// Appends the shape below this level and the elements in row-major order.
    fn flatten_into(
        &self,
        shape: &mut Vec<usize>,
        depth: usize,
        out: &mut Vec<Scalar>,
    ) -> Result<()>;
    fn dtype_hint() -> DType;
}

impl<T: Element> TensorData for T {
    fn flatten_into(
        &self,
        _shape: &mut Vec<usize>,
        _depth: usize,
        out: &mut Vec<Scalar>,
    ) -> Result<()> {
        out.push(self.to_scalar());
        Ok(())
    }
    fn dtype_hint() -> DType {
        T::DTYPE
    }
}

fn flatten_seq<T: TensorData>(
    items: &[T],
    shape: &mut Vec<usize>,
    depth: usize,
    out: &mut Vec<Scalar>,
) -> Result<()> {
    if shape.len() == depth {
        shape.push(items.len());
    } else if shape[depth] != items.len() {
        return Err(Error::shape(format!(
            "expected sequence of length {} at dim {depth} (got {})",
            shape[depth],
            items.len()
        )));
    }
    for item in items {
        item.flatten_into(shape, depth + 1, out)?;
    }
    Ok(())
}

impl<T: TensorData, const N: usize> TensorData for [T; N] {
    fn flatten_into(
        &self,
        shape: &mut Vec<usize>,
        depth: usize,
        out: &mut Vec<Scalar>,
    ) -> Result<()> {
        flatten_seq(self, shape, depth, out)
    }
    fn dtype_hint() -> DType {
        T::dtype_hint()
    }
}

impl<T: TensorData> TensorData for Vec<T> {
    fn flatten_into(
        &self,
        shape: &mut Vec<usize>,
        depth: usize,
        out: &mut Vec<Scalar>,
    ) -> Result<()> {
        flatten_seq(self, shape, depth, out)
    }
    fn dtype_hint() -> DType {
        T::dtype_hint()
    }
}

impl<T: TensorData> TensorData for &[T] {
    fn flatten_into(
        &self,
        shape: &mut Vec<usize>,
        depth: usize,
        out: &mut Vec<Scalar>,
    ) -> Result<()> {
        flatten_seq(self, shape, depth, out)
    }
    fn dtype_hint() -> DType {
        T::dtype_hint()
    }
}

fn check_shape(shape: &[i64], op: &str) -> Result<Vec<usize>> {
    shape
        .iter()
        .map(|&s| {
            if s < 0 {
                Err(Error::value(format!(
                    "{op}: negative dimension {s} in size {}",
                    smelt_ir::view::fmt_list(shape)
                )))
            } else {
                Ok(s as usize)
            }
        })
        .collect()
}

/// A fresh contiguous tensor of `dtype` whose elements are `value` (lazy).
#[track_caller]
fn filled(shape: &[usize], strides: Dims<isize>, value: Scalar, dtype: DType) -> Tensor {
    Tensor::computed(
        Op::Fill {
            value: value.cast(dtype),
        },
        dtype,
        shape,
        strides,
        vec![],
    )
}

impl Tensor {
    /// A tensor from nested host data; the dtype is the element type's
    /// (`f32` → float32, `i64` → int64, `bool` → bool …).
    #[track_caller]
    pub fn new<D: TensorData>(data: D) -> Tensor {
        ok(Tensor::try_new(data))
    }

    #[track_caller]
    pub fn try_new<D: TensorData>(data: D) -> Result<Tensor> {
        let mut shape = vec![];
        let mut values = vec![];
        data.flatten_into(&mut shape, 0, &mut values)?;
        Tensor::try_from_scalars(&values, &shape, D::dtype_hint())
    }

    /// A tensor from a flat vector and a shape, adopting the vector's allocation on the host
    /// (no copy: PyTorch's `torch.from_numpy`); copied to the default device when that is not
    /// the host.
    #[track_caller]
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Tensor {
        ok(Tensor::try_from_vec(data, shape))
    }

    #[track_caller]
    pub fn try_from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        let numel: usize = shape.iter().product();
        if numel != data.len() {
            return Err(Error::shape(format!(
                "tensor: {} elements cannot have shape {}",
                data.len(),
                smelt_ir::view::fmt_list(shape)
            )));
        }
        Tensor::try_from_buffer(T::into_buffer(data), View::contiguous(shape))
    }

    /// A tensor of `dtype` from scalars (each cast to `dtype`), on the default device.
    #[track_caller]
    pub fn from_scalars(values: &[Scalar], shape: &[usize], dtype: DType) -> Tensor {
        ok(Tensor::try_from_scalars(values, shape, dtype))
    }

    /// [`Tensor::from_scalars`]; a `device` error when the default device is unusable.
    #[track_caller]
    pub fn try_from_scalars(values: &[Scalar], shape: &[usize], dtype: DType) -> Result<Tensor> {
        let numel: usize = shape.iter().product();
        if numel != values.len() {
            return Err(Error::shape(format!(
                "tensor: {} elements cannot have shape {}",
                values.len(),
                smelt_ir::view::fmt_list(shape)
            )));
        }
        Tensor::try_from_buffer(
            HostBuffer::from_scalars(dtype, values),
            View::contiguous(shape),
        )
    }

    /// A 0-dim tensor holding `value` in `dtype`.
    #[track_caller]
    pub fn scalar(value: impl Into<Scalar>, dtype: DType) -> Tensor {
        Tensor::from_scalars(&[value.into()], &[], dtype)
    }

    /// `torch.full(size, fill_value, dtype=…)`: without a dtype, bool fills give bool, int fills
    /// int64, float fills the default dtype.
    #[track_caller]
    pub fn try_full(
        shape: &[i64],
        value: impl Into<Scalar>,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let shape = check_shape(shape, "full")?;
        let value = value.into();
        let dtype = dtype.unwrap_or_else(|| value.wrapped_dtype(get_default_dtype()));
        Ok(filled(&shape, contiguous_strides(&shape), value, dtype))
    }

    #[track_caller]
    pub fn full(shape: &[i64], value: impl Into<Scalar>, dtype: Option<DType>) -> Tensor {
        ok(Tensor::try_full(shape, value, dtype))
    }

    #[track_caller]
    pub fn try_zeros(shape: &[i64], dtype: Option<DType>) -> Result<Tensor> {
        Tensor::try_full(shape, 0, Some(dtype.unwrap_or_else(get_default_dtype)))
    }

    #[track_caller]
    pub fn zeros(shape: &[i64], dtype: Option<DType>) -> Tensor {
        ok(Tensor::try_zeros(shape, dtype))
    }

    #[track_caller]
    pub fn try_ones(shape: &[i64], dtype: Option<DType>) -> Result<Tensor> {
        Tensor::try_full(shape, 1, Some(dtype.unwrap_or_else(get_default_dtype)))
    }

    #[track_caller]
    pub fn ones(shape: &[i64], dtype: Option<DType>) -> Tensor {
        ok(Tensor::try_ones(shape, dtype))
    }

    /// `torch.empty`: contiguous; its values are unspecified (smelt gives zeros).
    #[track_caller]
    pub fn try_empty(shape: &[i64], dtype: Option<DType>) -> Result<Tensor> {
        Tensor::try_zeros(shape, dtype)
    }

    #[track_caller]
    pub fn empty(shape: &[i64], dtype: Option<DType>) -> Tensor {
        ok(Tensor::try_empty(shape, dtype))
    }

    /// `torch.empty(…, memory_format=…)`.
    #[track_caller]
    pub fn try_empty_format(
        shape: &[i64],
        dtype: Option<DType>,
        format: MemoryFormat,
    ) -> Result<Tensor> {
        let shape = check_shape(shape, "empty")?;
        let strides = format_strides(&shape, format)?;
        Ok(filled(
            &shape,
            strides,
            Scalar::Int(0),
            dtype.unwrap_or_else(get_default_dtype),
        ))
    }

    /// `torch.empty_strided(size, stride)`.
    #[track_caller]
    pub fn try_empty_strided(
        shape: &[i64],
        strides: &[i64],
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let shape = check_shape(shape, "empty_strided")?;
        if strides.len() != shape.len() {
            return Err(Error::shape(format!(
                "empty_strided: mismatch in length of strides ({}) and shape ({})",
                strides.len(),
                shape.len()
            )));
        }
        if strides.iter().any(|&s| s < 0) {
            return Err(Error::value(
                "empty_strided: negative strides are not supported",
            ));
        }
        let strides: Vec<isize> = strides.iter().map(|&s| s as isize).collect();
        let dtype = dtype.unwrap_or_else(get_default_dtype);
        let view = View::new(shape.clone(), strides, 0);
        let len = view
            .address_range()
            .map(|(_, hi)| hi as usize + 1)
            .unwrap_or(0);
        // Every storage element is filled, so the view over it reads defined (zero) values.
        let node = LazyNode::pending(
            Op::Fill {
                value: Scalar::Int(0).cast(dtype),
            },
            dtype,
            len,
            View::contiguous(&[len]),
            vec![],
        );
        Ok(Tensor {
            storage: crate::lazy::Storage::new(node),
            view,
            names: Default::default(),
        })
    }

    #[track_caller]
    pub fn empty_strided(shape: &[i64], strides: &[i64], dtype: Option<DType>) -> Tensor {
        ok(Tensor::try_empty_strided(shape, strides, dtype))
    }

    /// `torch.empty_permuted(size, physical_layout)`.
    #[track_caller]
    pub fn try_empty_permuted(
        shape: &[i64],
        physical_layout: &[i64],
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let shape = check_shape(shape, "empty_permuted")?;
        let strides = permuted_strides(&shape, physical_layout)?;
        Ok(filled(
            &shape,
            strides.into(),
            Scalar::Int(0),
            dtype.unwrap_or_else(get_default_dtype),
        ))
    }

    #[track_caller]
    pub fn empty_permuted(shape: &[i64], physical_layout: &[i64], dtype: Option<DType>) -> Tensor {
        ok(Tensor::try_empty_permuted(shape, physical_layout, dtype))
    }

    /// `torch.full_like(self, value, dtype, memory_format)` (preserve format by default);
    /// keeps self's names, as every `*_like` does.
    #[track_caller]
    pub fn try_full_like(
        &self,
        value: impl Into<Scalar>,
        dtype: Option<DType>,
        format: Option<MemoryFormat>,
    ) -> Result<Tensor> {
        let strides = self
            .view
            .like_strides(format.unwrap_or(MemoryFormat::Preserve))?;
        // On self's device, as PyTorch's `*_like` factories.
        let value = value.into();
        let t = crate::device::with_default_device(self.device(), || {
            filled(
                &self.view.shape,
                strides,
                value,
                dtype.unwrap_or(self.dtype()),
            )
        });
        Ok(t.with_dim_names(self.dim_names()))
    }

    #[track_caller]
    pub fn full_like(
        &self,
        value: impl Into<Scalar>,
        dtype: Option<DType>,
        format: Option<MemoryFormat>,
    ) -> Tensor {
        ok(self.try_full_like(value, dtype, format))
    }

    #[track_caller]
    pub fn try_zeros_like(
        &self,
        dtype: Option<DType>,
        format: Option<MemoryFormat>,
    ) -> Result<Tensor> {
        self.try_full_like(0, dtype, format)
    }
    #[track_caller]
    pub fn zeros_like(&self, dtype: Option<DType>, format: Option<MemoryFormat>) -> Tensor {
        ok(self.try_zeros_like(dtype, format))
    }
    #[track_caller]
    pub fn try_ones_like(
        &self,
        dtype: Option<DType>,
        format: Option<MemoryFormat>,
    ) -> Result<Tensor> {
        self.try_full_like(1, dtype, format)
    }
    #[track_caller]
    pub fn ones_like(&self, dtype: Option<DType>, format: Option<MemoryFormat>) -> Tensor {
        ok(self.try_ones_like(dtype, format))
    }
    #[track_caller]
    pub fn try_empty_like(
        &self,
        dtype: Option<DType>,
        format: Option<MemoryFormat>,
    ) -> Result<Tensor> {
        self.try_full_like(0, dtype, format)
    }
    #[track_caller]
    pub fn empty_like(&self, dtype: Option<DType>, format: Option<MemoryFormat>) -> Tensor {
        ok(self.try_empty_like(dtype, format))
    }

    /// `torch.arange(start, end, step)`: int64 when all three are ints, else the default dtype.
    #[track_caller]
    pub fn try_arange(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        step: impl Into<Scalar>,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let (start, end, step) = (start.into(), end.into(), step.into());
        let all_int = [start, end, step]
            .iter()
            .all(|s| !matches!(s, Scalar::Float(_)));
        let dtype = dtype.unwrap_or(if all_int {
            DType::I64
        } else {
            get_default_dtype()
        });
        let (s, e, st) = (start.as_f64(), end.as_f64(), step.as_f64());
        if st == 0.0 {
            return Err(Error::value("step must be nonzero"));
        }
        if !s.is_finite() || !e.is_finite() {
            return Err(Error::value(format!("unsupported range: {s} -> {e}")));
        }
        if (st > 0.0 && e < s) || (st < 0.0 && e > s) {
            return Err(Error::value(
                "upper bound and larger bound inconsistent with step sign",
            ));
        }
        let n = if all_int {
            let (si, ei, sti) = (start.as_i64(), end.as_i64(), step.as_i64());
            ((ei - si) + sti - sti.signum()) / sti
        } else {
            ((e - s) / st).ceil() as i64
        };
        let n = n.max(0) as usize;
        let values: Vec<Scalar> = if !dtype.is_float() {
            // Integer results accumulate in int64: start and step truncate first, as in ATen.
            (0..n)
                .map(|i| {
                    Scalar::Int(
                        start
                            .as_i64()
                            .wrapping_add((i as i64).wrapping_mul(step.as_i64())),
                    )
                })
                .collect()
        } else {
            (0..n).map(|i| Scalar::Float(s + i as f64 * st)).collect()
        };
        Ok(Tensor::from_scalars(&values, &[n], dtype))
    }

    #[track_caller]
    pub fn arange(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        step: impl Into<Scalar>,
        dtype: Option<DType>,
    ) -> Tensor {
        ok(Tensor::try_arange(start, end, step, dtype))
    }

    /// `torch.linspace(start, end, steps)`: symmetric evaluation from both ends, as ATen does.
    #[track_caller]
    pub fn try_linspace(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        steps: i64,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        if steps < 0 {
            return Err(Error::value(
                "linspace: number of steps must be non-negative",
            ));
        }
        let dtype = dtype.unwrap_or_else(get_default_dtype);
        let (s, e) = (start.into().as_f64(), end.into().as_f64());
        let n = steps as usize;
        let values: Vec<Scalar> = if dtype.is_float() {
            let step = if n > 1 {
                (e - s) / (n as f64 - 1.0)
            } else {
                0.0
            };
            let half = if n == 1 { 1 } else { n / 2 };
            (0..n)
                .map(|i| {
                    Scalar::Float(if i < half {
                        s + step * i as f64
                    } else {
                        e - step * (n - 1 - i) as f64
                    })
                })
                .collect()
        } else {
            let step = if n > 1 {
                (e - s) / (n as f64 - 1.0)
            } else {
                0.0
            };
            (0..n)
                .map(|i| Scalar::Int((s + step * i as f64) as i64))
                .collect()
        };
        Ok(Tensor::from_scalars(&values, &[n], dtype))
    }

    #[track_caller]
    pub fn linspace(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        steps: i64,
        dtype: Option<DType>,
    ) -> Tensor {
        ok(Tensor::try_linspace(start, end, steps, dtype))
    }

    /// `torch.logspace(start, end, steps, base)`.
    #[track_caller]
    pub fn try_logspace(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        steps: i64,
        base: f64,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let exps = Tensor::try_linspace(start, end, steps, Some(DType::F64))?.try_to_scalars()?;
        let dtype = dtype.unwrap_or_else(get_default_dtype);
        let values: Vec<Scalar> = exps
            .iter()
            .map(|x| Scalar::Float(base.powf(x.as_f64())))
            .collect();
        Ok(Tensor::from_scalars(&values, &[values.len()], dtype))
    }

    #[track_caller]
    pub fn logspace(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        steps: i64,
        base: f64,
        dtype: Option<DType>,
    ) -> Tensor {
        ok(Tensor::try_logspace(start, end, steps, base, dtype))
    }

    /// `torch.eye(n, m)`.
    #[track_caller]
    pub fn try_eye(n: i64, m: Option<i64>, dtype: Option<DType>) -> Result<Tensor> {
        let m = m.unwrap_or(n);
        if n < 0 || m < 0 {
            return Err(Error::value(format!(
                "eye: n and m must be non-negative, got {n} and {m}"
            )));
        }
        let dtype = dtype.unwrap_or_else(get_default_dtype);
        let (n, m) = (n as usize, m as usize);
        let values: Vec<Scalar> = (0..n * m)
            .map(|i| Scalar::Bool(i / m.max(1) == i % m.max(1)))
            .collect();
        Ok(Tensor::from_scalars(&values, &[n, m], dtype))
    }

    #[track_caller]
    pub fn eye(n: i64, m: Option<i64>, dtype: Option<DType>) -> Tensor {
        ok(Tensor::try_eye(n, m, dtype))
    }
}

/// A seeded pseudo-random generator (xoshiro256**), explicit so results are reproducible.
#[derive(Clone, Debug)]
pub struct Generator {
    s: [u64; 4],
}

impl Generator {
    pub fn new(seed: u64) -> Generator {
        // splitmix64 expands the seed into the state.
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Generator {
            s: [next(), next(), next(), next()],
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `torch.rand(shape, generator=self)`: uniform [0, 1).
    #[track_caller]
    pub fn rand(&mut self, shape: &[usize], dtype: Option<DType>) -> Tensor {
        let dtype = dtype.unwrap_or_else(get_default_dtype);
        let n: usize = shape.iter().product();
        let values: Vec<Scalar> = (0..n).map(|_| Scalar::Float(self.next_f64())).collect();
        Tensor::from_scalars(&values, shape, dtype)
    }

    /// `torch.randn`: standard normal (Box–Muller).
    #[track_caller]
    pub fn randn(&mut self, shape: &[usize], dtype: Option<DType>) -> Tensor {
        let dtype = dtype.unwrap_or_else(get_default_dtype);
        let n: usize = shape.iter().product();
        let values: Vec<Scalar> = (0..n)
            .map(|_| {
                let u1 = 1.0 - self.next_f64();
                let u2 = self.next_f64();
                Scalar::Float((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos())
            })
            .collect();
        Tensor::from_scalars(&values, shape, dtype)
    }

    /// `torch.randint(low, high, shape)`: int64 in [low, high).
    #[track_caller]
    pub fn try_randint(&mut self, low: i64, high: i64, shape: &[usize]) -> Result<Tensor> {
        if high <= low {
            return Err(Error::value(format!(
                "random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
            )));
        }
        let span = (high - low) as u64;
        let n: usize = shape.iter().product();
        let values: Vec<Scalar> = (0..n)
            .map(|_| Scalar::Int(low + (self.next_u64() % span) as i64))
            .collect();
        Ok(Tensor::from_scalars(&values, shape, DType::I64))
    }

    #[track_caller]
    pub fn randint(&mut self, low: i64, high: i64, shape: &[usize]) -> Tensor {
        ok(self.try_randint(low, high, shape))
    }
}
