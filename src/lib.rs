//! smelt: a lazy tensor compiler with PyTorch's semantics.
//!
//! ```
//! use smelt::prelude::*;
//! let a = Tensor::new([[1.0f32, 2.0], [3.0, 4.0]]);
//! let b = (&a.t() + 1.0).relu();   // nothing runs yet
//! assert_eq!(b.to_vec::<f32>(), vec![2.0, 4.0, 3.0, 5.0]);
//! ```

// The library's API is the frontend's, chosen in `smelt_frontend`'s `lib.rs`.
pub use smelt_frontend::*;
