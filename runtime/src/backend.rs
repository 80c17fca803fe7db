//! The one seam between execution and where code runs: [`Backend`], implemented by the
//! reference interpreter (`reference.rs`), the cranelift JIT (`cpu.rs`) and each CUDA device
//! (`cuda/`). A realisation picks one [`Target`] and runs its whole schedule on that backend
//! (`execute.rs`); nothing above this trait asks which backend it is.
//!
//! The shape follows ug's `Device` and candle's `BackendDevice`/`BackendStorage`: a backend
//! allocates and copies buffers, prepares each step once (verifies a kernel, compiles it,
//! loads it) and keeps what it worked out in the [`Executable`], then launches kernels and
//! library routines on its own buffers. A prepared plan launches with no compile, render or
//! hash on the way.

use crate::buffer::{Buffer, HostBuffer};
use crate::device::Target;
use smelt_ir::{DType, Kernel, LibraryCall, Result, Schedule, Work};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

/// What a backend does. Buffers passed in live where the backend runs (the frontend keeps
/// every storage of a realisation on its target's device); outputs are fresh buffers there.
pub trait Backend: Sync {
    /// What [`Backend::prepare`] works out for one step, kept for every later launch.
    type Prepared: Send + Sync + 'static;

    /// Which target this is.
    fn target(&self) -> Target;

    /// Works out what launching `work` needs, whatever its buffers: a kernel is verified
    /// (a failure is a compiler bug) and compiled and loaded where the backend compiles.
    fn prepare(&self, work: &Work) -> Result<Self::Prepared>;

    /// `exec`'s steps prepared for this backend: worked out at the first run and kept in
    /// the executable, so a plan reused from the plan cache prepares nothing.
    fn prepared(&self, exec: &Executable) -> Result<Arc<[Self::Prepared]>>;

    /// Runs a prepared kernel on its read arguments (in argument order); returns its outputs
    /// in output order. An `Update` output may take its source's memory when `args` holds
    /// the only handle on it.
    fn run_kernel(
        &self,
        kernel: &Kernel,
        prepared: &Self::Prepared,
        args: Vec<Buffer>,
    ) -> Result<Vec<Buffer>>;

    /// Runs a prepared library routine (matmul, gather, sort …) on its inputs.
    fn run_library(
        &self,
        call: &LibraryCall,
        prepared: &Self::Prepared,
        args: Vec<Buffer>,
    ) -> Result<Buffer>;

    /// A buffer of `len` zeros of `dtype` on this backend.
    fn zeros(&self, dtype: DType, len: usize) -> Result<Buffer>;

    /// Host values copied to this backend (the same memory for a host backend).
    fn upload(&self, host: Arc<HostBuffer>) -> Result<Buffer>;

    /// Waits until every launch and copy queued so far has finished.
    fn synchronize(&self) -> Result<()>;
}

/// Prepares every step of `exec` for `backend` (each [`Backend::prepared`] keeps the result in
/// its own slot of the executable).
pub(crate) fn prepare_all<B: Backend>(
    backend: &B,
    exec: &Executable,
) -> Result<Arc<[B::Prepared]>> {
    exec.schedule
        .steps
        .iter()
        .map(|s| backend.prepare(&s.work))
        .collect()
}

/// The prepared steps in `slot`, worked out by `prepare_all` on the first call. Two threads
/// racing on a fresh plan both prepare; the first to finish is kept (preparing is pure).
pub(crate) fn prepared_once<B: Backend>(
    backend: &B,
    exec: &Executable,
    slot: &OnceLock<Arc<[B::Prepared]>>,
) -> Result<Arc<[B::Prepared]>> {
    if let Some(p) = slot.get() {
        return Ok(p.clone());
    }
    let p = prepare_all(backend, exec)?;
    Ok(slot.get_or_init(|| p).clone())
}

/// A schedule and what each backend prepared for it: the unit the plan cache keeps. Each
/// target has a slot of its own type (no downcasting), filled at its first run.
pub struct Executable {
    schedule: Schedule,
    pub(crate) reference: OnceLock<Arc<[()]>>,
    pub(crate) cpu: OnceLock<Arc<[crate::cpu::Prepared]>>,
    /// Per CUDA device ordinal.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) cuda: Mutex<Vec<(usize, Arc<[crate::cuda::Prepared]>)>>,
}

impl Executable {
    /// A schedule nothing has been prepared for yet.
    pub fn new(schedule: Schedule) -> Executable {
        Executable {
            schedule,
            reference: OnceLock::new(),
            cpu: OnceLock::new(),
            cuda: Mutex::new(vec![]),
        }
    }

    /// The steps, in order.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }
}

impl fmt::Debug for Executable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Executable")
            .field("steps", &self.schedule.steps.len())
            .field("reference", &self.reference.get().is_some())
            .field("cpu", &self.cpu.get().is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::Reference;

    #[test]
    fn an_executable_is_prepared_once_per_backend() {
        let exec = Executable::new(Schedule::default());
        let a = Reference.prepared(&exec).unwrap();
        let b = Reference.prepared(&exec).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(exec.cpu.get().is_none(), "the cpu slot fills at a cpu run");
    }
}
