//! smelt: a lazy tensor compiler with PyTorch's semantics.
//!
//! ```
//! use smelt::prelude::*;
//! let a = Tensor::new([[1.0f32, 2.0], [3.0, 4.0]]);
//! let b = (&a.t() + 1.0).relu();   // nothing runs yet
//! assert_eq!(b.to_vec::<f32>(), vec![2.0, 4.0, 3.0, 5.0]);
//! ```

pub use smelt_frontend as frontend;
pub use smelt_frontend::explain::{Explain, Mode, explain as explain_mode};

/// The fused plan for realizing `t`: kernels, what each fuses, why each boundary exists,
/// bytes moved, kernel IR. Nothing runs.
pub fn explain(t: &Tensor) -> Explain {
    explain_mode(t, Mode::Fused)
}

/// The fused plan for realizing `tensors` together ([`realize`]): one compilation, and kernels
/// whose outputs share an iteration space store several of them. Nothing runs.
pub fn explain_all(tensors: &[&Tensor]) -> Explain {
    smelt_frontend::explain::explain_all(tensors, Mode::Fused)
}

/// Realizes several tensors in one graph: shared work runs once, and outputs over the same
/// iteration space come from the same kernel.
pub use smelt_frontend::realize;
pub use smelt_frontend::{DType, Device, Error, ErrorKind, MemoryFormat, Result, Scalar, Tensor};

/// Everything a user needs: `use smelt::prelude::*;`.
pub mod prelude {
    pub use smelt_frontend::{
        DType, Device, Dim, Error, ErrorKind, Generator, MemoryFormat, Operand, Result,
        RoundingMode, Scalar, Tensor, TensorIndex, get_default_dtype, realize, set_default_dtype,
        with_default_dtype,
    };
}
