//! smelt's frontend: the lazy [`Tensor`] with PyTorch's semantics. The `smelt` crate re-exports
//! this crate's API whole, and its crate docs are the user's guide; this page is the map.
//!
//! - **Laziness.** An op checks shapes, dtypes, strides, names and devices at once and records
//!   a graph node (`lazy.rs`); nothing runs until a value is read (`to_vec`, `item`,
//!   printing) or [`Tensor::realize`] / [`realize`] asks, which optimises the pending graph,
//!   compiles it (plans are cached: `plan_cache.rs`) and runs it on the tensors' device.
//!   [`explain`] shows the kernels without running them.
//! - **Devices.** Tensors are made on the thread's default device ([`set_default_device`],
//!   [`with_default_device`], `SMELT_DEVICE`); [`Tensor::to`] moves them; the inputs of one op
//!   share a device (`device.rs`).
//! - **Errors.** Every op has a `try_` form returning [`Result`] with an [`Error`] of an
//!   [`ErrorKind`]; the plain form panics with the same message at the caller's line.
//! - **Keyword arguments.** Full forms take PyTorch's arguments in order (`Option` for a `None`
//!   default); short forms leave them at PyTorch's defaults: `sum_all()`, `sum_dim(d)`,
//!   `sum_keepdim(d)`, `softmax_dim(d)`, `Tensor::zeros_dtype(shape, dtype)` (`short_forms.rs`).
//!
//! Where the ops are, one concern per private module: factories in `creation.rs`; elementwise
//! math, comparisons, casts and operators in `elementwise.rs` (type promotion in `promote.rs`);
//! reductions in `reduce.rs` and, built from them, `reduce_composite.rs` (mean, var, std,
//! logsumexp, softmax); cumsum/sort in `scan.rs`; views in `views.rs`; copies that reshape in
//! `shape_ops.rs` and `join.rs` (cat, stack); indexing in `index.rs`, `gather.rs`,
//! `masked.rs`; products in `matmul.rs`; layer norm and GELU in `nn.rs`; random draws and the generator in `random.rs`; in-place ops in `inplace.rs`; dim names in `names.rs`
//! and `named_ops.rs`; printing in `display.rs`; dumps in `dump.rs` and `explain.rs`.
//!
//! ```
//! # use smelt_frontend as smelt;
//! use smelt::prelude::*;
//! let x = Tensor::new([[1.0f32, -2.0], [3.0, -4.0]]);
//! let y = x.relu().sum_dim(1);   // recorded, not run
//! assert!(!y.is_realized());
//! assert_eq!(y.to_vec::<f32>(), [1.0, 3.0]);
//! assert_eq!(x.try_matmul(&Tensor::new([1.0f32])).unwrap_err().kind, ErrorKind::Shape);
//! ```

#![warn(missing_docs)]

mod check;
mod complex;
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
mod io;
mod join;
mod lazy;
mod masked;
mod matmul;
mod named_ops;
mod names;
mod nn;
mod plan_cache;
mod promote;
mod random;
mod reduce;
mod reduce_composite;
mod scan;
mod shape_ops;
mod short_forms;
mod sparse;
mod tensor;
mod views;

pub use creation::TensorData;
pub use default_dtype::{
    get_default_complex_dtype, get_default_dtype, set_default_dtype, set_default_tensor_type,
    try_set_default_dtype, try_set_default_tensor_type, with_default_dtype,
};
pub use device::{get_default_device, set_default_device, with_default_device};
pub use dump::GraphDump;
pub use elementwise::RoundingMode;
pub use explain::{
    BoundaryInfo, Explain, KernelInfo, Mode, UNFUSED_DISABLES, device_disables, explain,
    explain_all, explain_all_mode, explain_mode,
};
#[cfg(feature = "ndarray")]
pub use io::NdArrayView;
pub use names::{Dim, DimNames};
pub use num_complex::{Complex32, Complex64};
pub use plan_cache::{PlanCacheStats, plan_cache_stats};
pub use promote::{Operand, result_type, try_result_type};
pub use random::{
    DEFAULT_SEED, Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state,
    try_set_rng_state, with_default_generator, with_generator,
};
pub use reduce::IntoDims;
pub use smelt_ir::{
    BinaryOp, DType, Error, ErrorKind, MemoryFormat, ReduceOp, Result, Scalar, UnaryOp,
};
/// The element types of host buffers (`from_static`, `from_arc`, the `ndarray` conversions).
pub use smelt_runtime::HostElement;
pub use smelt_runtime::{Device, Target, flush_denormal, set_flush_denormal};
pub use sparse::Layout;
pub use tensor::{Element, Tensor, realize, realize_with};
pub use views::TensorIndex;

/// The types and functions most programs use: `use smelt::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Complex32, Complex64, DType, Device, Dim, Error, ErrorKind, Generator, Layout,
        MemoryFormat, Operand, Result, RoundingMode, Scalar, Tensor, TensorIndex,
        get_default_device, get_default_dtype, manual_seed, realize, set_default_device,
        set_default_dtype, with_default_device, with_default_dtype,
    };
}
