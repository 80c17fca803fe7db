//! Records the work that realisations run on this thread, for tests that check every
//! generated kernel and library call (the CUDA compile tests replay the conformance suite
//! through it).

use smelt_ir::{Kernel, Schedule, Work};
use std::cell::RefCell;

thread_local! {
    static RECORDED: RefCell<Option<Vec<Work>>> = const { RefCell::new(None) };
}

/// Runs `f` and returns, with its result, the steps (kernels and library calls) of every
/// schedule executed on this thread meanwhile, in execution order, duplicates included.
pub fn record_work<R>(f: impl FnOnce() -> R) -> (R, Vec<Work>) {
    let outer = RECORDED.with(|r| r.borrow_mut().replace(vec![]));
    let result = f();
    let work = RECORDED.with(|r| std::mem::replace(&mut *r.borrow_mut(), outer));
    (result, work.unwrap_or_default())
}

/// [`record_work`], keeping the kernels only.
pub fn record_kernels<R>(f: impl FnOnce() -> R) -> (R, Vec<Kernel>) {
    let (result, work) = record_work(f);
    let kernels = work
        .into_iter()
        .filter_map(|w| match w {
            Work::Kernel(k) => Some(k),
            Work::Library(_) => None,
        })
        .collect();
    (result, kernels)
}

/// Called by [`crate::execute`] for every schedule.
pub(crate) fn observe(schedule: &Schedule) {
    RECORDED.with(|r| {
        if let Some(work) = r.borrow_mut().as_mut() {
            work.extend(schedule.steps.iter().map(|s| s.work.clone()));
        }
    });
}
