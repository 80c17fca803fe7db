//! Statistics. Per thread: bytes of host buffers the runtime allocated or copied on the
//! current thread (realisation runs on the caller's thread); tests use it to show that
//! in-place updates reuse memory. Per process: copies between host and device memory.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

thread_local! {
    static BYTES_ALLOCATED: Cell<u64> = const { Cell::new(0) };
}

pub(crate) fn count_allocation(bytes: usize) {
    BYTES_ALLOCATED.with(|b| b.set(b.get().saturating_add(bytes as u64)));
}

/// Bytes of buffers allocated (or copied whole) on this thread so far.
pub fn bytes_allocated() -> u64 {
    BYTES_ALLOCATED.with(|b| b.get())
}

/// A direction of a copy between host and device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transfer {
    HostToDevice,
    DeviceToHost,
}

/// Copies between host and device memory so far, in this process: how `explain` and
/// `smelt bench` show that a realisation on a device copies nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transfers {
    pub host_to_device: u64,
    pub device_to_host: u64,
    pub bytes: u64,
}

impl Transfers {
    /// Copies in either direction.
    pub fn count(&self) -> u64 {
        self.host_to_device + self.device_to_host
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: Transfers) -> Transfers {
        Transfers {
            host_to_device: self.host_to_device - earlier.host_to_device,
            device_to_host: self.device_to_host - earlier.device_to_host,
            bytes: self.bytes - earlier.bytes,
        }
    }
}

static HOST_TO_DEVICE: AtomicU64 = AtomicU64::new(0);
static DEVICE_TO_HOST: AtomicU64 = AtomicU64::new(0);
static TRANSFER_BYTES: AtomicU64 = AtomicU64::new(0);

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn count_transfer(direction: Transfer, bytes: usize) {
    let counter = match direction {
        Transfer::HostToDevice => &HOST_TO_DEVICE,
        Transfer::DeviceToHost => &DEVICE_TO_HOST,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    TRANSFER_BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
}

/// Host↔device copies so far in this process.
pub fn transfers() -> Transfers {
    Transfers {
        host_to_device: HOST_TO_DEVICE.load(Ordering::Relaxed),
        device_to_host: DEVICE_TO_HOST.load(Ordering::Relaxed),
        bytes: TRANSFER_BYTES.load(Ordering::Relaxed),
    }
}
