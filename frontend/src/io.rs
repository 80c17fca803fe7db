//! Data in and out: tensors over host memory that was not copied (`host.rs`: `from_static`,
//! `from_arc`, `data_ptr`; `Tensor::from_vec` adopts its vector).
//!
//! What copies, and why (on the host; a default device other than the host gets a copy of
//! whatever is made here):
//!
//! | way in or out | copies |
//! |---|---|
//! | `from_vec` | nothing: the tensor owns the vector's allocation and writes it in place |
//! | `from_static`, `from_arc` | nothing until a write: an in-place op copies the elements first (copy on write) |

mod host;
