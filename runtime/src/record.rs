//! Records the kernels that realisations run on this thread, for tests that check every
//! generated kernel (the CUDA compile test replays the conformance suite through it).

use smelt_ir::{Kernel, Schedule, Work};
use std::cell::RefCell;

thread_local! {
    static RECORDED: RefCell<Option<Vec<Kernel>>> = const { RefCell::new(None) };
}

/// Runs `f` and returns, with its result, the kernels of every schedule executed on this
/// thread meanwhile (in execution order, duplicates included).
pub fn record_kernels<R>(f: impl FnOnce() -> R) -> (R, Vec<Kernel>) {
    let outer = RECORDED.with(|r| r.borrow_mut().replace(vec![]));
    let result = f();
    let kernels = RECORDED.with(|r| std::mem::replace(&mut *r.borrow_mut(), outer));
    (result, kernels.unwrap_or_default())
}

/// Called by [`crate::execute`] for every schedule.
pub(crate) fn observe(schedule: &Schedule) {
    RECORDED.with(|r| {
        if let Some(kernels) = r.borrow_mut().as_mut() {
            kernels.extend(schedule.steps.iter().filter_map(|s| match &s.work {
                Work::Kernel(k) => Some(k.clone()),
                Work::Library(_) => None,
            }));
        }
    });
}
