//! Operands of elementwise ops (tensors or Python-style scalars) and `result_type`
//! (SEMANTICS.md §5.3): dimensioned tensors outrank 0-dim tensors, which outrank scalars; a
//! lower bucket only counts when its category is higher.

use crate::default_dtype::get_default_dtype;
use crate::lazy::LazyNode;
use crate::plan_cache::scalar_bits;
use crate::tensor::Tensor;
use smelt_ir::Dims;
use smelt_ir::graph::Op;
use smelt_ir::{DType, Error, Result, Scalar, View, promote_types};
use smelt_runtime::Device;
use std::sync::Arc;

/// An argument of an elementwise op: a tensor or a Python-style scalar. Ops take
/// `impl Into<Operand>`, so `&Tensor`, `Tensor`, `Scalar`, `f64`, `f32`, `i64`, `i32` and
/// `bool` all work: `x.add(&y)`, `x.add(1.5)`, `&x * 2`.
#[derive(Clone, Debug)]
pub enum Operand {
    /// A tensor operand (broadcasts; takes part in promotion by its dtype and rank).
    Tensor(Tensor),
    /// A Python-style scalar (promotes only across categories: an int scalar keeps an int32
    /// tensor int32, a float scalar makes it the default float dtype).
    Scalar(Scalar),
}

impl From<&Tensor> for Operand {
    fn from(t: &Tensor) -> Self {
        Operand::Tensor(t.clone())
    }
}
impl From<Tensor> for Operand {
    fn from(t: Tensor) -> Self {
        Operand::Tensor(t)
    }
}
impl From<Scalar> for Operand {
    fn from(s: Scalar) -> Self {
        Operand::Scalar(s)
    }
}
impl From<f64> for Operand {
    fn from(v: f64) -> Self {
        Operand::Scalar(Scalar::Float(v))
    }
}
impl From<f32> for Operand {
    fn from(v: f32) -> Self {
        Operand::Scalar(Scalar::Float(v as f64))
    }
}
impl From<i64> for Operand {
    fn from(v: i64) -> Self {
        Operand::Scalar(Scalar::Int(v))
    }
}
impl From<i32> for Operand {
    fn from(v: i32) -> Self {
        Operand::Scalar(Scalar::Int(v as i64))
    }
}
impl From<num_complex::Complex<f64>> for Operand {
    fn from(v: num_complex::Complex<f64>) -> Self {
        Operand::Scalar(Scalar::Complex(v.re, v.im))
    }
}
impl From<num_complex::Complex<f32>> for Operand {
    fn from(v: num_complex::Complex<f32>) -> Self {
        Operand::Scalar(Scalar::Complex(v.re as f64, v.im as f64))
    }
}
impl From<bool> for Operand {
    fn from(v: bool) -> Self {
        Operand::Scalar(Scalar::Bool(v))
    }
}

/// A borrowed operand: what the elementwise helpers read, so that an op on `&self` does not
/// clone its handle (and view) into an [`Operand`] first.
#[derive(Clone, Copy, Debug)]
pub(crate) enum OperandRef<'a> {
    Tensor(&'a Tensor),
    Scalar(Scalar),
}

/// Anything the elementwise helpers take as an operand: an [`Operand`] or a `Tensor`.
pub(crate) trait AsOperand {
    fn operand(&self) -> OperandRef<'_>;
}

impl AsOperand for Operand {
    fn operand(&self) -> OperandRef<'_> {
        match self {
            Operand::Tensor(t) => OperandRef::Tensor(t),
            Operand::Scalar(s) => OperandRef::Scalar(*s),
        }
    }
}

impl AsOperand for Tensor {
    fn operand(&self) -> OperandRef<'_> {
        OperandRef::Tensor(self)
    }
}

impl Operand {
    /// The shape the operand contributes to broadcasting (`[]` for scalars).
    pub fn shape(&self) -> &[usize] {
        self.operand().shape()
    }

    /// The dtype it has on its own (scalars: bool, int64 or the default float).
    pub fn dtype(&self) -> DType {
        self.operand().dtype()
    }

    /// What a kernel on `device` reads for this operand, broadcast to `shape` (see
    /// [`OperandRef::source`]).
    #[track_caller]
    pub(crate) fn source(
        &self,
        shape: &[usize],
        scalar_dtype: DType,
        device: Device,
    ) -> (Arc<LazyNode>, View) {
        self.operand().source(shape, scalar_dtype, device)
    }
}

impl<'a> OperandRef<'a> {
    pub(crate) fn shape(self) -> &'a [usize] {
        match self {
            OperandRef::Tensor(t) => t.shape(),
            OperandRef::Scalar(_) => &[],
        }
    }

    pub(crate) fn dtype(self) -> DType {
        match self {
            OperandRef::Tensor(t) => t.dtype(),
            OperandRef::Scalar(s) => s.wrapped_dtype(get_default_dtype()),
        }
    }

    /// What a kernel on `device` reads for this operand, broadcast to `shape`; scalars become
    /// constant fills of `dtype` there. A tensor must be on `device` already.
    #[track_caller]
    pub(crate) fn source(
        self,
        shape: &[usize],
        scalar_dtype: DType,
        device: Device,
    ) -> (Arc<LazyNode>, View) {
        match self {
            OperandRef::Tensor(t) => (t.storage.current(), t.view.broadcast_to(shape)),
            OperandRef::Scalar(s) => (
                scalar_fill(s.cast(scalar_dtype), scalar_dtype, device),
                View::new(shape, Dims::filled(0, shape.len()), 0),
            ),
        }
    }
}

/// The pending 0-dim fill node a scalar operand reads. Fills are interned per thread, as
/// tinygrad interns its constants: `x = x*1.0001 + 0.5` a thousand times records two fill
/// nodes, not two thousand, so realisation walks, keys and frees half the nodes. Only a
/// pending fill is shared; one that got a buffer (a library call or an in-place write read it)
/// is replaced by a fresh node, and so is one recorded at another line: every node shows, in
/// dumps, the line of the user's code that recorded it.
#[track_caller]
fn scalar_fill(value: Scalar, dtype: DType, device: Device) -> Arc<LazyNode> {
    /// Interned fills, direct-mapped by value and dtype.
    const SLOTS: usize = 64;
    type Slot = Option<(DType, [u64; 3], Arc<LazyNode>)>;
    thread_local! {
        static FILLS: std::cell::RefCell<[Slot; SLOTS]> =
            const { std::cell::RefCell::new([const { None }; SLOTS]) };
    }
    // By kind and exact bits, so that 0.0 and -0.0 (and NaN payloads) stay apart.
    let bits = scalar_bits(value);
    let slot = ((bits[1] ^ bits[2].rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58)
        as usize
        ^ dtype as usize;
    let slot = slot % SLOTS;
    let here = std::panic::Location::caller();
    let interned = FILLS.with_borrow(|fills| match &fills[slot] {
        Some((d, b, node))
            if *d == dtype
                && *b == bits
                && node.device == device
                && (std::ptr::eq(node.location, here) || *node.location == *here)
                && node.is_pending() =>
        {
            Some(node.clone())
        }
        Some(_) | None => None,
    });
    if let Some(node) = interned {
        return node;
    }
    // Outside the closure: `#[track_caller]` does not pass through closures, and the node
    // should name the user's line.
    let node = LazyNode::pending_on(
        device,
        Op::Fill { value },
        dtype,
        1,
        View::contiguous(&[]),
        vec![],
    );
    FILLS.with_borrow_mut(|fills| fills[slot] = Some((dtype, bits, node.clone())));
    node
}

/// c10's `combine_categories`: the dtype of a higher-priority group `hi` beside a
/// lower-priority one `lo`, which only counts when its category is higher. A lower complex
/// group makes a float `hi` its complex counterpart (PyTorch has none for bfloat16, and smelt
/// no complex32 for float16: `dtype` errors) and replaces an integer or bool one.
fn combine(hi: Option<DType>, lo: Option<DType>) -> Result<Option<DType>> {
    Ok(match (hi, lo) {
        (None, lo) => lo,
        (hi, None) => hi,
        (Some(h), Some(l)) => {
            if h.is_complex() {
                Some(h)
            } else if l.is_complex() {
                if h.is_float() {
                    Some(h.complex().ok_or_else(|| no_complex_counterpart(h))?)
                } else {
                    Some(l)
                }
            } else if h.is_float() {
                Some(h)
            } else if h.is_bool() || l.is_float() {
                Some(promote_types(h, l))
            } else {
                Some(h)
            }
        }
    })
}

/// The error for a float dtype without a complex counterpart promoting with a complex one.
fn no_complex_counterpart(dtype: DType) -> Error {
    match dtype {
        DType::BF16 => Error::dtype(
            "Unknown Complex ScalarType for BFloat16: PyTorch has no bfloat16 complex type",
        ),
        DType::Bool
        | DType::U8
        | DType::I8
        | DType::I16
        | DType::I32
        | DType::I64
        | DType::F16
        | DType::F32
        | DType::F64
        | DType::C64
        | DType::C128 => Error::dtype(format!(
            "promoting {dtype} with a complex operand gives complex32, which smelt does not support"
        )),
    }
}

/// `torch.result_type` over several operands: the dtype an elementwise op over them computes
/// in. Tensors with dims outrank 0-dim tensors, which outrank scalars; a lower group counts
/// only when its category (bool < integer < float) is higher.
///
/// ```
/// # use smelt_frontend as smelt;
/// use smelt::prelude::*;
/// let i = Operand::from(Tensor::new([1i32, 2]));
/// assert_eq!(smelt::result_type(&[&i, &Operand::from(3)]), DType::I32);
/// assert_eq!(smelt::result_type(&[&i, &Operand::from(0.5)]), DType::F32);
/// ```
///
/// Panics where [`try_result_type`] returns an error.
pub fn result_type(operands: &[&Operand]) -> DType {
    match try_result_type(operands) {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    }
}

/// [`result_type`] returning a `Result`: a `dtype` error where promotion meets a complex
/// operand with a type that has no complex counterpart (a `bfloat16` tensor beside a 0-dim
/// complex tensor or a complex scalar; `float16`'s would be complex32, which smelt lacks).
pub fn try_result_type(operands: &[&Operand]) -> Result<DType> {
    result_type_of(operands.iter().map(|o| o.operand()))
}

/// [`try_result_type`] over borrowed operands.
pub(crate) fn result_type_of<'a>(
    operands: impl IntoIterator<Item = OperandRef<'a>>,
) -> Result<DType> {
    let mut dim: Option<DType> = None;
    let mut zero: Option<DType> = None;
    let mut wrapped: Option<DType> = None;
    for op in operands {
        let (bucket, dt) = match op {
            OperandRef::Tensor(t) if t.ndim() > 0 => (&mut dim, t.dtype()),
            OperandRef::Tensor(t) => (&mut zero, t.dtype()),
            // Beside a floating tensor with dims a real scalar changes nothing (its category is
            // never higher): skipped, without reading the default dtype (`x * 1.5`, the most
            // common case).
            OperandRef::Scalar(s)
                if !matches!(s, Scalar::Complex(..)) && dim.is_some_and(|d| d.is_float()) =>
            {
                continue;
            }
            OperandRef::Scalar(s) => (&mut wrapped, s.wrapped_dtype(get_default_dtype())),
        };
        *bucket = Some(bucket.map_or(dt, |b| promote_types(b, dt)));
    }
    Ok(match (dim, zero, wrapped) {
        // Tensors with dims alone: their promotion, with nothing to combine.
        (Some(dim), None, None) => dim,
        _ => combine(dim, combine(zero, wrapped)?)?.unwrap_or_else(get_default_dtype),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lazy::NodeState;
    use smelt_runtime::HostBuffer;

    #[test]
    fn scalar_fills_are_shared_while_pending_and_kept_apart_by_bits_and_dtype() {
        // Fills are interned per recording line: one closure is one line.
        let fill = |value, dtype| scalar_fill(value, dtype, Device::Cpu);
        let a = fill(Scalar::Float(1.5), DType::F32);
        assert!(Arc::ptr_eq(&a, &fill(Scalar::Float(1.5), DType::F32)));
        for (value, dtype) in [
            (Scalar::Float(1.5), DType::F64),
            (Scalar::Float(-1.5), DType::F32),
            (Scalar::Int(1), DType::F32),
        ] {
            assert!(!Arc::ptr_eq(&a, &fill(value, dtype)));
        }
        // Another line records its own fill, so each node names where it was written.
        assert!(!Arc::ptr_eq(
            &a,
            &scalar_fill(Scalar::Float(1.5), DType::F32, Device::Cpu)
        ));
        let zero = fill(Scalar::Float(0.0), DType::F32);
        let negative_zero = fill(Scalar::Float(-0.0), DType::F32);
        assert!(!Arc::ptr_eq(&zero, &negative_zero));
        // A fill that got a buffer is not handed out again.
        let realized = NodeState::Realized(HostBuffer::F32(vec![1.5].into()).into());
        a.set_state(&mut crate::lazy::walks(), realized);
        let b = fill(Scalar::Float(1.5), DType::F32);
        assert!(!Arc::ptr_eq(&a, &b));
        assert!(b.buffer().is_none());
    }

    #[test]
    fn a_long_chain_of_scalar_ops_records_one_fill_per_constant() {
        let mut x = Tensor::new([0.5f32; 4]);
        for _ in 0..50 {
            x = &x * 1.25 + 0.5;
        }
        let graph = crate::lazy::pending_graph(&[x.storage.current()]);
        let fills = graph
            .graph
            .node_indices()
            .filter(|&id| matches!(graph.node(id).op, Op::Fill { .. }))
            .count();
        assert_eq!((fills, graph.graph.node_count()), (2, 1 + 2 + 100));
        let want = (0..50).fold(0.5f32, |x, _| x * 1.25 + 0.5);
        assert_eq!(x.to_vec::<f32>(), vec![want; 4]);
    }
}
