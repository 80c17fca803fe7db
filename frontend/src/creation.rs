//! Factories: tensors from host data, constant fills, ranges, `*_like`, `empty_strided`,
//! `empty_permuted`, random tensors from an explicit seeded generator.

use crate::default_dtype::get_default_dtype;
use crate::lazy::LazyNode;
use crate::tensor::{Element, Tensor, ok};
use smelt_ir::Dims;
use smelt_ir::graph::Op;
use smelt_ir::view::{contiguous_strides, format_strides, permuted_strides};
use smelt_ir::{DType, Error, MemoryFormat, Result, Scalar, View};
use smelt_runtime::{Device, HostBuffer};

/// Nested host data (`[[1.0, 2.0], [3.0, 4.0]]`, `vec![…]`, a scalar) for [`Tensor::new`].
pub trait TensorData {
    /// Appends the shape below this level and the elements in row-major order.
    fn flatten_into(
        &self,
        shape: &mut Vec<usize>,
        depth: usize,
        out: &mut Vec<Scalar>,
    ) -> Result<()>;
    /// The dtype of the elements (`f32` → float32, `i64` → int64, `bool` → bool …).
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

/// The `n` host values `value(i)` of a factory that computes its elements on the host (`arange`,
/// `linspace`, `eye`), for a tensor of `shape` and `dtype`. Errors: a `value` error when the size
/// overflows, a `memory` error when the host cannot hold the values.
fn host_values(
    shape: &[usize],
    dtype: DType,
    value: impl Fn(usize) -> Scalar,
) -> Result<Vec<Scalar>> {
    smelt_ir::view::check_sizes(shape, dtype.size())?;
    let n: usize = shape.iter().product();
    let mut values = Vec::new();
    values.try_reserve_exact(n).map_err(|_| {
        Error::memory(format!(
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate {} bytes.",
            n.saturating_mul(dtype.size())
        ))
    })?;
    values.extend((0..n).map(value));
    Ok(values)
}

pub(crate) fn check_shape(shape: &[i64], op: &str) -> Result<Vec<usize>> {
    let sizes = shape
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
        .collect::<Result<Vec<usize>>>()?;
    smelt_ir::view::check_sizes(&sizes, 1)?;
    Ok(sizes)
}

/// A fresh tensor of `dtype` with `strides` (dense) whose elements are `value` (lazy), on the
/// default device.
#[track_caller]
fn filled(shape: &[usize], strides: Dims<isize>, value: Scalar, dtype: DType) -> Tensor {
    filled_on(
        shape,
        strides,
        value,
        dtype,
        crate::device::get_default_device(),
    )
}

/// [`filled`] on `device`.
#[track_caller]
pub(crate) fn filled_on(
    shape: &[usize],
    strides: Dims<isize>,
    value: Scalar,
    dtype: DType,
    device: Device,
) -> Tensor {
    let out = View::new(shape, strides, 0);
    let len = out
        .address_range()
        .map(|(_, hi)| hi as usize + 1)
        .unwrap_or(0);
    Tensor::from_node(LazyNode::pending_on(
        device,
        Op::Fill {
            value: value.cast(dtype),
        },
        dtype,
        len,
        out,
        vec![],
    ))
}

impl Tensor {
    /// `torch.tensor(data)`: a tensor from nested host data (arrays, `Vec`s, slices, a scalar) on
    /// the default device; the dtype is the element type's (`f32` → float32, `i64` → int64, `bool`
    /// → bool …; an unsuffixed integer literal is `i32`, so int32). Panics where
    /// [`Tensor::try_new`] returns an error.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let t = Tensor::new([[1.0f32, 2.0], [3.0, 4.0]]);
    /// assert_eq!((t.shape(), t.dtype()), (&[2, 2][..], DType::F32));
    /// assert_eq!(Tensor::new(vec![true, false]).dtype(), DType::Bool);
    /// ```
    #[track_caller]
    pub fn new<D: TensorData>(data: D) -> Tensor {
        ok(Tensor::try_new(data))
    }

    /// [`Tensor::new`] returning a `Result`: a `shape` error for ragged data (rows of different
    /// lengths), a `device` error when the default device is unusable.
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
    /// Panics where [`Tensor::try_from_vec`] returns an error.
    #[track_caller]
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Tensor {
        ok(Tensor::try_from_vec(data, shape))
    }

    /// [`Tensor::from_vec`] returning a `Result`: a `shape` error when `data.len()` is not the
    /// product of `shape`, a `device` error when the default device is unusable.
    #[track_caller]
    pub fn try_from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        let numel = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        if numel != Some(data.len()) {
            return Err(Error::shape(format!(
                "tensor: {} elements cannot have shape {}",
                data.len(),
                smelt_ir::view::fmt_list(shape)
            )));
        }
        Tensor::try_from_buffer(T::into_buffer(data), View::contiguous(shape))
    }

    /// A tensor of `dtype` and `shape` from row-major scalars (each cast to `dtype`), on the
    /// default device. Panics where [`Tensor::try_from_scalars`] returns an error.
    #[track_caller]
    pub fn from_scalars(values: &[Scalar], shape: &[usize], dtype: DType) -> Tensor {
        ok(Tensor::try_from_scalars(values, shape, dtype))
    }

    /// [`Tensor::from_scalars`] returning a `Result`: a `shape` error when `values.len()` is not
    /// the product of `shape`, a `device` error when the default device is unusable.
    #[track_caller]
    pub fn try_from_scalars(values: &[Scalar], shape: &[usize], dtype: DType) -> Result<Tensor> {
        let numel = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        if numel != Some(values.len()) {
            return Err(Error::shape(format!(
                "tensor: {} elements cannot have shape {}",
                values.len(),
                smelt_ir::view::fmt_list(shape)
            )));
        }
        let mut buffer = HostBuffer::from_scalars(dtype, values);
        if smelt_runtime::flush_denormal() && dtype.is_float() {
            // torch.tensor under set_flush_denormal(True): a denormal element reads as 0.
            for i in 0..buffer.len() {
                let x = buffer.get(i).as_f64();
                if x != 0.0 && x.abs() < dtype_min_normal(dtype) {
                    buffer.set(i, Scalar::Float(0.0f64.copysign(x)));
                }
            }
        }
        Tensor::try_from_buffer(buffer, View::contiguous(shape))
    }

    /// A 0-dim tensor holding `value` cast to `dtype` (`torch.tensor(value, dtype=dtype)`). Panics
    /// when the default device is unusable.
    #[track_caller]
    pub fn scalar(value: impl Into<Scalar>, dtype: DType) -> Tensor {
        Tensor::from_scalars(&[value.into()], &[], dtype)
    }

    /// `torch.full(size, fill_value, dtype=dtype)`: a contiguous tensor of `shape` whose elements
    /// are `value`. Without a dtype, bool fills give bool, integer fills int64, float fills the
    /// default dtype. Lazy: nothing is allocated until it is realized. Errors: a `value` error for
    /// a negative size.
    #[track_caller]
    pub fn try_full(
        shape: &[i64],
        value: impl Into<Scalar>,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let shape = check_shape(shape, "full")?;
        let value = value.into();
        let dtype = dtype.unwrap_or_else(|| value.wrapped_dtype(get_default_dtype()));
        smelt_ir::view::check_sizes(&shape, dtype.size())?;
        Ok(filled(&shape, contiguous_strides(&shape), value, dtype))
    }

    /// `torch.full(size, fill_value, dtype=dtype)`; panics where [`Tensor::try_full`] returns an
    /// error. [`Tensor::full_dtype`] takes the dtype without an `Option`.
    #[track_caller]
    pub fn full(shape: &[i64], value: impl Into<Scalar>, dtype: Option<DType>) -> Tensor {
        ok(Tensor::try_full(shape, value, dtype))
    }

    /// `torch.zeros(size, dtype=dtype)`: a contiguous tensor of zeros, of the default dtype without
    /// `dtype`. Errors: a `value` error for a negative size.
    #[track_caller]
    pub fn try_zeros(shape: &[i64], dtype: Option<DType>) -> Result<Tensor> {
        Tensor::try_full(shape, 0, Some(dtype.unwrap_or_else(get_default_dtype)))
    }

    /// `torch.zeros(size, dtype=dtype)`; panics where [`Tensor::try_zeros`] returns an error.
    /// [`Tensor::zeros_dtype`] takes the dtype without an `Option`.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let z = Tensor::zeros(&[2, 3], None); // the default dtype, float32
    /// assert_eq!((z.dtype(), z.numel()), (DType::F32, 6));
    /// ```
    #[track_caller]
    pub fn zeros(shape: &[i64], dtype: Option<DType>) -> Tensor {
        ok(Tensor::try_zeros(shape, dtype))
    }

    /// `torch.ones(size, dtype=dtype)`: a contiguous tensor of ones, of the default dtype without
    /// `dtype`. Errors: a `value` error for a negative size.
    #[track_caller]
    pub fn try_ones(shape: &[i64], dtype: Option<DType>) -> Result<Tensor> {
        Tensor::try_full(shape, 1, Some(dtype.unwrap_or_else(get_default_dtype)))
    }

    /// `torch.ones(size, dtype=dtype)`; panics where [`Tensor::try_ones`] returns an error.
    /// [`Tensor::ones_dtype`] takes the dtype without an `Option`.
    #[track_caller]
    pub fn ones(shape: &[i64], dtype: Option<DType>) -> Tensor {
        ok(Tensor::try_ones(shape, dtype))
    }

    /// `torch.empty(size, dtype=dtype)`: a contiguous tensor whose values PyTorch leaves
    /// unspecified (smelt gives zeros). Errors: a `value` error for a negative size.
    #[track_caller]
    pub fn try_empty(shape: &[i64], dtype: Option<DType>) -> Result<Tensor> {
        Tensor::try_zeros(shape, dtype)
    }

    /// `torch.empty(size, dtype=dtype)`; panics where [`Tensor::try_empty`] returns an error.
    #[track_caller]
    pub fn empty(shape: &[i64], dtype: Option<DType>) -> Tensor {
        ok(Tensor::try_empty(shape, dtype))
    }

    /// `torch.empty(size, dtype=dtype, memory_format=format)`: [`Tensor::try_empty`] laid out in
    /// `format`. Errors: a `value` error for a negative size or a format needing another rank
    /// (`ChannelsLast` needs 4 dims).
    #[track_caller]
    pub fn try_empty_format(
        shape: &[i64],
        dtype: Option<DType>,
        format: MemoryFormat,
    ) -> Result<Tensor> {
        let shape = check_shape(shape, "empty")?;
        let strides = format_strides(&shape, format)?;
        let dtype = dtype.unwrap_or_else(get_default_dtype);
        smelt_ir::view::check_sizes(&shape, dtype.size())?;
        Ok(filled(&shape, strides, Scalar::Int(0), dtype))
    }

    /// `torch.empty_strided(size, stride, dtype=dtype)`: a tensor with exactly these strides over a
    /// fresh storage (filled with zeros). Errors: a `value` error for a negative size or stride, a
    /// `shape` error when `strides` and `shape` differ in length.
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
        let dtype = dtype.unwrap_or_else(get_default_dtype);
        // The storage holds 1 + Σ (size − 1)·stride elements (none for an empty tensor).
        let storage = if shape.contains(&0) {
            Some(0)
        } else {
            shape.iter().zip(strides).try_fold(1usize, |n, (&d, &s)| {
                ((d - 1) as u64)
                    .checked_mul(s as u64)
                    .and_then(|x| usize::try_from(x).ok())
                    .and_then(|x| n.checked_add(x))
            })
        };
        if storage
            .and_then(|n| n.checked_mul(dtype.size()))
            .is_none_or(|b| b > i64::MAX as usize)
        {
            return Err(Error::value(format!(
                "empty_strided: Storage size calculation overflowed with sizes={} and strides={}",
                smelt_ir::view::fmt_list(&shape),
                smelt_ir::view::fmt_list(strides)
            )));
        }
        let strides: Vec<isize> = strides.iter().map(|&s| s as isize).collect();
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

    /// `torch.empty_strided(size, stride, dtype=dtype)`; panics where
    /// [`Tensor::try_empty_strided`] returns an error.
    #[track_caller]
    pub fn empty_strided(shape: &[i64], strides: &[i64], dtype: Option<DType>) -> Tensor {
        ok(Tensor::try_empty_strided(shape, strides, dtype))
    }

    /// `torch.empty_permuted(size, physical_layout, dtype=dtype)`: a tensor whose dims are laid out
    /// in memory in the order `physical_layout` gives (outermost first). Errors: a `value` error
    /// for a negative size or a repeated dim, a `shape` error when `physical_layout` does not list
    /// every dim, an `index` error for a dim out of range.
    #[track_caller]
    pub fn try_empty_permuted(
        shape: &[i64],
        physical_layout: &[i64],
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        let shape = check_shape(shape, "empty_permuted")?;
        let strides = permuted_strides(&shape, physical_layout)?;
        let dtype = dtype.unwrap_or_else(get_default_dtype);
        smelt_ir::view::check_sizes(&shape, dtype.size())?;
        Ok(filled(&shape, strides.into(), Scalar::Int(0), dtype))
    }

    /// `torch.empty_permuted(size, physical_layout, dtype=dtype)`; panics where
    /// [`Tensor::try_empty_permuted`] returns an error.
    #[track_caller]
    pub fn empty_permuted(shape: &[i64], physical_layout: &[i64], dtype: Option<DType>) -> Tensor {
        ok(Tensor::try_empty_permuted(shape, physical_layout, dtype))
    }

    /// `torch.full_like(self, fill_value, dtype=dtype, memory_format=format)`: a tensor of
    /// `self`'s shape, device and dim names filled with `value`; `self`'s dtype without `dtype`,
    /// its strides (when dense) without `format`. Errors: a `value` error for a format needing
    /// another rank.
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
        let t = filled_on(
            &self.view.shape,
            strides,
            value,
            dtype.unwrap_or(self.dtype()),
            self.device(),
        );
        Ok(t.with_dim_names(self.dim_names()))
    }

    /// `torch.full_like(self, fill_value, dtype=dtype, memory_format=format)`; panics where
    /// [`Tensor::try_full_like`] returns an error.
    #[track_caller]
    pub fn full_like(
        &self,
        value: impl Into<Scalar>,
        dtype: Option<DType>,
        format: Option<MemoryFormat>,
    ) -> Tensor {
        ok(self.try_full_like(value, dtype, format))
    }

    /// `torch.zeros_like(self, dtype=dtype, memory_format=format)`: [`Tensor::try_full_like`] with
    /// zeros.
    #[track_caller]
    pub fn try_zeros_like(
        &self,
        dtype: Option<DType>,
        format: Option<MemoryFormat>,
    ) -> Result<Tensor> {
        self.try_full_like(0, dtype, format)
    }
    /// `torch.zeros_like(self, dtype=dtype, memory_format=format)`; panics where
    /// [`Tensor::try_zeros_like`] returns an error (`zeros_like(None, None)` never does).
    #[track_caller]
    pub fn zeros_like(&self, dtype: Option<DType>, format: Option<MemoryFormat>) -> Tensor {
        ok(self.try_zeros_like(dtype, format))
    }
    /// `torch.ones_like(self, dtype=dtype, memory_format=format)`: [`Tensor::try_full_like`] with
    /// ones.
    #[track_caller]
    pub fn try_ones_like(
        &self,
        dtype: Option<DType>,
        format: Option<MemoryFormat>,
    ) -> Result<Tensor> {
        self.try_full_like(1, dtype, format)
    }
    /// `torch.ones_like(self, dtype=dtype, memory_format=format)`; panics where
    /// [`Tensor::try_ones_like`] returns an error (`ones_like(None, None)` never does).
    #[track_caller]
    pub fn ones_like(&self, dtype: Option<DType>, format: Option<MemoryFormat>) -> Tensor {
        ok(self.try_ones_like(dtype, format))
    }
    /// `torch.empty_like(self, dtype=dtype, memory_format=format)`: [`Tensor::try_zeros_like`]
    /// (PyTorch leaves the values unspecified; smelt gives zeros).
    #[track_caller]
    pub fn try_empty_like(
        &self,
        dtype: Option<DType>,
        format: Option<MemoryFormat>,
    ) -> Result<Tensor> {
        self.try_full_like(0, dtype, format)
    }
    /// `torch.empty_like(self, dtype=dtype, memory_format=format)`; panics where
    /// [`Tensor::try_empty_like`] returns an error.
    #[track_caller]
    pub fn empty_like(&self, dtype: Option<DType>, format: Option<MemoryFormat>) -> Tensor {
        ok(self.try_empty_like(dtype, format))
    }

    /// `torch.arange(start, end, step, dtype=dtype)`: the values `start, start + step, …` short of
    /// `end`; int64 when all three are integers, else the default dtype, without `dtype`. Errors: a
    /// `value` error for a zero step, a non-finite bound, or a step pointing away from `end`.
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
            // In i128: no range of int64s overflows the count.
            let (si, ei, sti) = (
                i128::from(start.as_i64()),
                i128::from(end.as_i64()),
                i128::from(step.as_i64()),
            );
            ((ei - si) + sti - sti.signum()) / sti
        } else {
            ((e - s) / st).ceil().min(i128::MAX as f64) as i128
        };
        let n = usize::try_from(n.max(0)).unwrap_or(usize::MAX);
        let values = if !dtype.is_float() {
            // Integer results accumulate in int64: start and step truncate first, as in ATen.
            host_values(&[n], dtype, |i| {
                Scalar::Int(
                    start
                        .as_i64()
                        .wrapping_add((i as i64).wrapping_mul(step.as_i64())),
                )
            })?
        } else {
            host_values(&[n], dtype, |i| Scalar::Float(s + i as f64 * st))?
        };
        Tensor::try_from_scalars(&values, &[n], dtype)
    }

    /// `torch.arange(start, end, step, dtype=dtype)`; panics where [`Tensor::try_arange`] returns
    /// an error. [`Tensor::arange_dtype`] takes the dtype without an `Option`.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// assert_eq!(Tensor::arange(0, 5, 2, None).to_vec::<i64>(), [0, 2, 4]);
    /// assert_eq!(Tensor::arange(0.0, 1.0, 0.5, None).dtype(), DType::F32);
    /// ```
    #[track_caller]
    pub fn arange(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        step: impl Into<Scalar>,
        dtype: Option<DType>,
    ) -> Tensor {
        ok(Tensor::try_arange(start, end, step, dtype))
    }

    /// `torch.linspace(start, end, steps, dtype=dtype)`: `steps` evenly spaced values from `start`
    /// to `end` inclusive (evaluated from both ends, as ATen does), of the default dtype without
    /// `dtype`. Errors: a `value` error for a negative `steps`.
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
        let step = if n > 1 {
            (e - s) / (n as f64 - 1.0)
        } else {
            0.0
        };
        let values = if dtype.is_float() {
            let half = if n == 1 { 1 } else { n / 2 };
            host_values(&[n], dtype, |i| {
                Scalar::Float(if i < half {
                    s + step * i as f64
                } else {
                    e - step * (n - 1 - i) as f64
                })
            })?
        } else {
            host_values(&[n], dtype, |i| Scalar::Int((s + step * i as f64) as i64))?
        };
        Tensor::try_from_scalars(&values, &[n], dtype)
    }

    /// `torch.linspace(start, end, steps, dtype=dtype)`; panics where [`Tensor::try_linspace`]
    /// returns an error.
    #[track_caller]
    pub fn linspace(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        steps: i64,
        dtype: Option<DType>,
    ) -> Tensor {
        ok(Tensor::try_linspace(start, end, steps, dtype))
    }

    /// `torch.logspace(start, end, steps, base, dtype=dtype)`: `base` to the power of each value of
    /// [`Tensor::linspace`]`(start, end, steps)`. Errors: a `value` error for a negative `steps`.
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
        Tensor::try_from_scalars(&values, &[values.len()], dtype)
    }

    /// `torch.logspace(start, end, steps, base, dtype=dtype)`; panics where
    /// [`Tensor::try_logspace`] returns an error.
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

    /// `torch.eye(n, m, dtype=dtype)`: an `n × m` (`n × n` without `m`) tensor with ones on the
    /// diagonal and zeros elsewhere. Errors: a `value` error for a negative `n` or `m`.
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
        let values = host_values(&[n, m], dtype, |i| {
            Scalar::Bool(i / m.max(1) == i % m.max(1))
        })?;
        Tensor::try_from_scalars(&values, &[n, m], dtype)
    }

    /// `torch.eye(n, m, dtype=dtype)`; panics where [`Tensor::try_eye`] returns an error.
    #[track_caller]
    pub fn eye(n: i64, m: Option<i64>, dtype: Option<DType>) -> Tensor {
        ok(Tensor::try_eye(n, m, dtype))
    }
}

/// The smallest positive normal value of a float dtype.
fn dtype_min_normal(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 6.103_515_625e-5,
        DType::BF16 | DType::F32 => f64::from(f32::MIN_POSITIVE),
        DType::F64 => f64::MIN_POSITIVE,
        DType::Bool | DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => 0.0,
    }
}
