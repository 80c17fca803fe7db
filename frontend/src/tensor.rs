//! `Tensor`: a cheap handle `{storage, view, names}` onto a lazily computed storage, its
//! metadata accessors (all PyTorch-observable), and materialisation.

use crate::lazy::{LazyNode, Storage, realize_nodes};
use crate::names::{DimNames, NameCell};
use smelt_ir::Dims;
use smelt_ir::graph::Op;
use smelt_ir::{DType, Error, LibraryOp, MemoryFormat, Result, Scalar, View};
use smelt_runtime::{Buffer, Device, HostBuffer, Target};
use std::fmt;
use std::sync::Arc;

/// A tensor: a cheap handle `{storage, view, names}` onto a lazily computed storage, with
/// PyTorch's semantics. Ops record graph nodes and return at once; values are computed when
/// read ([`Tensor::to_vec`], [`Tensor::item`], printing) or on [`Tensor::realize`].
///
/// Cloning the handle copies no data and yields the same tensor (an in-place op on one is seen
/// through both; [`Tensor::deep_clone`] is PyTorch's `clone()`); views share storage but have
/// their own names.
#[derive(Clone)]
pub struct Tensor {
    pub(crate) storage: Arc<Storage>,
    pub(crate) view: View,
    pub(crate) names: NameCell,
    /// The indices and values of a sparse COO tensor (`None`: strided). A sparse tensor's
    /// `storage` and `view` are placeholders no op reads (`crate::sparse`).
    pub(crate) sparse: Option<Arc<crate::sparse::SparseCoo>>,
}

/// Unwraps a `try_` result in a plain op: panics with the error's message at the caller's line.
#[track_caller]
pub(crate) fn ok<T>(r: Result<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

impl Tensor {
    /// A tensor viewing the whole output of a fresh node.
    #[track_caller]
    pub(crate) fn from_node(node: Arc<LazyNode>) -> Tensor {
        let view = node.out.clone();
        Tensor {
            storage: Storage::new(node),
            view,
            names: NameCell::default(),
            sparse: None,
        }
    }

    /// A tensor of `dtype` holding host `buffer` with view `view`, on the thread's default
    /// device (the values are copied there when it is not the host).
    #[track_caller]
    pub(crate) fn try_from_buffer(buffer: HostBuffer, view: View) -> Result<Tensor> {
        let dtype = buffer.dtype();
        Tensor::try_from_buffer_on(buffer, dtype, view, crate::device::get_default_device())
    }

    /// [`Tensor::try_from_buffer`] for a storage of `dtype` (a complex dtype's buffer holds its
    /// real parts).
    #[track_caller]
    pub(crate) fn try_from_typed_buffer(
        buffer: HostBuffer,
        dtype: DType,
        view: View,
    ) -> Result<Tensor> {
        Tensor::try_from_buffer_on(buffer, dtype, view, crate::device::get_default_device())
    }

    /// [`Tensor::try_from_typed_buffer`] on `device`.
    #[track_caller]
    pub(crate) fn try_from_buffer_on(
        buffer: HostBuffer,
        dtype: DType,
        view: View,
        device: Device,
    ) -> Result<Tensor> {
        let buffer = Buffer::from(buffer).to_device(device)?;
        Ok(Tensor::from_node(LazyNode::realized(buffer, dtype, view)))
    }

    /// A new, unnamed handle on the same storage with another view (a view op sets the
    /// result's names itself with [`Tensor::with_dim_names`]).
    #[track_caller]
    pub(crate) fn with_view(&self, view: View) -> Tensor {
        Tensor {
            storage: self.storage.clone(),
            view,
            names: NameCell::default(),
            sparse: None,
        }
    }

    /// This handle's storage and view under new names (a new tensor object). A handle whose
    /// name cell no other handle shares (a fresh op result) keeps its cell: no one can tell.
    #[track_caller]
    #[inline]
    pub(crate) fn with_dim_names(mut self, names: Option<DimNames>) -> Tensor {
        let Err(names) = self.names.set_unshared(names) else {
            return self;
        };
        Tensor {
            storage: self.storage,
            view: self.view,
            names: NameCell::new(names),
            sparse: self.sparse,
        }
    }

    /// A new handle with the same view and names (an alias, PyTorch's `alias()`); of a sparse
    /// tensor, a new handle holding the same indices and values.
    #[track_caller]
    pub(crate) fn alias(&self) -> Tensor {
        if let Some(coo) = self.coo() {
            return self.with_coo(coo.indices.clone(), coo.values.clone(), coo.coalesced);
        }
        self.with_view(self.view.clone())
            .with_dim_names(self.dim_names())
    }

    /// What a consumer reads: the storage's current version through this tensor's view.
    pub(crate) fn source(&self) -> (Arc<LazyNode>, View) {
        (self.storage.current(), self.view.clone())
    }

    /// A computing op's output: a fresh storage of `shape` with `strides` (dense), produced by
    /// `op` from `inputs`. Errors: a `value` error when the storage's size in bytes overflows
    /// an int64 (PyTorch's "Storage size calculation overflowed"), whatever the op.
    #[track_caller]
    pub(crate) fn computed(
        op: Op,
        dtype: DType,
        shape: &[usize],
        strides: Dims<isize>,
        inputs: Vec<(Arc<LazyNode>, View)>,
    ) -> Result<Tensor> {
        Tensor::computed_into(op, dtype, View::new(shape, strides, 0), inputs)
    }

    /// [`Tensor::computed`] writing through `out` (dense, offset 0), a view the caller built.
    #[track_caller]
    pub(crate) fn computed_into(
        op: Op,
        dtype: DType,
        out: View,
        inputs: impl Into<crate::lazy::Inputs>,
    ) -> Result<Tensor> {
        smelt_ir::view::check_sizes(&out.shape, dtype.size())?;
        Ok(Tensor::computed_unchecked(op, dtype, out, inputs))
    }

    /// [`Tensor::computed_into`] for sizes already checked.
    #[track_caller]
    pub(crate) fn computed_unchecked(
        op: Op,
        dtype: DType,
        out: View,
        inputs: impl Into<crate::lazy::Inputs>,
    ) -> Tensor {
        let len = out
            .address_range()
            .map(|(_, hi)| hi as usize + 1)
            .unwrap_or(0);
        Tensor::from_node(LazyNode::pending(op, dtype, len, out, inputs))
    }

    /// A library op's output: a fresh contiguous storage of `shape` that the op writes
    /// through `out`, a view of the same buffer in the op's own dim order (e.g. `[B, M, N]`
    /// for a matmul whose result drops the size-1 dims of vector operands). Errors as
    /// [`Tensor::computed`]'s.
    #[track_caller]
    pub(crate) fn library(
        op: LibraryOp,
        dtype: DType,
        shape: &[usize],
        out: View,
        inputs: Vec<(Arc<LazyNode>, View)>,
    ) -> Result<Tensor> {
        smelt_ir::view::check_sizes(shape, dtype.size())?;
        let view = View::contiguous(shape);
        debug_assert_eq!(
            out.numel(),
            view.numel(),
            "invariant: a library output view covers the result"
        );
        let node = LazyNode::pending(Op::Library(op), dtype, view.numel(), out, inputs);
        Ok(Tensor {
            storage: Storage::new(node),
            view,
            names: NameCell::default(),
            sparse: None,
        })
    }

    /// A tensor computed on the host by an op whose output shape depends on data (a graph
    /// break), placed on `device` (the op's input's: a device tensor makes a round trip
    /// through the host): the dumps show the node as an input with `# graph break: <op>`.
    #[track_caller]
    pub(crate) fn graph_break(
        buffer: HostBuffer,
        view: View,
        note: &'static str,
        device: Device,
    ) -> Result<Tensor> {
        let dtype = buffer.dtype();
        let buffer = Buffer::from(buffer).to_device(device)?;
        Ok(Tensor::from_node(LazyNode::realized_with_note(
            buffer,
            dtype,
            view,
            Some(note),
        )))
    }

    // ---- metadata -------------------------------------------------------------------------

    /// The element type (`tensor.dtype`): the storage's, or the one this view reads it as
    /// (`x.real` of a complex64 tensor is a float32 view of its storage).
    pub fn dtype(&self) -> DType {
        self.view.read.dtype(self.storage.dtype)
    }
    /// Is this a conjugate view (`tensor.is_conj()`): a complex tensor whose reads conjugate
    /// the values its storage holds ([`Tensor::conj`])?
    pub fn is_conj(&self) -> bool {
        self.view.read.conj
    }
    /// Does this view negate the values it reads (`tensor.is_neg()`: `imag` of a conjugate
    /// view)?
    pub fn is_neg(&self) -> bool {
        self.view.read.neg
    }
    /// Where the storage lives (`tensor.device`).
    pub fn device(&self) -> Device {
        self.storage.device
    }
    /// The size of each dim (`tensor.shape`).
    pub fn shape(&self) -> &[usize] {
        &self.view.shape
    }
    /// `size()`, as PyTorch spells it.
    pub fn size(&self) -> Vec<usize> {
        self.view.shape.to_vec()
    }
    /// Elements to step in storage per index of each dim (`tensor.stride()`; all zeros for a
    /// sparse tensor, as PyTorch 2.15 answers).
    pub fn stride(&self) -> Vec<isize> {
        self.view.strides.to_vec()
    }
    /// Where element `[0, 0, …]` sits in the storage (`tensor.storage_offset()`; 0 for a sparse
    /// tensor).
    pub fn storage_offset(&self) -> usize {
        self.view.offset
    }
    /// Shape, strides and offset together: the view this handle reads its storage through.
    pub fn view_meta(&self) -> &View {
        &self.view
    }
    /// The number of dims (`tensor.dim()`).
    pub fn dim(&self) -> usize {
        self.view.ndim()
    }
    /// The number of dims (`tensor.ndim`).
    pub fn ndim(&self) -> usize {
        self.view.ndim()
    }
    /// The number of elements (`tensor.numel()`).
    pub fn numel(&self) -> usize {
        self.view.numel()
    }
    /// Is the tensor row-major contiguous (`tensor.is_contiguous()`; size-1 dims' strides do not
    /// count)? A sparse tensor never is, as PyTorch 2.15 answers.
    pub fn is_contiguous(&self) -> bool {
        !self.is_sparse() && self.view.is_contiguous()
    }
    /// `tensor.is_contiguous(memory_format=format)` (false for a sparse tensor).
    pub fn is_contiguous_as(&self, format: MemoryFormat) -> bool {
        !self.is_sparse() && self.view.is_contiguous_as(format)
    }
    /// One name per dim (`None` for an unnamed dim); all `None` for an unnamed tensor.
    pub fn names(&self) -> Vec<Option<String>> {
        match self.names.get() {
            Some(n) => n.to_vec(),
            None => vec![None; self.ndim()],
        }
    }
    /// Does any dim have a name?
    pub fn has_names(&self) -> bool {
        self.names.is_named()
    }
    /// The stored names: `None` for an unnamed tensor.
    pub(crate) fn dim_names(&self) -> Option<DimNames> {
        self.names.get()
    }
    /// Does the view cover a dense block of storage, each element once, in some dim order?
    /// (Never for a sparse tensor.)
    pub fn is_non_overlapping_and_dense(&self) -> bool {
        !self.is_sparse() && self.view.is_non_overlapping_and_dense()
    }
    /// Number of elements of the underlying storage, counted in this tensor's dtype (a float
    /// view of a complex storage counts two per complex element); 0 for a sparse tensor, which
    /// has none of its own: its data are its indices and values.
    pub fn storage_len(&self) -> usize {
        if self.is_sparse() {
            0
        } else {
            self.view.read.len(self.storage.len)
        }
    }
    /// Do the two tensors use the same storage allocation? A sparse tensor uses two, its
    /// indices' and its values'; two tensors share when a storage of one is a storage of the
    /// other.
    pub fn shares_storage(&self, other: &Tensor) -> bool {
        let theirs = other.data_storages();
        self.data_storages()
            .iter()
            .any(|s| theirs.iter().any(|o| Arc::ptr_eq(s, o)))
    }
    /// Is this the very same handle geometry on the same storage (PyTorch's `is`, as far as a
    /// value type can tell)? Two sparse handles are the same when they hold the same parts.
    pub fn is_same(&self, other: &Tensor) -> bool {
        match (&self.sparse, &other.sparse) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => self.shares_storage(other) && self.view == other.view,
            (Some(_), None) | (None, Some(_)) => false,
        }
    }

    // ---- materialisation ------------------------------------------------------------------

    /// Computes this tensor's storage now, with everything it depends on, and returns `self`.
    /// Errors: a `device` error when the tensor's device is unusable, a `compile` error when
    /// code generation fails.
    #[track_caller]
    pub fn try_realize(&self) -> Result<&Tensor> {
        realize_nodes(&self.data_nodes())?;
        Ok(self)
    }

    /// Computes this tensor now ([`Tensor::try_realize`], panicking with its error). Reading values
    /// realizes on its own; call this to control where the work happens, or [`realize`] to compute
    /// several tensors in one graph.
    #[track_caller]
    pub fn realize(&self) -> &Tensor {
        ok(self.try_realize())
    }

    /// Is the storage's current version computed (for a sparse tensor: its indices and
    /// values)?
    pub fn is_realized(&self) -> bool {
        self.data_nodes().iter().all(|n| n.buffer().is_some())
    }

    /// The storage's buffer, computed now if needed (on the storage's device). A sparse tensor
    /// has none: a `layout` error.
    pub(crate) fn realized_buffer(&self) -> Result<Buffer> {
        crate::sparse::refuse_sparse("data_ptr", [self])?;
        let node = self.storage.current();
        realize_nodes(std::slice::from_ref(&node))?;
        node.buffer()
            .ok_or_else(|| Error::device("realisation produced no buffer"))
    }

    /// All elements in logical row-major order as [`Scalar`]s, realizing first (a sparse
    /// tensor's elements are those of [`Tensor::try_to_dense`]). Errors: those of
    /// [`Tensor::try_realize`].
    pub fn try_to_scalars(&self) -> Result<Vec<Scalar>> {
        if self.is_sparse() {
            return self.try_to_dense()?.try_to_scalars();
        }
        let mut out = Vec::with_capacity(self.numel());
        let buffer = self.realized_buffer()?;
        let Some((lo, hi)) = self.view.address_range() else {
            return Ok(out);
        };
        // Only the elements this view reaches leave a device (a complex element is two parts).
        let dtype = self.dtype();
        let parts = dtype.parts() as isize;
        let (lo, hi) = (lo * parts, hi * parts + parts - 1);
        let (buf, base) = buffer.to_host_window(lo as usize, (hi - lo) as usize + 1)?;
        let read = self.view.read;
        let value = |address: isize| {
            let at = (address * parts) as usize - base;
            let v = if parts == 2 {
                Scalar::Complex(buf.get(at).as_f64(), buf.get(at + 1).as_f64())
            } else {
                buf.get(at)
            };
            match v {
                Scalar::Complex(re, im) => {
                    let im = if read.conj { -im } else { im };
                    if read.neg {
                        Scalar::Complex(-re, -im)
                    } else {
                        Scalar::Complex(re, im)
                    }
                }
                Scalar::Float(x) if read.neg => Scalar::Float(-x),
                v @ (Scalar::Bool(_) | Scalar::Int(_) | Scalar::Float(_)) => v,
            }
        };
        let shape = &self.view.shape;
        let mut idx = vec![0usize; shape.len()];
        loop {
            out.push(value(self.view.address(&idx)));
            let mut d = shape.len();
            loop {
                if d == 0 {
                    return Ok(out);
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    }

    /// All elements in logical row-major order as [`Scalar`]s; panics where
    /// [`Tensor::try_to_scalars`] returns an error.
    #[track_caller]
    pub fn to_scalars(&self) -> Vec<Scalar> {
        ok(self.try_to_scalars())
    }

    /// All elements in logical row-major order converted to `T` (as PyTorch's `.to(dtype)`
    /// converts: floats to integers truncate), realizing first (`tensor.tolist()`, flattened).
    /// Panics where [`Tensor::try_to_scalars`] returns an error.
    ///
    /// ```
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([[1, 2], [3, 4]]).t();
    /// assert_eq!(x.to_vec::<i64>(), [1, 3, 2, 4]);
    /// assert_eq!(x.to_vec::<f32>(), [1.0, 3.0, 2.0, 4.0]);
    /// ```
    #[track_caller]
    pub fn to_vec<T: Element>(&self) -> Vec<T> {
        self.to_scalars().into_iter().map(T::from_scalar).collect()
    }

    /// `tensor.item()`: the value of a one-element tensor. Errors: a `value` error for any other
    /// number of elements, those of [`Tensor::try_realize`].
    pub fn try_item(&self) -> Result<Scalar> {
        if self.numel() != 1 {
            return Err(Error::value(format!(
                "a Tensor with {} elements cannot be converted to Scalar",
                self.numel()
            )));
        }
        Ok(self.try_to_scalars()?[0])
    }

    /// `tensor.item()`; panics where [`Tensor::try_item`] returns an error.
    #[track_caller]
    pub fn item(&self) -> Scalar {
        ok(self.try_item())
    }
}

/// Realizes several tensors in one graph, fused or not ([`Mode`](crate::Mode)), on a given
/// [`Target`] (benchmarks and checks; [`realize`] uses the default pipeline and the target of
/// the tensors' device). The target must run where the tensors live: the host backends for host
/// tensors. Errors: as [`realize`].
pub fn realize_with(tensors: &[&Tensor], mode: crate::explain::Mode, target: Target) -> Result<()> {
    let nodes: Vec<_> = tensors.iter().flat_map(|t| t.data_nodes()).collect();
    crate::lazy::realize_nodes_with(&nodes, mode == crate::explain::Mode::Unfused, Some(target))
}

/// Realizes several tensors in one graph: one compilation, shared work computed once, and
/// outputs over the same iteration space stored by the same kernel. Errors: a `device` error
/// when the tensors' device is unusable, a `compile` error when code generation fails.
///
/// ```
/// # use smelt_frontend as smelt;
/// use smelt::prelude::*;
/// let x = Tensor::new([1.0f32, 2.0, 3.0]);
/// let (s, m) = (x.exp().sum_all(), x.exp().amax_dim(0));
/// smelt::realize(&[&s, &m]).unwrap();
/// assert!(s.is_realized() && m.is_realized());
/// ```
pub fn realize(tensors: &[&Tensor]) -> Result<()> {
    let nodes: Vec<_> = tensors.iter().flat_map(|t| t.data_nodes()).collect();
    realize_nodes(&nodes)
}

/// Host element types a tensor can be built from or read into: `bool`, `u8`, `i8`, `i16`,
/// `i32`, `i64`, `half::f16`, `half::bf16`, `f32`, `f64`, [`Complex32`](crate::Complex32),
/// [`Complex64`](crate::Complex64) (reading a complex tensor into a real type keeps the real
/// part, as a cast does).
pub trait Element: Copy {
    /// The dtype of tensors built from this type.
    const DTYPE: DType;
    /// The value as a [`Scalar`].
    fn to_scalar(self) -> Scalar;
    /// The value of `s` converted to this type (as a cast to [`Element::DTYPE`] would).
    fn from_scalar(s: Scalar) -> Self;
    /// A host buffer of [`Self::DTYPE`] holding `data`: the built-in element types adopt the
    /// vector's allocation (no copy); this default converts element by element.
    fn into_buffer(data: Vec<Self>) -> HostBuffer {
        let values: Vec<Scalar> = data.into_iter().map(Self::to_scalar).collect();
        HostBuffer::from_scalars(Self::DTYPE, &values)
    }
}

macro_rules! element {
    ($t:ty, $dt:expr, $to:expr, $from:expr) => {
        impl Element for $t {
            const DTYPE: DType = $dt;
            fn to_scalar(self) -> Scalar {
                let f: fn($t) -> Scalar = $to;
                f(self)
            }
            fn from_scalar(s: Scalar) -> Self {
                let f: fn(Scalar) -> $t = $from;
                f(s.cast($dt))
            }
            fn into_buffer(data: Vec<$t>) -> HostBuffer {
                smelt_runtime::HostElement::wrap(smelt_runtime::memory::Memory::adopt(data))
            }
        }
    };
}

element!(bool, DType::Bool, Scalar::Bool, |s| s.as_bool());
element!(u8, DType::U8, |v| Scalar::Int(v as i64), |s| s.as_i64()
    as u8);
element!(i8, DType::I8, |v| Scalar::Int(v as i64), |s| s.as_i64()
    as i8);
element!(i16, DType::I16, |v| Scalar::Int(v as i64), |s| s.as_i64()
    as i16);
element!(i32, DType::I32, |v| Scalar::Int(v as i64), |s| s.as_i64()
    as i32);
element!(i64, DType::I64, Scalar::Int, |s| s.as_i64());
element!(half::f16, DType::F16, |v| Scalar::Float(v.to_f64()), |s| {
    smelt_ir::scalar::to_f16(s.as_f64())
});
element!(
    half::bf16,
    DType::BF16,
    |v| Scalar::Float(v.to_f64()),
    |s| smelt_ir::scalar::to_bf16(s.as_f64())
);
element!(f32, DType::F32, |v| Scalar::Float(v as f64), |s| s.as_f64()
    as f32);
element!(f64, DType::F64, Scalar::Float, |s| s.as_f64());

/// Complex host types: the buffer holds the parts, real then imaginary for each element.
macro_rules! complex_element {
    ($t:ty, $part:ty, $dt:expr) => {
        impl Element for $t {
            const DTYPE: DType = $dt;
            fn to_scalar(self) -> Scalar {
                Scalar::Complex(f64::from(self.re), f64::from(self.im))
            }
            fn from_scalar(s: Scalar) -> Self {
                let (re, im) = s.cast($dt).as_complex();
                <$t>::new(re as $part, im as $part)
            }
            fn into_buffer(data: Vec<$t>) -> HostBuffer {
                let parts: Vec<$part> = data.iter().flat_map(|z| [z.re, z.im]).collect();
                smelt_runtime::HostElement::wrap(smelt_runtime::memory::Memory::adopt(parts))
            }
        }
    };
}
complex_element!(num_complex::Complex32, f32, DType::C64);
complex_element!(num_complex::Complex64, f64, DType::C128);

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = match self.dim_names() {
            Some(n) => format!(" names={}", crate::names::fmt_names(&n)),
            None => String::new(),
        };
        if let Some(coo) = self.coo() {
            return write!(
                f,
                "Tensor(sparse_coo {} {} indices={:?} values={:?} coalesced={})",
                self.dtype(),
                smelt_ir::view::fmt_list(self.shape()),
                coo.indices,
                coo.values,
                coo.coalesced
            );
        }
        write!(
            f,
            "Tensor({} {}{names} {})",
            self.dtype(),
            self.view,
            if self.is_realized() {
                "realized"
            } else {
                "lazy"
            }
        )
    }
}
