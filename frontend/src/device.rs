//! Where tensors live: the per-thread default device new tensors are made on
//! (`torch.set_default_device`; `SMELT_DEVICE` sets it), `Tensor::to(device)`, and PyTorch's
//! rule that the tensors of one op share a device.
//!
//! A storage lives on one device for its whole life. Ops on device tensors record lazily as on
//! the host and realise there; values cross between host and device only through `to`,
//! reading them (`to_vec`, `item`, printing) or an op whose result size depends on data
//! (`nonzero`, `masked_select`, a bool index), which makes a round trip through the host.

use crate::lazy::LazyNode;
use crate::tensor::{Tensor, ok};
use smelt_ir::{Error, MemoryFormat, Result};
use smelt_runtime::Device;
use std::cell::Cell;

thread_local! {
    /// `None` until first read: then `SMELT_DEVICE`, or the host.
    static DEFAULT_DEVICE: Cell<Option<Device>> = const { Cell::new(None) };
}

/// The current thread's default device: where factories and host data put new tensors. Starts
/// as `SMELT_DEVICE` (the host when unset; an unknown name counts as the host, and
/// `smelt info` says so).
pub fn get_default_device() -> Device {
    DEFAULT_DEVICE.with(|d| match d.get() {
        Some(device) => device,
        None => {
            let device = Device::from_env().unwrap_or(Device::Cpu);
            d.set(Some(device));
            device
        }
    })
}

/// Sets the current thread's default device (`torch.set_default_device`). Whether the device
/// is usable shows when a tensor is first made there.
pub fn set_default_device(device: Device) {
    DEFAULT_DEVICE.with(|d| d.set(Some(device)));
}

/// Runs `f` with `device` as the default device, restoring the previous one afterwards.
pub fn with_default_device<R>(device: Device, f: impl FnOnce() -> R) -> R {
    struct Restore(Device);
    impl Drop for Restore {
        fn drop(&mut self) {
            set_default_device(self.0);
        }
    }
    let _restore = Restore(get_default_device());
    set_default_device(device);
    f()
}

/// The device an op over `tensors` runs on. PyTorch's rule: every tensor on one device, except
/// that a 0-dim host tensor may join an op on a device where `cpu_scalars` (an elementwise op,
/// which reads it like a scalar). Anything else is a `device` error naming both devices and
/// the op.
pub(crate) fn common_device(op: &str, tensors: &[&Tensor], cpu_scalars: bool) -> Result<Device> {
    let mut found: Option<Device> = None;
    for t in tensors {
        let d = t.device();
        if cpu_scalars && d == Device::Cpu && t.ndim() == 0 {
            continue;
        }
        match found {
            None => found = Some(d),
            Some(f) if f == d => {}
            Some(f) => return Err(different_devices(op, f, d)),
        }
    }
    // Only 0-dim host tensors (or none at all): the host, or the default device.
    Ok(found.unwrap_or_else(|| match tensors.first() {
        Some(t) => t.device(),
        None => get_default_device(),
    }))
}

/// PyTorch's error for tensors of one op on two devices.
pub(crate) fn different_devices(op: &str, a: Device, b: Device) -> Error {
    Error::device(format!(
        "{op}: Expected all tensors to be on the same device, but found at least two devices, \
         {a} and {b}!"
    ))
}

/// `t` where `device` runs an op: itself when it is there, else (a 0-dim host tensor joining
/// a device op) a copy on `device`.
#[track_caller]
pub(crate) fn on_device(t: &Tensor, device: Device) -> Result<Tensor> {
    if t.device() == device {
        Ok(t.clone())
    } else {
        t.try_to(device)
    }
}

impl Tensor {
    /// `tensor.to(device)`: this tensor when it is on `device` already, else a copy there
    /// (with its dim names), laid out as PyTorch's `to` lays it out: the same strides when
    /// the tensor is non-overlapping and dense, else a preserve-format copy's, offset 0. The
    /// values are computed on their device first. `cuda:N` is checked first: a `device` error
    /// says what is missing when it cannot be used.
    #[track_caller]
    pub fn try_to(&self, device: Device) -> Result<Tensor> {
        if self.device() == device {
            return Ok(self.clone());
        }
        if let Some(coo) = self.coo() {
            return self.sparse_to_device(coo, device);
        }
        if let Device::Cuda(n) = device {
            smelt_runtime::cuda::backend(n)?;
        }
        // What moves: the whole storage when this tensor covers it densely from offset 0,
        // else a copy of just this tensor's elements.
        let whole = self.view.offset == 0
            && self.view.is_non_overlapping_and_dense()
            && self.numel() == self.storage.len;
        let src = if whole {
            self.clone()
        } else {
            self.try_clone_format(MemoryFormat::Preserve)?
        };
        let moved = src.realized_buffer()?.to_device(device)?;
        Ok(Tensor::from_node(LazyNode::realized(
            moved,
            src.storage.dtype,
            src.view.clone(),
        ))
        .with_dim_names(self.dim_names()))
    }

    /// `tensor.to(device)`; panics where [`Tensor::try_to`] returns an error.
    ///
    /// ```no_run
    /// # use smelt_frontend as smelt;
    /// use smelt::prelude::*;
    /// let x = Tensor::new([1.0f32, 2.0]).to(Device::Cuda(0)); // needs a GPU
    /// let y = (&x * 2.0).exp(); // recorded and run on cuda:0
    /// assert_eq!(y.cpu().device(), Device::Cpu);
    /// ```
    #[track_caller]
    pub fn to(&self, device: Device) -> Tensor {
        ok(self.try_to(device))
    }

    /// `tensor.cpu()`: `to(Device::Cpu)`.
    #[track_caller]
    pub fn try_cpu(&self) -> Result<Tensor> {
        self.try_to(Device::Cpu)
    }

    /// `tensor.cpu()`; panics where [`Tensor::try_cpu`] returns an error.
    #[track_caller]
    pub fn cpu(&self) -> Tensor {
        ok(self.try_cpu())
    }

    /// `tensor.is_cuda`.
    pub fn is_cuda(&self) -> bool {
        self.device().is_cuda()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lazy::LazyNode;
    use smelt_ir::graph::Op;
    use smelt_ir::{DType, ErrorKind, Scalar, View};

    /// A pending tensor recorded on `device` without touching it: device rules are checked
    /// when an op is recorded, before anything runs, so no GPU is needed to test them.
    #[track_caller]
    fn placed(device: Device, shape: &[usize]) -> Tensor {
        Tensor::from_node(LazyNode::pending_on(
            device,
            Op::Fill {
                value: Scalar::Float(1.0),
            },
            DType::F32,
            1,
            View::new(shape.to_vec(), vec![0; shape.len()], 0),
            vec![],
        ))
    }

    #[test]
    fn mixing_devices_is_a_device_error_naming_both_and_the_op() {
        let gpu = placed(Device::Cuda(0), &[2, 3]);
        let host = Tensor::ones(&[2, 3], None);
        for r in [gpu.try_add(&host), host.try_add(&gpu), gpu.try_mul(&host)] {
            let e = r.expect_err("two devices");
            assert_eq!(e.kind, ErrorKind::Device, "{e}");
            assert!(
                e.message
                    .contains("Expected all tensors to be on the same device"),
                "{e}"
            );
            assert!(
                e.message.contains("cuda:0") && e.message.contains("cpu"),
                "{e}"
            );
        }
        let e = gpu.try_add(&host).unwrap_err();
        assert!(e.message.starts_with("add:"), "{e}");
        let other = placed(Device::Cuda(1), &[2, 3]);
        let e = gpu.try_add(&other).unwrap_err();
        assert!(e.message.contains("cuda:0 and cuda:1"), "{e}");
        let e = gpu.try_matmul(&host.t()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Device, "{e}");
        let e = Tensor::try_cat(&[gpu.clone(), host.clone()], 0).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Device, "{e}");
        // `copy_` copies across devices (PyTorch's way of moving data): without a GPU the
        // copy fails because the device is unusable, never because the devices differ.
        if let Err(e) = placed(Device::Cuda(0), &[2, 3]).try_copy_(&host) {
            assert_eq!(e.kind, ErrorKind::Device, "{e}");
            assert!(e.message.contains("unavailable"), "{e}");
        }
        let idx = Tensor::new([0i64, 1]);
        let e = gpu.try_index_select(0, &idx).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Device, "{e}");
        let mask = Tensor::ones(&[2, 3], Some(DType::Bool));
        let e = gpu.try_masked_fill(&mask, 0.0).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Device, "{e}");
        let cond = placed(Device::Cuda(0), &[2, 3]).try_gt(0.0).unwrap();
        let e = Tensor::try_where(&cond, &host, 1.0).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Device, "{e}");
    }

    #[test]
    fn rust_scalars_join_any_device_and_results_stay_there() {
        let gpu = placed(Device::Cuda(0), &[2, 3]);
        let y = (&gpu * 2.0 + 1.0).exp().sum(&[1], false, None);
        assert_eq!(y.device(), Device::Cuda(0));
        assert_eq!(
            gpu.t().device(),
            Device::Cuda(0),
            "a view stays on its device"
        );
        assert_eq!(gpu.try_gt(0.5).unwrap().device(), Device::Cuda(0));
    }

    #[test]
    fn a_zero_dim_host_tensor_joins_an_elementwise_op_only() {
        // The rule alone (joining a device op would copy the scalar there, which needs a GPU).
        let gpu = placed(Device::Cuda(0), &[2, 3]);
        let scalar = Tensor::scalar(2.0, DType::F32);
        let vector = Tensor::ones(&[3], None);
        assert_eq!(
            common_device("add", &[&gpu, &scalar], true),
            Ok(Device::Cuda(0))
        );
        assert_eq!(
            common_device("add", &[&scalar, &gpu], true),
            Ok(Device::Cuda(0))
        );
        assert_eq!(
            common_device("add", &[&scalar, &vector], true),
            Ok(Device::Cpu)
        );
        assert!(common_device("add", &[&gpu, &vector], true).is_err());
        assert!(common_device("matmul", &[&gpu, &scalar], false).is_err());
        let other = placed(Device::Cuda(1), &[]);
        assert!(common_device("add", &[&gpu, &scalar, &other], true).is_err());
    }

    #[test]
    fn the_default_device_is_per_thread_and_scoped() {
        assert_eq!(
            get_default_device(),
            Device::from_env().unwrap_or(Device::Cpu)
        );
        let inside = with_default_device(Device::Cuda(3), get_default_device);
        assert_eq!(inside, Device::Cuda(3));
        assert_ne!(get_default_device(), Device::Cuda(3));
        // A factory records on the default device; nothing runs, so no GPU is needed.
        let z = with_default_device(Device::Cuda(3), || Tensor::zeros(&[2], None));
        assert_eq!(z.device(), Device::Cuda(3));
        assert!(
            std::thread::spawn(|| get_default_device() != Device::Cuda(3))
                .join()
                .unwrap()
        );
    }

    #[test]
    fn to_the_same_device_is_the_tensor_and_to_an_unusable_one_is_an_error() {
        let x = Tensor::new([[1.0f32, 2.0], [3.0, 4.0]]);
        let same = x.to(Device::Cpu);
        assert!(same.is_same(&x));
        if smelt_runtime::cuda::device_count() == 0 {
            let e = x.try_to(Device::Cuda(0)).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Device, "{e}");
            assert!(e.message.contains("unavailable"), "{e}");
        }
    }
}
