//! CUDA devices: probed once (libcuda present, ordinal in range), then a context, a stream, a
//! buffer pool and the loaded kernels per device.

use super::pool::Pool;
use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream};
use smelt_ir::{Error, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// One usable device.
#[derive(Debug)]
pub struct CudaDevice {
    pub name: String,
    /// `sm_XY`, what NVRTC compiles for.
    pub arch: String,
    pub stream: Arc<CudaStream>,
    pub pool: Pool,
    /// Loaded entry points by source hash.
    pub functions: Mutex<HashMap<u64, CudaFunction>>,
    /// The cuBLAS handle on `stream`, created at the first matmul (after the library probe).
    pub blas: OnceLock<Result<CudaBlas>>,
    _ctx: Arc<CudaContext>,
}

pub(crate) fn driver_error(what: &str, e: impl std::fmt::Debug) -> Error {
    Error::device(format!("CUDA {what} failed: {e:?}"))
}

/// Whether libcuda loads: `Err` says why not.
fn driver_status() -> Result<usize> {
    static STATUS: OnceLock<Result<usize>> = OnceLock::new();
    STATUS
        .get_or_init(|| {
            // SAFETY: probing dlopens cudarc's candidate names for libcuda and closes them.
            if !unsafe { cudarc::driver::sys::is_culib_present() } {
                return Err(Error::device(
                    "CUDA is unavailable: the driver library libcuda.so.1 was not found \
                     (no NVIDIA driver installed, or not on the library path)",
                ));
            }
            let count = CudaContext::device_count().map_err(|e| {
                Error::device(format!(
                    "CUDA is unavailable: cuDeviceGetCount failed: {e:?}"
                ))
            })?;
            Ok(count.max(0) as usize)
        })
        .clone()
}

/// Device `ordinal`, opened on first use.
pub fn device(ordinal: usize) -> Result<Arc<CudaDevice>> {
    static DEVICES: OnceLock<Mutex<HashMap<usize, Arc<CudaDevice>>>> = OnceLock::new();
    let count = driver_status()?;
    if ordinal >= count {
        return Err(Error::device(format!(
            "cuda:{ordinal} is unavailable: {count} CUDA device(s) present"
        )));
    }
    smelt_codegen::cuda::compile::nvrtc_status()
        .map_err(|e| Error::device(format!("cuda:{ordinal} is unavailable: {}", e.message)))?;
    let devices = DEVICES.get_or_init(|| Mutex::new(HashMap::new()));
    let mut devices = devices.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(d) = devices.get(&ordinal) {
        return Ok(d.clone());
    }
    let ctx = CudaContext::new(ordinal).map_err(|e| driver_error("context creation", e))?;
    let (major, minor) = ctx
        .compute_capability()
        .map_err(|e| driver_error("compute capability query", e))?;
    let name = ctx
        .name()
        .map_err(|e| driver_error("device name query", e))?;
    let dev = Arc::new(CudaDevice {
        name,
        arch: format!("sm_{major}{minor}"),
        stream: ctx.default_stream(),
        pool: Pool::default(),
        functions: Mutex::new(HashMap::new()),
        blas: OnceLock::new(),
        _ctx: ctx,
    });
    devices.insert(ordinal, dev.clone());
    Ok(dev)
}
