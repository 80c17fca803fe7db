//! A per-device pool of byte buffers keyed by size: a buffer returns at its last use and the
//! next allocation of that size reuses it instead of calling the allocator.

use super::device::driver_error;
use cudarc::driver::{CudaSlice, CudaStream};
use smelt_ir::Result;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Debug, Default)]
pub struct Pool {
    free: Mutex<HashMap<usize, Vec<CudaSlice<u8>>>>,
}

impl Pool {
    /// A buffer of `bytes` (at least 1) with unspecified contents.
    pub fn take(&self, stream: &Arc<CudaStream>, bytes: usize) -> Result<CudaSlice<u8>> {
        let bytes = bytes.max(1);
        if let Some(b) = self.lock().get_mut(&bytes).and_then(Vec::pop) {
            return Ok(b);
        }
        // SAFETY: the contents are unspecified until written; every caller writes first.
        unsafe { stream.alloc::<u8>(bytes) }.map_err(|e| driver_error("allocation", e))
    }

    /// Returns `buffer` to the pool.
    pub fn give(&self, buffer: CudaSlice<u8>) {
        self.lock().entry(buffer.len()).or_default().push(buffer);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<usize, Vec<CudaSlice<u8>>>> {
        self.free.lock().unwrap_or_else(|p| p.into_inner())
    }
}
