//! smelt's runtime: host buffers, the backends that run kernel IR, and execution.

pub mod backend;
#[cfg(test)]
mod backend_tests;
pub mod buffer;
pub mod cpu;
mod cpu_helpers;
pub mod cuda;
pub mod execute;
pub mod library;
#[cfg(test)]
mod math_tests;
pub mod memory;
pub mod record;
pub mod reference;
pub use smelt_ir::scalar_ops;
pub mod stats;

pub use backend::Backend;
pub use buffer::Buffer;
pub use execute::{Mismatch, execute, execute_audited, execute_on};
