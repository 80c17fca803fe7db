//! The CUDA backend's load and launch roles (render and compile live in `smelt-codegen`): per
//! device a context and one stream, a caching allocator, pinned staging for host copies,
//! prepared kernels and library routines (rendered kernels, cuBLAS) on device buffers, and
//! the [`Backend`] implementation realisations on `cuda:N` run through.
//!
//! Everything here first checks that the `cuda` feature is built, that libcuda loads and that
//! NVRTC (and cuBLAS, for a matmul) of CUDA 13 or 12 is found (cudarc panics on a missing
//! library); otherwise it returns an `ErrorKind::Device` error saying what is missing. Without
//! the feature the types below exist but cannot be made.

#[cfg(feature = "cuda")]
mod blas;
#[cfg(feature = "cuda")]
mod device;
pub mod gemm_plan;
#[cfg(feature = "cuda")]
mod launch;
#[cfg(feature = "cuda")]
mod memory;

use crate::backend::{Backend, Executable};
use crate::buffer::{Buffer, HostBuffer};
use crate::caching::AllocatorStats;
use crate::device::Target;
use smelt_ir::{DType, Kernel, LibraryCall, Result, Work};
use std::sync::Arc;

#[cfg(feature = "cuda")]
pub use device::CudaDevice;
#[cfg(feature = "cuda")]
pub use launch::Prepared;
#[cfg(feature = "cuda")]
pub use memory::CudaBuffer;

#[cfg(not(feature = "cuda"))]
pub use absent::{CudaBuffer, CudaDevice, Prepared};

/// Usable CUDA devices (0 without the feature, the driver or NVRTC).
pub fn device_count() -> usize {
    #[cfg(feature = "cuda")]
    {
        match device::driver_status() {
            Ok(n) if smelt_codegen::cuda::compile::nvrtc_status().is_ok() => n,
            Ok(_) | Err(_) => 0,
        }
    }
    #[cfg(not(feature = "cuda"))]
    {
        0
    }
}

/// The backend of device `ordinal`, opened on first use; a `device` error naming what is
/// missing when it cannot be.
pub fn backend(ordinal: usize) -> Result<Arc<CudaDevice>> {
    #[cfg(feature = "cuda")]
    {
        device::device(ordinal)
    }
    #[cfg(not(feature = "cuda"))]
    {
        Err(absent::unavailable(ordinal))
    }
}

/// A line describing CUDA device `ordinal` (name, architecture) or why it is unavailable.
pub fn status(ordinal: usize) -> Result<String> {
    let dev = backend(ordinal)?;
    Ok(format!("cuda:{ordinal} {}", dev.describe()))
}

/// The values of a device buffer on the host (after the work queued before the copy).
pub(crate) fn download(b: &CudaBuffer) -> Result<HostBuffer> {
    #[cfg(feature = "cuda")]
    {
        memory::download(b)
    }
    #[cfg(not(feature = "cuda"))]
    {
        match b.0 {}
    }
}

/// Elements `lo..lo + len` of a device buffer on the host.
pub(crate) fn download_range(b: &CudaBuffer, lo: usize, len: usize) -> Result<HostBuffer> {
    #[cfg(feature = "cuda")]
    {
        memory::download_range(b, lo, len)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (lo, len);
        match b.0 {}
    }
}

/// `b`'s values in a new buffer on device `ordinal` (from the host, or through the host from
/// another device).
pub(crate) fn upload_to(ordinal: usize, b: &Buffer) -> Result<Buffer> {
    let dev = backend(ordinal)?;
    let host = b.to_host()?;
    dev.upload(host)
}

/// The caching allocator's counters of device `ordinal`, once this process opened it (asking
/// never opens a device).
pub fn memory_stats(ordinal: usize) -> Option<AllocatorStats> {
    #[cfg(feature = "cuda")]
    {
        device::opened(ordinal).map(|d| d.memory.stats())
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = ordinal;
        None
    }
}

/// Lines for `smelt info`: the driver, each library found (its CUDA major and the file
/// actually in use) or why not, and each device.
pub fn report() -> Vec<String> {
    #[cfg(feature = "cuda")]
    {
        use smelt_codegen::cuda::compile::{nvrtc_in_use, nvrtc_library, nvrtc_status};
        let mut lines = vec![];
        lines.push(match smelt_codegen::cuda::libraries::driver_version() {
            Some((major, minor)) => format!("CUDA driver: supports CUDA {major}.{minor}"),
            None => "CUDA driver: libcuda.so.1 not found".to_string(),
        });
        // The file cudarc's calls go to, and a warning when its own search reached another
        // copy than the one found (an unversioned library earlier on the loader's path).
        let in_use = |found: &std::path::Path, used: Option<std::path::PathBuf>| {
            let canonical = |p: &std::path::Path| std::fs::canonicalize(p).ok();
            match used {
                Some(u) if found.is_absolute() && canonical(&u) != canonical(found) => format!(
                    "{} (found {}, but cudarc loaded the copy it found first)",
                    u.display(),
                    found.display()
                ),
                Some(u) => u.display().to_string(),
                None => found.display().to_string(),
            }
        };
        lines.push(match (nvrtc_library(), nvrtc_status()) {
            (Ok(found), Ok((major, minor))) => format!(
                "NVRTC: {major}.{minor} (CUDA {}), {}",
                found.major,
                in_use(&found.path, nvrtc_in_use())
            ),
            (Err(e), _) | (_, Err(e)) => e.message,
        });
        lines.push(match blas::cublas_library() {
            Ok(found) => format!(
                "cuBLAS: CUDA {}, {}",
                found.major,
                in_use(&found.path, blas::cublas_in_use())
            ),
            Err(e) => e.message,
        });
        match device::driver_status() {
            Ok(n) => {
                for i in 0..n {
                    lines.push(status(i).unwrap_or_else(|e| e.message));
                }
            }
            Err(e) => lines.push(e.message),
        }
        lines
    }
    #[cfg(not(feature = "cuda"))]
    {
        vec!["CUDA: smelt was built without the `cuda` feature".to_string()]
    }
}

/// Whether cuBLAS loads: `Err` is a `device` error naming the missing library.
pub fn cublas_status() -> Result<()> {
    #[cfg(feature = "cuda")]
    {
        blas::cublas_library().map(|_| ())
    }
    #[cfg(not(feature = "cuda"))]
    {
        Err(smelt_ir::Error::device(
            "cuBLAS is unavailable: smelt was built without the `cuda` feature",
        ))
    }
}

impl CudaDevice {
    /// The device's name and architecture.
    pub fn describe(&self) -> String {
        #[cfg(feature = "cuda")]
        {
            format!("{} ({})", self.name, self.arch)
        }
        #[cfg(not(feature = "cuda"))]
        {
            match self.0 {}
        }
    }

    /// The caching allocator's counters.
    pub fn memory(&self) -> AllocatorStats {
        #[cfg(feature = "cuda")]
        {
            self.memory.stats()
        }
        #[cfg(not(feature = "cuda"))]
        {
            match self.0 {}
        }
    }

    /// `cuda:N <name>`, as benchmarks label their rows.
    pub fn label(&self) -> String {
        #[cfg(feature = "cuda")]
        {
            format!("cuda:{} {}", self.ordinal, self.name)
        }
        #[cfg(not(feature = "cuda"))]
        {
            match self.0 {}
        }
    }

    /// Milliseconds of device time the work `f` queues takes, measured with CUDA events on the
    /// device's stream (after a synchronisation, so only `f`'s work is between them).
    pub fn time<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<(R, f64)> {
        #[cfg(feature = "cuda")]
        {
            device::time(self, f)
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = f;
            match self.0 {}
        }
    }

    /// The device-to-device copy bandwidth in GB/s (bytes read plus written) over buffers of
    /// `bytes` bytes: the limit `smelt bench --device cuda` measures kernels against.
    pub fn copy_bandwidth(&self, bytes: usize) -> Result<f64> {
        #[cfg(feature = "cuda")]
        {
            memory::copy_bandwidth(self, bytes)
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = bytes;
            match self.0 {}
        }
    }

    /// Gives every cached block back to the driver.
    pub fn empty_cache(&self) {
        #[cfg(feature = "cuda")]
        {
            self.memory.empty_cache()
        }
        #[cfg(not(feature = "cuda"))]
        {
            match self.0 {}
        }
    }
}

/// `step()`, timed on the device when `SMELT_DUMP` names `timing`: the host waits for the
/// step, so each line is that kernel's (or library call's) own device time, and a line per
/// step goes to standard error. Otherwise `step()` queued as usual.
#[cfg(feature = "cuda")]
fn timed<R>(dev: &CudaDevice, name: &str, step: impl FnOnce() -> Result<R>) -> Result<R> {
    if !crate::cpu::dump("timing") {
        return step();
    }
    let (r, ms) = device::time(dev, step)?;
    eprintln!("{}: {name} {ms:.4} ms on the device", dev.label());
    Ok(r)
}

impl Backend for CudaDevice {
    type Prepared = Prepared;

    fn target(&self) -> Target {
        #[cfg(feature = "cuda")]
        {
            Target::Cuda(self.ordinal)
        }
        #[cfg(not(feature = "cuda"))]
        {
            match self.0 {}
        }
    }

    fn prepare(&self, work: &Work) -> Result<Prepared> {
        #[cfg(feature = "cuda")]
        {
            let mut one = launch::prepare(self, &[work])?;
            Ok(one.pop().expect("one step prepared per work"))
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = work;
            match self.0 {}
        }
    }

    fn prepared(&self, exec: &Executable) -> Result<Arc<[Prepared]>> {
        #[cfg(feature = "cuda")]
        {
            let find = || {
                let slots = exec.cuda.lock().unwrap_or_else(|p| p.into_inner());
                slots
                    .iter()
                    .find(|(n, _)| *n == self.ordinal)
                    .map(|(_, p)| p.clone())
            };
            if let Some(p) = find() {
                return Ok(p);
            }
            let works: Vec<&Work> = exec.schedule().steps.iter().map(|s| &s.work).collect();
            let p: Arc<[Prepared]> = launch::prepare(self, &works)?.into();
            let mut slots = exec.cuda.lock().unwrap_or_else(|p| p.into_inner());
            match slots.iter().find(|(n, _)| *n == self.ordinal) {
                Some((_, kept)) => Ok(kept.clone()),
                None => {
                    slots.push((self.ordinal, p.clone()));
                    Ok(p)
                }
            }
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = exec;
            match self.0 {}
        }
    }

    fn run_kernel(
        &self,
        kernel: &Kernel,
        prepared: &Prepared,
        args: Vec<Buffer>,
    ) -> Result<Vec<Buffer>> {
        #[cfg(feature = "cuda")]
        {
            let launch::Step::Kernel(l) = &prepared.0 else {
                panic!("invariant: a kernel step is prepared as a kernel")
            };
            timed(self, &kernel.name, || {
                launch::run_kernel(self, kernel, l, args)
            })
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (kernel, prepared, args);
            match self.0 {}
        }
    }

    fn run_library(
        &self,
        call: &LibraryCall,
        prepared: &Prepared,
        args: Vec<Buffer>,
    ) -> Result<Buffer> {
        #[cfg(feature = "cuda")]
        {
            let name = format!("{:?} {}", call.op, call.out);
            timed(self, &name, || {
                launch::run_library(self, call, &prepared.0, args)
            })
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (call, prepared, args);
            match self.0 {}
        }
    }

    fn zeros(&self, dtype: DType, len: usize) -> Result<Buffer> {
        #[cfg(feature = "cuda")]
        {
            memory::CudaBuffer::zeros(self, dtype, len).map(|b| Buffer::Cuda(Arc::new(b)))
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (dtype, len);
            match self.0 {}
        }
    }

    fn upload(&self, host: Arc<HostBuffer>) -> Result<Buffer> {
        #[cfg(feature = "cuda")]
        {
            memory::upload(self, &host).map(|b| Buffer::Cuda(Arc::new(b)))
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = host;
            match self.0 {}
        }
    }

    fn synchronize(&self) -> Result<()> {
        #[cfg(feature = "cuda")]
        {
            CudaDevice::synchronize(self)
        }
        #[cfg(not(feature = "cuda"))]
        {
            match self.0 {}
        }
    }
}

/// The CUDA types when smelt is built without the `cuda` feature: uninhabited, so no value of
/// them exists and every method is unreachable by construction.
#[cfg(not(feature = "cuda"))]
mod absent {
    use smelt_ir::{DType, Error};

    #[derive(Debug)]
    pub enum Never {}

    /// A CUDA device (none can be opened in this build).
    #[derive(Debug)]
    pub struct CudaDevice(pub(super) Never);

    /// A device buffer (none can exist in this build).
    #[derive(Debug)]
    pub struct CudaBuffer(pub(super) Never);

    /// A step prepared for a device (none can be in this build).
    #[derive(Debug)]
    pub struct Prepared(pub(super) Never);

    impl CudaBuffer {
        pub fn dtype(&self) -> DType {
            match self.0 {}
        }
        pub fn len(&self) -> usize {
            match self.0 {}
        }
        pub fn device(&self) -> crate::device::Device {
            match self.0 {}
        }
    }

    pub fn unavailable(ordinal: usize) -> Error {
        Error::device(format!(
            "cuda:{ordinal} is unavailable: smelt was built without the `cuda` feature"
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
        assert!(!report().is_empty());
        if device_count() == 0 {
            assert!(memory_stats(0).is_none());
        }
    }

    /// Every kernel, library call and matmul on `cuda:0` against the host: without CUDA a
    /// `device` error naming what is missing; with it the host's values.
    #[test]
    fn a_cuda_matmul_is_a_device_error_or_matches_the_host() {
        use smelt_ir::{LibraryOp, View};
        let a: Vec<f32> = (0..12).map(|i| (i % 5) as f32 - 2.0).collect();
        let b: Vec<f32> = (0..20).map(|i| (i % 7) as f32 - 3.0).collect();
        let inputs = [
            Arc::new(HostBuffer::F32(a.into())),
            Arc::new(HostBuffer::F32(b.into())),
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
        let run = || -> Result<HostBuffer> {
            let dev = backend(0)?;
            let prepared = dev.prepare(&Work::Library(call.clone()))?;
            let args = inputs
                .iter()
                .map(|h| dev.upload(h.clone()))
                .collect::<Result<Vec<_>>>()?;
            let out = dev.run_library(&call, &prepared, args)?;
            out.to_host().map(|h| (*h).clone())
        };
        let usable = status(0).and_then(|_| cublas_status());
        match (usable, run()) {
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
            assert!(e.message.contains("cuBLAS is unavailable"), "{e}");
        }
    }
}
