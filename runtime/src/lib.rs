//! smelt's runtime: where data lives and code runs. Buffers on the host or a CUDA device, the
//! one [`Backend`] trait the reference interpreter, the cranelift JIT and each CUDA device
//! implement, and the execution of a schedule on one [`Target`].

pub mod backend;
#[cfg(test)]
mod backend_tests;
pub mod buffer;
pub mod caching;
pub mod cpu;
mod cpu_helpers;
pub mod cuda;
pub mod device;
pub mod execute;
pub mod float_mode;
mod host_element;
pub mod library;
#[cfg(test)]
mod math_tests;
pub mod memory;
pub mod record;
pub mod reference;
mod residency;
pub use smelt_ir::scalar_ops;
pub mod stats;

pub use backend::{Backend, Executable};
pub use buffer::{Buffer, HostBuffer};
pub use caching::AllocatorStats;
pub use cpu::refused_kernels;
pub use device::{Device, Target, with_host_target};
pub use execute::{Mismatch, execute, execute_audited, prepare};
pub use float_mode::{flush_denormal, set_flush_denormal};
pub use host_element::HostElement;
pub use stats::{Transfers, transfers};
