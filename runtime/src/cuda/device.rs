//! CUDA devices: probed once (the driver loads, the ordinal exists, NVRTC is found), then per
//! device a context, one stream every launch and copy of the device is queued on, a caching
//! allocator, pinned staging buffers for host copies, the kernels loaded so far and a cuBLAS
//! handle.

use super::memory::{DeviceMemory, Staging};
use crate::caching::CachingAllocator;
use cudarc::driver::{CudaContext, CudaStream, sys};
use smelt_ir::{Error, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// One usable device: the CUDA backend of the realisations that target it.
pub struct CudaDevice {
    pub ordinal: usize,
    pub name: String,
    /// `sm_XY`, what NVRTC compiles for.
    pub arch: String,
    /// This device as an `Arc`, for the buffers it hands out (each keeps its device alive).
    me: Weak<CudaDevice>,
    pub(super) ctx: Arc<CudaContext>,
    pub(super) stream: Arc<CudaStream>,
    pub(super) memory: CachingAllocator<DeviceMemory>,
    pub(super) staging: Staging,
    /// Loaded entry points by source hash (their modules stay loaded for the process).
    pub(super) functions: Mutex<HashMap<u64, Function>>,
    /// The cuBLAS handle on `stream`, created at the first matmul (after the library probe);
    /// a handle is used by one thread at a time.
    pub(super) blas: OnceLock<Result<Mutex<cudarc::cublas::CudaBlas>>>,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CudaDevice(cuda:{} {} {})",
            self.ordinal, self.name, self.arch
        )
    }
}

/// A kernel entry point loaded on a device.
#[derive(Clone, Copy, Debug)]
pub(super) struct Function(pub(super) sys::CUfunction);

// SAFETY: a CUfunction is an opaque driver handle valid in its context from any thread (the
// driver API is thread-safe; each call binds the device's context first).
unsafe impl Send for Function {}
// SAFETY: as above; the handle is never mutated through a shared reference.
unsafe impl Sync for Function {}

pub(crate) fn driver_error(what: &str, e: impl std::fmt::Debug) -> Error {
    Error::device(format!("CUDA {what} failed: {e:?}"))
}

/// How many devices the driver reports: `Err` says why CUDA is unusable.
pub fn driver_status() -> Result<usize> {
    static STATUS: OnceLock<Result<usize>> = OnceLock::new();
    STATUS
        .get_or_init(|| {
            // SAFETY: probing dlopens cudarc's candidate names for libcuda and closes them.
            if !unsafe { sys::is_culib_present() } {
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

impl CudaDevice {
    /// This device as an `Arc`.
    pub(super) fn arc(&self) -> Arc<CudaDevice> {
        self.me
            .upgrade()
            .expect("invariant: a device lives for the process")
    }

    /// Makes this device's context current on the calling thread (every raw driver call
    /// needs it; realisations run on any thread).
    pub(super) fn bind(&self) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| driver_error("context binding", e))
    }

    /// The raw stream.
    pub(super) fn cu_stream(&self) -> sys::CUstream {
        self.stream.cu_stream()
    }

    /// Waits for everything queued on the device's stream.
    pub fn synchronize(&self) -> Result<()> {
        self.bind()?;
        self.stream
            .synchronize()
            .map_err(|e| driver_error("synchronize", e))
    }
}

/// The devices opened so far, by ordinal.
fn devices() -> std::sync::MutexGuard<'static, HashMap<usize, Arc<CudaDevice>>> {
    static DEVICES: OnceLock<Mutex<HashMap<usize, Arc<CudaDevice>>>> = OnceLock::new();
    DEVICES
        .get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Device `ordinal` if this process opened it (never creates a context).
pub fn opened(ordinal: usize) -> Option<Arc<CudaDevice>> {
    devices().get(&ordinal).cloned()
}

/// Device `ordinal`, opened on first use.
pub fn device(ordinal: usize) -> Result<Arc<CudaDevice>> {
    let count = driver_status()?;
    if ordinal >= count {
        return Err(Error::device(format!(
            "cuda:{ordinal} is unavailable: {count} CUDA device(s) present"
        )));
    }
    smelt_codegen::cuda::compile::nvrtc_status()
        .map_err(|e| Error::device(format!("cuda:{ordinal} is unavailable: {}", e.message)))?;
    let mut devices = devices();
    if let Some(d) = devices.get(&ordinal) {
        return Ok(d.clone());
    }
    let ctx = CudaContext::new(ordinal).map_err(|e| driver_error("context creation", e))?;
    // smelt tracks the order of its own work (one stream per device, buffers reused only
    // after their last use was queued), so cudarc's per-buffer events are not needed.
    // SAFETY: nothing else uses cudarc's tracked buffers on this context.
    unsafe { ctx.disable_event_tracking() };
    let (major, minor) = ctx
        .compute_capability()
        .map_err(|e| driver_error("compute capability query", e))?;
    let name = ctx
        .name()
        .map_err(|e| driver_error("device name query", e))?;
    let stream = ctx
        .new_stream()
        .map_err(|e| driver_error("stream creation", e))?;
    let dev = Arc::new_cyclic(|me| CudaDevice {
        ordinal,
        name,
        arch: format!("sm_{major}{minor}"),
        me: me.clone(),
        memory: CachingAllocator::new(DeviceMemory::new(ctx.clone(), stream.clone())),
        staging: Staging::default(),
        ctx,
        stream,
        functions: Mutex::new(HashMap::new()),
        blas: OnceLock::new(),
    });
    devices.insert(ordinal, dev.clone());
    Ok(dev)
}

/// Milliseconds of device time between two events around the work `f` queues. With
/// `SMELT_DUMP=queue` a line on standard error also says how long the host took to queue it:
/// a host slower than the device leaves the device idle between launches.
pub(super) fn time<R>(dev: &CudaDevice, f: impl FnOnce() -> Result<R>) -> Result<(R, f64)> {
    use cudarc::driver::result::event;
    dev.synchronize()?;
    // cudarc's CUDA 13 bindings read an elapsed time with cuEventElapsedTime_v2, which drivers
    // have from CUDA 12.8; older ones are timed on the host around a synchronisation.
    if smelt_codegen::cuda::libraries::driver_version().is_none_or(|v| v < (12, 8)) {
        let t0 = std::time::Instant::now();
        let r = f()?;
        dev.synchronize()?;
        return Ok((r, t0.elapsed().as_secs_f64() * 1e3));
    }
    let create = || {
        event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
            .map_err(|e| driver_error("event creation", e))
    };
    let (start, end) = (create()?, create()?);
    // SAFETY: both events were created in this device's context, current on this thread; they
    // are recorded on its stream, waited for, read and destroyed here.
    let timed = unsafe {
        event::record(start, dev.cu_stream()).map_err(|e| driver_error("event record", e))?;
        let queueing = std::time::Instant::now();
        let r = f();
        let queued = queueing.elapsed();
        let ms = event::record(end, dev.cu_stream())
            .and_then(|_| event::synchronize(end))
            .and_then(|_| event::elapsed(start, end))
            .map_err(|e| driver_error("event timing", e));
        let _ = event::destroy(start);
        let _ = event::destroy(end);
        if let Ok(ms) = ms
            && crate::cpu::dump("queue")
        {
            eprintln!(
                "{}: queued in {:.4} ms on the host, ran {ms:.4} ms on the device",
                dev.label(),
                queued.as_secs_f64() * 1e3
            );
        }
        (r, ms)
    };
    Ok((timed.0?, timed.1? as f64))
}
