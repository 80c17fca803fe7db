//! smelt's runtime: host buffers, the backends that run kernel IR, and execution.

pub mod buffer;
pub mod cuda;
pub mod execute;
pub mod library;
pub mod record;
pub mod reference;
pub mod scalar_ops;
pub mod stats;

pub use buffer::Buffer;
pub use execute::execute;
