//! smelt's frontend: the lazy `Tensor` with PyTorch's semantics. Ops check shapes, dtypes and
//! strides eagerly and record graph nodes; `realize()` compiles and runs what is needed.

#![warn(missing_docs)]

mod check;
mod creation;
mod default_dtype;
mod device;
mod display;
mod dump;
mod elementwise;
mod explain;
mod gather;
mod index;
mod inplace;
mod join;
mod lazy;
mod masked;
mod matmul;
mod named_ops;
mod names;
mod plan_cache;
mod promote;
mod reduce;
mod reduce_composite;
mod scan;
mod shape_ops;
mod short_forms;
mod tensor;
mod views;

pub use creation::{Generator, TensorData};
pub use default_dtype::{
    get_default_dtype, set_default_dtype, try_set_default_dtype, with_default_dtype,
};
pub use device::{get_default_device, set_default_device, with_default_device};
pub use dump::GraphDump;
pub use elementwise::RoundingMode;
pub use explain::{
    BoundaryInfo, Explain, KernelInfo, Mode, explain, explain_all, explain_all_mode, explain_mode,
};
pub use names::{Dim, DimNames};
pub use plan_cache::{PlanCacheStats, plan_cache_stats};
pub use promote::{Operand, result_type};
pub use reduce::IntoDims;
pub use smelt_ir::{
    BinaryOp, DType, Error, ErrorKind, MemoryFormat, ReduceOp, Result, Scalar, UnaryOp,
};
pub use smelt_runtime::{Device, Target};
pub use tensor::{Element, Tensor, realize, realize_with};
pub use views::TensorIndex;

/// The types and functions most programs use: `use smelt::prelude::*;`.
pub mod prelude {
    pub use crate::{
        DType, Device, Dim, Error, ErrorKind, Generator, MemoryFormat, Operand, Result,
        RoundingMode, Scalar, Tensor, TensorIndex, get_default_device, get_default_dtype, realize,
        set_default_device, set_default_dtype, with_default_device, with_default_dtype,
    };
}
