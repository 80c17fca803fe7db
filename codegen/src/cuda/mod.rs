//! The CUDA backend's render and compile roles: kernel IR → CUDA C ([`render()`], pure, works
//! everywhere) → PTX through NVRTC ([`compile`], needs the `cuda` feature and libnvrtc at run
//! time, and says clearly when either is missing).

pub mod compile;
pub mod libraries;
pub mod library;
pub mod render;

pub use render::{CudaKernel, PRELUDE, render};
