//! The CUDA backend's load and launch roles (render and compile live in `smelt-codegen`):
//! devices, a per-device buffer pool, host↔device copies, kernel launches and cuBLAS matmuls
//! through cudarc.
//!
//! Everything here first checks that the `cuda` feature is built and that libcuda and libnvrtc
//! (and libcublas, for a matmul) load (cudarc panics on a missing library); otherwise it
//! returns an `ErrorKind::Device` error saying what is missing.

#[cfg(feature = "cuda")]
mod blas;
#[cfg(feature = "cuda")]
mod device;
#[cfg(feature = "cuda")]
pub mod gemm_plan;
#[cfg(feature = "cuda")]
mod launch;
#[cfg(feature = "cuda")]
mod pool;

use crate::buffer::Buffer;
#[cfg(not(feature = "cuda"))]
use smelt_ir::Error;
use smelt_ir::{Kernel, LibraryCall, Result};
use std::sync::Arc;

/// A line describing CUDA device `ordinal` (name, architecture) or why it is unavailable.
pub fn status(ordinal: usize) -> Result<String> {
    #[cfg(feature = "cuda")]
    {
        let dev = device::device(ordinal)?;
        Ok(format!("cuda:{ordinal} {} ({})", dev.name, dev.arch))
    }
    #[cfg(not(feature = "cuda"))]
    {
        Err(Error::device(format!(
            "cuda:{ordinal} is unavailable: smelt was built without the `cuda` feature"
        )))
    }
}

/// Runs `kernel` on CUDA device `ordinal` with host inputs (in argument order): copies them in,
/// launches, copies the outputs back (in output order).
pub fn run_kernel(ordinal: usize, kernel: &Kernel, inputs: &[Arc<Buffer>]) -> Result<Vec<Buffer>> {
    #[cfg(feature = "cuda")]
    {
        launch::run_kernel(&*device::device(ordinal)?, kernel, inputs)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (kernel, inputs);
        Err(Error::device(format!(
            "cuda:{ordinal} is unavailable: smelt was built without the `cuda` feature"
        )))
    }
}

/// Runs library `call` for CUDA device `ordinal`: f32/f64 matmuls on the device through
/// cuBLAS, every other call on the host.
pub fn run_library(ordinal: usize, call: &LibraryCall, inputs: &[Arc<Buffer>]) -> Result<Buffer> {
    #[cfg(feature = "cuda")]
    {
        let dev = device::device(ordinal)?;
        if blas::runs_on_cublas(call) {
            blas::run_matmul(&dev, call, inputs)
        } else {
            Ok(crate::library::run_library(call, inputs))
        }
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (call, inputs);
        Err(Error::device(format!(
            "cuda:{ordinal} is unavailable: smelt was built without the `cuda` feature"
        )))
    }
}

/// Whether cuBLAS loads: `Err` is a `device` error naming the missing library.
pub fn cublas_status() -> Result<()> {
    #[cfg(feature = "cuda")]
    {
        blas::cublas_status()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Err(Error::device(
            "cuBLAS is unavailable: smelt was built without the `cuda` feature",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smelt_ir::ErrorKind;

    #[test]
    fn unavailable_cuda_is_a_device_error_not_a_panic() {
        match status(0) {
            Ok(line) => assert!(line.starts_with("cuda:0")),
            Err(e) => {
                assert_eq!(e.kind, ErrorKind::Device, "{e}");
                assert!(e.message.contains("unavailable"), "{e}");
            }
        }
        // A device no machine has.
        let e = status(1 << 20).expect_err("no such device");
        assert_eq!(e.kind, ErrorKind::Device, "{e}");
    }

    /// A matmul under `SMELT_DEVICE=cuda` goes to cuBLAS: without CUDA or cuBLAS that is a
    /// `device` error naming what is missing; with them it matches the host routine.
    #[test]
    fn cublas_matmul_is_a_device_error_or_matches_the_host() {
        use smelt_ir::{DType, LibraryOp, View};
        let a: Vec<f32> = (0..12).map(|i| (i % 5) as f32 - 2.0).collect();
        let b: Vec<f32> = (0..20).map(|i| (i % 7) as f32 - 3.0).collect();
        let inputs = [
            Arc::new(Buffer::F32(a.into())),
            Arc::new(Buffer::F32(b.into())),
        ];
        // [3, 4] @ ([5, 4] transposed) -> [3, 5].
        let call = LibraryCall {
            op: LibraryOp::Matmul,
            inputs: vec![
                (DType::F32, View::contiguous(&[3, 4])),
                (DType::F32, View::contiguous(&[5, 4]).t().unwrap()),
            ],
            dtype: DType::F32,
            len: 15,
            out: View::contiguous(&[3, 5]),
        };
        let expected = crate::library::run_library(&call, &inputs);
        let usable = status(0).and_then(|_| cublas_status());
        match (usable, run_library(0, &call, &inputs)) {
            (Err(why), Err(e)) => {
                assert_eq!(e.kind, ErrorKind::Device, "{e}");
                assert!(e.message.contains("unavailable"), "{e}");
                eprintln!("no usable CUDA device or cuBLAS, checked the error only: {why}");
            }
            (Err(why), Ok(_)) => panic!("cuBLAS matmul ran although {why}"),
            (Ok(()), r) => {
                let got = r.unwrap_or_else(|e| panic!("cuBLAS matmul failed: {e}"));
                assert_eq!(got, expected);
            }
        }
        if let Err(e) = cublas_status() {
            assert_eq!(e.kind, ErrorKind::Device, "{e}");
            assert!(e.message.contains("libcublas"), "{e}");
        }
    }
}
