//! smelt's frontend: the lazy `Tensor` with PyTorch's semantics. Ops check shapes, dtypes and
//! strides eagerly and record graph nodes; `realize()` compiles and runs what is needed.

pub mod check;
pub mod creation;
pub mod default_dtype;
pub mod device;
pub mod display;
pub mod dump;
pub mod elementwise;
pub mod explain;
pub mod gather;
pub mod index;
pub mod inplace;
mod io;
pub mod join;
pub mod lazy;
pub mod masked;
pub mod matmul;
pub mod named_ops;
pub mod names;
pub mod plan_cache;
pub mod promote;
pub mod reduce;
pub mod reduce_composite;
pub mod scan;
pub mod shape_ops;
pub mod tensor;
pub mod views;

pub use creation::{Generator, TensorData};
pub use default_dtype::{
    get_default_dtype, set_default_dtype, try_set_default_dtype, with_default_dtype,
};
pub use device::{get_default_device, set_default_device, with_default_device};
pub use dump::GraphDump;
pub use elementwise::RoundingMode;
#[cfg(feature = "ndarray")]
pub use io::NdArrayView;
pub use names::{Dim, DimNames};
pub use plan_cache::{PlanCacheStats, plan_cache_stats};
pub use promote::{Operand, result_type};
pub use smelt_ir::{
    BinaryOp, DType, Error, ErrorKind, MemoryFormat, ReduceOp, Result, Scalar, UnaryOp,
};
/// The element types of host buffers (`from_static`, `from_arc`, the `ndarray` conversions).
pub use smelt_runtime::HostElement;
pub use smelt_runtime::{Device, Target};
pub use tensor::{Element, Tensor, realize, realize_with};
pub use views::TensorIndex;
