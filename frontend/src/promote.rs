//! Operands of elementwise ops (tensors or Python-style scalars) and `result_type`
//! (SEMANTICS.md §5.3): dimensioned tensors outrank 0-dim tensors, which outrank scalars; a
//! lower bucket only counts when its category is higher.

use crate::default_dtype::get_default_dtype;
use crate::lazy::LazyNode;
use crate::tensor::Tensor;
use smelt_ir::graph::Op;
use smelt_ir::{Category, DType, Scalar, View, promote_types};
use std::sync::Arc;

/// A tensor or a scalar argument.
#[derive(Clone, Debug)]
pub enum Operand {
    Tensor(Tensor),
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

    /// What a kernel reads for this operand, broadcast to `shape` (see [`OperandRef::source`]).
    #[track_caller]
    pub(crate) fn source(&self, shape: &[usize], scalar_dtype: DType) -> (Arc<LazyNode>, View) {
        self.operand().source(shape, scalar_dtype)
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

    /// What a kernel reads for this operand, broadcast to `shape`; scalars become constant
    /// fills of `dtype`.
    #[track_caller]
    pub(crate) fn source(self, shape: &[usize], scalar_dtype: DType) -> (Arc<LazyNode>, View) {
        match self {
            OperandRef::Tensor(t) => (t.storage.current(), t.view.broadcast_to(shape)),
            OperandRef::Scalar(s) => {
                let node = LazyNode::pending(
                    Op::Fill {
                        value: s.cast(scalar_dtype),
                    },
                    scalar_dtype,
                    1,
                    View::contiguous(&[]),
                    vec![],
                );
                (node, View::new(shape.to_vec(), vec![0; shape.len()], 0))
            }
        }
    }
}

fn combine(hi: Option<DType>, lo: Option<DType>) -> Option<DType> {
    match (hi, lo) {
        (None, lo) => lo,
        (hi, None) => hi,
        (Some(h), Some(l)) => {
            if h.is_float() {
                Some(h)
            } else if h.is_bool() || l.is_float() {
                Some(promote_types(h, l))
            } else {
                Some(h)
            }
        }
    }
}

/// `torch.result_type` over several operands.
pub fn result_type(operands: &[&Operand]) -> DType {
    result_type_of(operands.iter().map(|o| o.operand()))
}

/// [`result_type`] over borrowed operands.
pub(crate) fn result_type_of<'a>(operands: impl IntoIterator<Item = OperandRef<'a>>) -> DType {
    let mut dim: Option<DType> = None;
    let mut zero: Option<DType> = None;
    let mut wrapped: Option<DType> = None;
    for op in operands {
        let (bucket, dt) = match op {
            OperandRef::Tensor(t) if t.ndim() > 0 => (&mut dim, t.dtype()),
            OperandRef::Tensor(t) => (&mut zero, t.dtype()),
            OperandRef::Scalar(s) => (&mut wrapped, s.wrapped_dtype(get_default_dtype())),
        };
        *bucket = Some(bucket.map_or(dt, |b| promote_types(b, dt)));
    }
    combine(dim, combine(zero, wrapped)).unwrap_or_else(get_default_dtype)
}

/// The category of a dtype, for messages.
pub fn category_name(c: Category) -> &'static str {
    match c {
        Category::Bool => "bool",
        Category::Integer => "integer",
        Category::Floating => "floating",
    }
}
