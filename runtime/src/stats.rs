//! Allocation statistics, per thread: bytes of buffers the runtime allocated or copied on the
//! current thread (realisation runs on the caller's thread with the reference backend). Tests
//! use it to show that in-place updates reuse memory.

use std::cell::Cell;

thread_local! {
    static BYTES_ALLOCATED: Cell<u64> = const { Cell::new(0) };
}

pub(crate) fn count_allocation(bytes: usize) {
    BYTES_ALLOCATED.with(|b| b.set(b.get() + bytes as u64));
}

/// Bytes of buffers allocated (or copied whole) on this thread so far.
pub fn bytes_allocated() -> u64 {
    BYTES_ALLOCATED.with(|b| b.get())
}
