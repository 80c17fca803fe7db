//! Denormal handling (`torch.set_flush_denormal`): with flushing on, the x86 SSE control
//! register's flush-to-zero (a denormal result becomes 0) and denormals-are-zero (a denormal
//! operand reads as 0) bits are set on the calling thread, on every worker thread, and before
//! every cpu kernel launch, so JIT code, library calls and the reference interpreter all flush.

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether denormals flush (the process-wide setting the launches follow).
static FLUSH: AtomicBool = AtomicBool::new(false);

/// MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6).
#[cfg(target_arch = "x86_64")]
const FTZ_DAZ: u32 = (1 << 15) | (1 << 6);

/// `torch.set_flush_denormal(mode)`: turns flushing of denormal floats on or off for this
/// thread, the worker threads and every later kernel launch. Returns whether the machine
/// supports it (x86_64: yes; elsewhere nothing changes and the answer is false).
pub fn set_flush_denormal(mode: bool) -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    FLUSH.store(mode, Ordering::SeqCst);
    apply();
    // The global pool's threads (gemm's and the default launches'); a pool of SMELT_THREADS
    // applies the setting at each launch.
    rayon::broadcast(|_| apply());
    true
}

/// Whether denormals flush ([`set_flush_denormal`]).
pub fn flush_denormal() -> bool {
    FLUSH.load(Ordering::SeqCst)
}

/// Makes this thread's float mode follow the setting (cheap when it already does).
pub(crate) fn apply() {
    #[cfg(target_arch = "x86_64")]
    {
        let current = mxcsr();
        let want = if flush_denormal() {
            current | FTZ_DAZ
        } else {
            current & !FTZ_DAZ
        };
        if want != current {
            set_mxcsr(want);
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn mxcsr() -> u32 {
    let mut v: u32 = 0;
    // SAFETY: stmxcsr stores the 4-byte control register at the address of a live u32.
    unsafe {
        std::arch::asm!("stmxcsr [{}]", in(reg) &mut v, options(nostack, preserves_flags));
    }
    v
}

#[cfg(target_arch = "x86_64")]
fn set_mxcsr(v: u32) {
    // SAFETY: ldmxcsr loads the control register from a live u32; `v` differs from the current
    // value only in the FTZ and DAZ bits, which change no exception mask or rounding mode.
    unsafe {
        std::arch::asm!("ldmxcsr [{}]", in(reg) &v, options(nostack, readonly, preserves_flags));
    }
}
