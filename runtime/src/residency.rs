//! Which large buffers the last-level cache is likely to still hold, for the choice between a
//! kernel's streaming variant and its plain stores (`cpu::run_prepared`).
//!
//! Streaming stores write whole lines without reading them first, which saves a read of each
//! output line from memory when the output is not in the cache; when it is (and the inputs
//! are), the plain stores' reads hit the cache and streaming only sends the output to memory
//! that the next reader would have found cached. Which case a launch is in depends on what ran
//! before it, so the runtime keeps a clock of the bytes its kernels have moved and, for the
//! last few large buffers they touched, the clock when each was touched: a buffer touched
//! less than the cache's share ago, in a launch whose own bytes fit in that share too, is
//! taken to be cached. Anything that moves memory outside the kernels (other code, another
//! process) is invisible to the clock; the cost of a wrong guess is speed, never a result.
//!
//! Example: `smelt bench permute_scale --warm` launches the same transpose on the same two
//! pooled buffers (24.5 MiB each) back to back. On the Xeon guest (260 MiB L3) the plain
//! stores ran 1.17× faster than streaming there, and 1.6× slower with the caches emptied
//! between launches (`docs/benchmarks.md`, "Streaming stores"); the bench empties the
//! caches with a kernel of its own (a sum over twice the cache), which the clock counts.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Buffers smaller than this are neither recorded nor asked about: their lines matter little
/// to the choice, and small launches (an op of `tiny_ops`) skip the lock.
const MIN_BYTES: usize = 1 << 20;

/// How many large buffers are remembered; the least recently touched is forgotten first.
const SLOTS: usize = 16;

/// Bytes moved by the kernels launched so far.
static CLOCK: AtomicU64 = AtomicU64::new(0);

/// The large buffers touched lately: first byte's address, bytes, clock when last touched.
static RECENT: Mutex<Vec<(usize, usize, u64)>> = Mutex::new(Vec::new());

/// A buffer a launch reads or writes: its first byte's address and its length in bytes.
pub(crate) type Range = (usize, usize);

/// Records that a launch touched `ranges` (its inputs and outputs): the clock advances by
/// their bytes, and each large one is stamped with the new time.
pub(crate) fn touched(ranges: &[Range]) {
    let bytes: usize = ranges.iter().map(|r| r.1).sum();
    let now = CLOCK.fetch_add(bytes as u64, Ordering::Relaxed) + bytes as u64;
    if ranges.iter().all(|r| r.1 < MIN_BYTES) {
        return;
    }
    let mut recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    for &(start, len) in ranges.iter().filter(|r| r.1 >= MIN_BYTES) {
        if let Some(slot) = recent.iter_mut().find(|s| s.0 == start) {
            *slot = (start, len, now);
        } else if recent.len() < SLOTS {
            recent.push((start, len, now));
        } else if let Some(oldest) = recent.iter_mut().min_by_key(|s| s.2) {
            *oldest = (start, len, now);
        }
    }
}

/// Whether a launch over `ranges` finds them in a cache of `share` bytes: the launch's own
/// bytes fit in it, and every large range was touched whole so recently that the bytes moved
/// since, plus the launch's, fit too. Ranges never touched (a fresh allocation) are not cached.
pub(crate) fn cached(ranges: &[Range], share: usize) -> bool {
    let bytes: usize = ranges.iter().map(|r| r.1).sum();
    if bytes > share {
        return false;
    }
    let recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    // Read under the lock: a stamp is written under it after its clock advanced, so none in
    // the table is later than `now` (the subtraction saturates all the same).
    let now = CLOCK.load(Ordering::Relaxed);
    ranges
        .iter()
        .filter(|r| r.1 >= MIN_BYTES)
        .all(|&(start, len)| {
            recent.iter().any(|&(s, l, at)| {
                s == start
                    && l >= len
                    && now.saturating_sub(at).saturating_add(bytes as u64) <= share as u64
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ranges at addresses no allocation has (the model only compares numbers), distinct per
    /// test, since the clock and the table are the process's.
    fn ranges(base: usize) -> Vec<Range> {
        vec![
            (base, 4 << 20),
            (base + (8 << 20), 4 << 20),
            (base + (16 << 20), 64),
        ]
    }

    #[test]
    fn a_launch_finds_what_the_last_one_touched_until_the_clock_moves_past_the_share() {
        let r = ranges(0x7000_0000_0000);
        // Far more than the other tests' launches (they run alongside) move meanwhile.
        let share = 1 << 40;
        assert!(!cached(&r, share), "never touched: not cached");
        touched(&r);
        assert!(cached(&r, share));
        // The launch's own bytes must fit the share too.
        assert!(!cached(&r, 6 << 20));
        // Other work moves more than the share: the buffers are gone.
        touched(&[(0x7100_0000_0000, share)]);
        assert!(!cached(&r, share));
        // Touched again, they are back; a small range is never asked about.
        touched(&r);
        assert!(cached(&r, share));
        assert!(cached(&[(0x7200_0000_0000, 64)], share));
    }

    #[test]
    fn the_least_recently_touched_buffer_is_forgotten_first() {
        let first = (0x6000_0000_0000, 2 << 20);
        touched(&[first]);
        for i in 1..=SLOTS {
            touched(&[(0x6000_0000_0000 + i * (4 << 20), 1 << 20)]);
        }
        // Nothing else moved much, but the table forgot it: a forgotten buffer is not cached.
        assert!(!cached(&[first], usize::MAX >> 8));
    }
}
