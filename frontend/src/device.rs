//! `Tensor::to(device)`: the host, or a CUDA device when one is usable.

use crate::Tensor;
use smelt_ir::{Device, Error, Result};

impl Tensor {
    /// `tensor.to(device)`. The host always works; `cuda:N` checks that the device is usable
    /// and otherwise returns a `device` error saying what is missing. Tensors do not live on
    /// a device yet: run a program's kernels on CUDA with `SMELT_DEVICE=cuda`.
    #[track_caller]
    pub fn try_to(&self, device: Device) -> Result<Tensor> {
        match device {
            Device::Cpu => Ok(self.clone()),
            Device::Cuda(n) => {
                smelt_runtime::cuda::status(n)?;
                Err(Error::unsupported(format!(
                    "to({device}): tensors cannot be placed on a CUDA device yet; \
                     set SMELT_DEVICE={device} to run their kernels there"
                )))
            }
        }
    }

    #[track_caller]
    pub fn to(&self, device: Device) -> Tensor {
        crate::tensor::ok(self.try_to(device))
    }
}
