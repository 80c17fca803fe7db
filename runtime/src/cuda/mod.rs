//! The CUDA backend's load and launch roles (render and compile live in `smelt-codegen`):
//! devices, a per-device buffer pool, host↔device copies and kernel launches through cudarc.
//!
//! Everything here first checks that the `cuda` feature is built and that libcuda and libnvrtc
//! load (cudarc panics on a missing library); otherwise it returns an `ErrorKind::Device`
//! error saying what is missing.

#[cfg(feature = "cuda")]
mod device;
#[cfg(feature = "cuda")]
mod launch;
#[cfg(feature = "cuda")]
mod pool;

use crate::buffer::Buffer;
#[cfg(not(feature = "cuda"))]
use smelt_ir::Error;
use smelt_ir::{Kernel, Result};
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
}
