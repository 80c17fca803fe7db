//! Device memory: [`CudaBuffer`] (a typed block from the device's caching allocator, given
//! back when the last handle drops), the raw allocator under the cache, and host↔device
//! copies through pinned staging buffers.
//!
//! Every copy and launch of a device is queued on its one stream, so a block given back after
//! its last reader was queued is only reused by work queued later: no event per buffer. Copies
//! to the device are asynchronous (the host copies into a pinned chunk, queues the transfer
//! and moves on; a chunk is refilled only once its transfer finished); copies to the host wait
//! for the work queued before them, because the caller wants the values.

use super::device::{CudaDevice, driver_error};
use crate::buffer::HostBuffer;
use crate::caching::{Cached, RawMemory};
use crate::device::Device;
use crate::stats::{Transfer, count_transfer};
use cudarc::driver::{CudaContext, CudaStream, result, sys};
use smelt_ir::{DType, Result};
use std::sync::{Arc, Mutex};

/// A device address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevicePtr(pub sys::CUdeviceptr);

/// `cuMemAlloc`/`cuMemFree` on one device: what the caching allocator calls on a miss.
pub(crate) struct DeviceMemory {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
}

impl DeviceMemory {
    pub(super) fn new(ctx: Arc<CudaContext>, stream: Arc<CudaStream>) -> DeviceMemory {
        DeviceMemory { ctx, stream }
    }
}

impl std::fmt::Debug for DeviceMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceMemory(cuda:{})", self.ctx.ordinal())
    }
}

/// A failed device allocation: out of memory (the cache may be given back and the
/// allocation tried again), or a broken device.
#[derive(Debug)]
pub(crate) struct AllocError {
    out_of_memory: bool,
    error: smelt_ir::Error,
}

impl From<AllocError> for smelt_ir::Error {
    fn from(e: AllocError) -> smelt_ir::Error {
        e.error
    }
}

impl RawMemory for DeviceMemory {
    type Block = DevicePtr;
    type Error = AllocError;

    fn allocate(&self, bytes: usize) -> std::result::Result<DevicePtr, AllocError> {
        let broken = |error| AllocError {
            out_of_memory: false,
            error,
        };
        self.ctx
            .bind_to_thread()
            .map_err(|e| broken(driver_error("context binding", e)))?;
        // SAFETY: the context is current; the memory is uninitialised until a copy, a memset
        // or a kernel writes it, which every user of a fresh block does before reading.
        unsafe { result::malloc_sync(bytes) }
            .map(DevicePtr)
            .map_err(|e| {
                let out_of_memory = e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY;
                AllocError {
                    out_of_memory,
                    // PyTorch's message (torch.OutOfMemoryError) for the memory kind.
                    error: if out_of_memory {
                        smelt_ir::Error::memory(format!(
                            "CUDA out of memory. Tried to allocate {bytes} bytes."
                        ))
                    } else {
                        driver_error(&format!("allocation of {bytes} bytes"), e)
                    },
                }
            })
    }

    fn out_of_memory(error: &AllocError) -> bool {
        error.out_of_memory
    }

    fn before_release(&self) {
        // Work queued before may still use the blocks: let it finish first.
        if self.ctx.bind_to_thread().is_ok() {
            let _ = self.stream.synchronize();
        }
    }

    fn release(&self, block: DevicePtr) {
        // SAFETY: the block came from `malloc_sync` on this context, is handed out by no one
        // (only cached blocks are released) and no queued work uses it (`before_release`).
        let _ = unsafe { result::free_sync(block.0) };
    }
}

/// A buffer of `len` elements of `dtype` in a device's memory.
pub struct CudaBuffer {
    dtype: DType,
    len: usize,
    block: Option<Cached<DevicePtr>>,
    dev: Arc<CudaDevice>,
}

impl std::fmt::Debug for CudaBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CudaBuffer({} × {} on cuda:{})",
            self.len, self.dtype, self.dev.ordinal
        )
    }
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            self.dev.memory.free(block);
        }
    }
}

impl CudaBuffer {
    /// A buffer whose contents are unspecified: for a producer that writes every element.
    /// Debug builds fill it with all-ones bytes (NaN for floats) so a kernel that skips an
    /// element fails its tests instead of reading back a stale right answer.
    pub(super) fn uninit(dev: &CudaDevice, dtype: DType, len: usize) -> Result<CudaBuffer> {
        let b = CudaBuffer::allocate(dev, dtype, len)?;
        if cfg!(debug_assertions) && dtype != DType::Bool {
            b.fill_bytes(0xff)?;
        }
        Ok(b)
    }

    /// A block of the caching allocator for `len` elements of `dtype`. Buffers are real, as on
    /// the host (`HostBuffer::zeros`): a complex dtype gives `2 * len` elements of its real
    /// counterpart, the parts of each element in turn.
    fn allocate(dev: &CudaDevice, dtype: DType, len: usize) -> Result<CudaBuffer> {
        let (dtype, len) = (dtype.storage(), len.saturating_mul(dtype.parts()));
        dev.bind()?;
        let bytes = len.checked_mul(dtype.size()).ok_or_else(|| {
            smelt_ir::Error::memory(format!("CUDA: a buffer of {len} {dtype} overflows"))
        })?;
        let block = dev.memory.allocate(bytes)?;
        Ok(CudaBuffer {
            dtype,
            len,
            block: Some(block),
            dev: dev.arc(),
        })
    }

    /// A buffer of no elements (a placeholder argument nothing reads).
    pub(super) fn empty(dev: &CudaDevice) -> Result<CudaBuffer> {
        CudaBuffer::zeros(dev, DType::U8, 0)
    }

    /// A buffer of zeros.
    pub(super) fn zeros(dev: &CudaDevice, dtype: DType, len: usize) -> Result<CudaBuffer> {
        let b = CudaBuffer::allocate(dev, dtype, len)?;
        b.fill_bytes(0)?;
        Ok(b)
    }

    fn fill_bytes(&self, byte: u8) -> Result<()> {
        if self.nbytes() == 0 {
            return Ok(());
        }
        // SAFETY: the block holds at least `nbytes` bytes; the memset is queued on the
        // device's stream, before any work that reads the buffer.
        unsafe { result::memset_d8_async(self.ptr(), byte, self.nbytes(), self.dev.cu_stream()) }
            .map_err(|e| driver_error("memset", e))
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn nbytes(&self) -> usize {
        self.len * self.dtype.size()
    }

    pub fn device(&self) -> Device {
        Device::Cuda(self.dev.ordinal)
    }

    /// The device that holds it.
    pub(super) fn dev(&self) -> &Arc<CudaDevice> {
        &self.dev
    }

    /// The address of element 0.
    pub(super) fn ptr(&self) -> sys::CUdeviceptr {
        self.block
            .as_ref()
            .expect("invariant: a live buffer holds its block")
            .block
            .0
    }

    /// A copy on the same device (queued).
    pub(super) fn duplicate(&self) -> Result<CudaBuffer> {
        let copy = CudaBuffer::uninit(&self.dev, self.dtype, self.len)?;
        if self.nbytes() > 0 {
            // SAFETY: both blocks hold `nbytes` bytes and are distinct allocations; the copy
            // is queued after every write of `self` already queued.
            unsafe {
                result::memcpy_dtod_async(
                    copy.ptr(),
                    self.ptr(),
                    self.nbytes(),
                    self.dev.cu_stream(),
                )
            }
            .map_err(|e| driver_error("device-to-device copy", e))?;
        }
        Ok(copy)
    }
}

/// Bytes of one pinned staging chunk; larger copies go through several.
const CHUNK: usize = 4 << 20;
/// Chunks a device makes at most: enough to keep the copy engine busy while the host fills
/// the next.
const CHUNKS: usize = 4;

/// Pinned (page-locked) host chunks for copies: the DMA engine reads and writes them directly,
/// and a copy from them is truly asynchronous. Chunks are reused oldest first, so a large
/// upload fills one chunk while the transfers of the others run.
#[derive(Debug, Default)]
pub(crate) struct Staging {
    chunks: Mutex<std::collections::VecDeque<Pinned>>,
    /// Chunks made so far (at most [`CHUNKS`]).
    made: Mutex<usize>,
}

/// One pinned chunk and the event of the last transfer that used it.
#[derive(Debug)]
struct Pinned {
    ptr: *mut u8,
    done: Option<sys::CUevent>,
}

// SAFETY: the chunk is plain host memory and the event an opaque driver handle; a chunk is used
// by one thread at a time (it is taken out of the pool while in use).
unsafe impl Send for Pinned {}

impl Staging {
    /// A chunk whose previous transfer has finished: the oldest when its transfer is done or no
    /// more chunks may be made (then waiting for it), else a new one.
    fn take(&self, dev: &CudaDevice) -> Result<Pinned> {
        let oldest = {
            let mut chunks = self.chunks.lock().unwrap_or_else(|p| p.into_inner());
            let made = *self.made.lock().unwrap_or_else(|p| p.into_inner());
            let ready = chunks.front().is_some_and(|c| {
                // SAFETY: the event was created on this device's context, bound by the caller.
                c.done
                    .is_none_or(|e| unsafe { result::event::query(e) }.is_ok())
            });
            if ready || made >= CHUNKS {
                chunks.pop_front()
            } else {
                None
            }
        };
        if let Some(chunk) = oldest {
            if let Some(event) = chunk.done {
                // SAFETY: as above; recorded after the chunk's last transfer.
                unsafe { result::event::synchronize(event) }
                    .map_err(|e| driver_error("event synchronize", e))?;
            }
            return Ok(chunk);
        }
        dev.bind()?;
        // SAFETY: the context is current; the chunk is written before it is read.
        let ptr = unsafe { result::malloc_host(CHUNK, 0) }
            .map_err(|e| driver_error("pinned host allocation", e))?;
        *self.made.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        Ok(Pinned {
            ptr: ptr.cast(),
            done: None,
        })
    }

    /// Gives a chunk back, behind the others.
    fn give(&self, chunk: Pinned) {
        self.chunks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(chunk);
    }
}

/// Copies `host` to a new buffer on `dev` through pinned chunks; returns once every chunk is
/// queued (the last transfers may still run).
pub(super) fn upload(dev: &CudaDevice, host: &HostBuffer) -> Result<CudaBuffer> {
    let out = CudaBuffer::uninit(dev, host.dtype(), host.len())?;
    let bytes = host.as_bytes();
    for (i, part) in bytes.chunks(CHUNK).enumerate() {
        let mut chunk = dev.staging.take(dev)?;
        // SAFETY: the chunk holds CHUNK ≥ part.len() bytes, no transfer uses it any more
        // (`take` waited), and it does not overlap `part`.
        unsafe { std::ptr::copy_nonoverlapping(part.as_ptr(), chunk.ptr, part.len()) };
        // SAFETY: the source is `part.len()` pinned bytes kept unchanged until the event
        // recorded below has fired (the chunk is only refilled after `take` waits on it); the
        // destination lies inside the fresh buffer.
        let pinned = unsafe { std::slice::from_raw_parts(chunk.ptr, part.len()) };
        unsafe {
            result::memcpy_htod_async(out.ptr() + (i * CHUNK) as u64, pinned, dev.cu_stream())
        }
        .map_err(|e| driver_error("host-to-device copy", e))?;
        let event = match chunk.done {
            Some(e) => e,
            None => result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                .map_err(|e| driver_error("event creation", e))?,
        };
        // SAFETY: the event and the stream belong to this device's context.
        unsafe { result::event::record(event, dev.cu_stream()) }
            .map_err(|e| driver_error("event record", e))?;
        chunk.done = Some(event);
        dev.staging.give(chunk);
    }
    count_transfer(Transfer::HostToDevice, bytes.len());
    Ok(out)
}

/// Copies `b` to the host, after the work queued before it.
pub(super) fn download(b: &CudaBuffer) -> Result<HostBuffer> {
    download_range(b, 0, b.len())
}

/// Copies elements `lo..lo + len` of `b` to the host, after the work queued before it.
pub(super) fn download_range(b: &CudaBuffer, lo: usize, len: usize) -> Result<HostBuffer> {
    assert!(
        lo + len <= b.len(),
        "invariant: a download stays inside its buffer"
    );
    let dev = b.dev();
    dev.bind()?;
    let size = b.dtype().size();
    let start = b.ptr() + (lo * size) as u64;
    let mut bytes = vec![0u8; len * size];
    for (i, part) in bytes.chunks_mut(CHUNK).enumerate() {
        let chunk = dev.staging.take(dev)?;
        // SAFETY: the chunk holds CHUNK ≥ part.len() bytes and no transfer uses it; the source
        // range lies inside `b` (asserted above).
        let pinned = unsafe { std::slice::from_raw_parts_mut(chunk.ptr, part.len()) };
        unsafe { result::memcpy_dtoh_async(pinned, start + (i * CHUNK) as u64, dev.cu_stream()) }
            .map_err(|e| driver_error("device-to-host copy", e))?;
        dev.synchronize()?;
        part.copy_from_slice(pinned);
        dev.staging.give(chunk);
    }
    count_transfer(Transfer::DeviceToHost, bytes.len());
    Ok(HostBuffer::from_bytes(b.dtype(), &bytes))
}

/// The device-to-device copy bandwidth of `dev` in GB/s (bytes read plus written), the best
/// of five timed copies of `bytes` bytes after a warm-up: the limit a memory-bound kernel is
/// measured against.
pub(super) fn copy_bandwidth(dev: &CudaDevice, bytes: usize) -> Result<f64> {
    let src = CudaBuffer::zeros(dev, DType::U8, bytes)?;
    let dst = CudaBuffer::uninit(dev, DType::U8, bytes)?;
    let copy = || {
        // SAFETY: both buffers hold `bytes` bytes and are distinct allocations.
        unsafe { result::memcpy_dtod_async(dst.ptr(), src.ptr(), bytes, dev.cu_stream()) }
            .map_err(|e| driver_error("device-to-device copy", e))
    };
    copy()?;
    let mut best: f64 = 0.0;
    for _ in 0..5 {
        let ((), ms) = super::device::time(dev, copy)?;
        best = best.max(2.0 * bytes as f64 / (ms / 1e3) / 1e9);
    }
    Ok(best)
}
