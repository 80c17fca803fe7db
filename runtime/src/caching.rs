//! A caching allocator over a raw allocator that is slow to call (`cuMemAlloc`/`cuMemFree`
//! synchronise the device): a freed block goes to a free list of its size class and the next
//! request of that class takes it back, so a plan that runs again allocates nothing from the
//! driver. Generic over [`RawMemory`] so its bookkeeping is tested on the host.
//!
//! Size classes: requests are rounded up to a multiple of 512 bytes below 1 MiB and of 2 MiB
//! from there (PyTorch's CUDA allocator rounds the same way), so buffers whose sizes differ a
//! little share blocks. A block is reused only for its own class. When the raw allocator
//! refuses (out of memory), every cached block is returned to it and the request retried once.
//!
//! Reuse is safe for a device with one stream: a block freed after its last reader's launch
//! was queued is handed to a launch queued later on the same stream, which runs after it.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// The raw allocator under the cache.
pub trait RawMemory {
    /// A block of memory (a device pointer).
    type Block;
    /// Why an allocation failed.
    type Error;
    /// A block of exactly `bytes` bytes.
    fn allocate(&self, bytes: usize) -> Result<Self::Block, Self::Error>;
    /// Whether `error` says the memory ran out (worth a retry once the cache is given back),
    /// not that something broke.
    fn out_of_memory(error: &Self::Error) -> bool;
    /// Called once before cached blocks are given back (a device waits for its queued work).
    fn before_release(&self) {}
    /// Gives a block back.
    fn release(&self, block: Self::Block);
}

/// Bytes a request of `bytes` takes: its size class.
pub fn size_class(bytes: usize) -> usize {
    const SMALL: usize = 512;
    const LARGE: usize = 2 << 20;
    let bytes = bytes.max(1);
    if bytes < (1 << 20) {
        bytes.next_multiple_of(SMALL)
    } else {
        bytes.next_multiple_of(LARGE)
    }
}

/// What the allocator holds and has done, in bytes and calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocatorStats {
    /// Bytes of blocks handed out and not yet freed.
    pub in_use: usize,
    /// Bytes held from the raw allocator: in use plus cached.
    pub held: usize,
    /// The most bytes ever in use at once.
    pub peak_in_use: usize,
    /// The most bytes ever held at once.
    pub peak_held: usize,
    /// Calls of the raw allocator (misses).
    pub raw_allocations: u64,
    /// Requests served from the cache.
    pub reuses: u64,
}

/// A caching allocator over `R`.
#[derive(Debug)]
pub struct CachingAllocator<R: RawMemory> {
    raw: R,
    state: Mutex<State<R::Block>>,
}

#[derive(Debug)]
struct State<B> {
    /// Free blocks by size class.
    free: BTreeMap<usize, Vec<B>>,
    stats: AllocatorStats,
}

/// A block handed out by [`CachingAllocator::allocate`]: the raw block and its class size.
#[derive(Debug)]
pub struct Cached<B> {
    pub block: B,
    pub bytes: usize,
}

impl<R: RawMemory> CachingAllocator<R> {
    pub fn new(raw: R) -> Self {
        CachingAllocator {
            raw,
            state: Mutex::new(State {
                free: BTreeMap::new(),
                stats: AllocatorStats::default(),
            }),
        }
    }

    /// The raw allocator.
    pub fn raw(&self) -> &R {
        &self.raw
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<R::Block>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A block of at least `bytes` bytes (its size class), from the cache when one is free.
    pub fn allocate(&self, bytes: usize) -> Result<Cached<R::Block>, R::Error> {
        let class = size_class(bytes);
        let mut state = self.lock();
        let block = match state.free.get_mut(&class).and_then(Vec::pop) {
            Some(block) => {
                state.stats.reuses += 1;
                block
            }
            None => {
                let block = match self.raw.allocate(class) {
                    Ok(block) => block,
                    Err(e) if R::out_of_memory(&e) => {
                        // Out of memory, perhaps only because the cache holds it: give every
                        // cached block back and try once more.
                        self.release_cached(&mut state);
                        self.raw.allocate(class)?
                    }
                    Err(e) => return Err(e),
                };
                state.stats.raw_allocations += 1;
                state.stats.held += class;
                state.stats.peak_held = state.stats.peak_held.max(state.stats.held);
                block
            }
        };
        state.stats.in_use += class;
        state.stats.peak_in_use = state.stats.peak_in_use.max(state.stats.in_use);
        Ok(Cached {
            block,
            bytes: class,
        })
    }

    /// Returns a block to the cache (not to the raw allocator).
    pub fn free(&self, cached: Cached<R::Block>) {
        let mut state = self.lock();
        state.stats.in_use -= cached.bytes;
        state
            .free
            .entry(cached.bytes)
            .or_default()
            .push(cached.block);
    }

    /// Gives every cached block back to the raw allocator (`torch.cuda.empty_cache`).
    pub fn empty_cache(&self) {
        let mut state = self.lock();
        self.release_cached(&mut state);
    }

    fn release_cached(&self, state: &mut State<R::Block>) {
        if state.free.is_empty() {
            return;
        }
        self.raw.before_release();
        for (bytes, blocks) in std::mem::take(&mut state.free) {
            for block in blocks {
                state.stats.held -= bytes;
                self.raw.release(block);
            }
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> AllocatorStats {
        self.lock().stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A raw allocator of numbered blocks with a byte limit, recording its calls.
    #[derive(Default)]
    struct Fake {
        limit: usize,
        broken: RefCell<bool>,
        live: RefCell<usize>,
        next: RefCell<u32>,
        calls: RefCell<Vec<String>>,
    }

    impl RawMemory for Fake {
        type Block = (u32, usize);
        type Error = String;
        fn out_of_memory(error: &String) -> bool {
            error.starts_with("out of memory")
        }
        fn allocate(&self, bytes: usize) -> Result<(u32, usize), String> {
            self.calls.borrow_mut().push(format!("alloc {bytes}"));
            if *self.broken.borrow() {
                return Err("broken".to_string());
            }
            if *self.live.borrow() + bytes > self.limit {
                return Err(format!("out of memory for {bytes}"));
            }
            *self.live.borrow_mut() += bytes;
            *self.next.borrow_mut() += 1;
            Ok((*self.next.borrow(), bytes))
        }
        fn release(&self, (id, bytes): (u32, usize)) {
            self.calls.borrow_mut().push(format!("free {id}"));
            *self.live.borrow_mut() -= bytes;
        }
    }

    // The fake is single-threaded; the allocator only needs `Sync` for real devices.
    fn allocator(limit: usize) -> CachingAllocator<Fake> {
        CachingAllocator::new(Fake {
            limit,
            ..Fake::default()
        })
    }

    #[test]
    fn sizes_round_to_their_class() {
        assert_eq!(size_class(0), 512);
        assert_eq!(size_class(1), 512);
        assert_eq!(size_class(512), 512);
        assert_eq!(size_class(513), 1024);
        assert_eq!(size_class((1 << 20) - 1), 1 << 20);
        assert_eq!(size_class(1 << 20), 2 << 20);
        assert_eq!(size_class((2 << 20) + 1), 4 << 20);
    }

    #[test]
    fn a_freed_block_is_reused_by_the_next_request_of_its_class() {
        let a = allocator(1 << 30);
        let x = a.allocate(1000).unwrap();
        let id = x.block.0;
        assert_eq!(x.bytes, 1024);
        a.free(x);
        // Same class (1024), another size: the same block, no raw call.
        let y = a.allocate(600).unwrap();
        assert_eq!(y.block.0, id);
        // Another class: a raw allocation.
        let z = a.allocate(4096).unwrap();
        assert_ne!(z.block.0, id);
        assert_eq!(
            *a.raw().calls.borrow(),
            vec!["alloc 1024".to_string(), "alloc 4096".to_string()]
        );
        let s = a.stats();
        assert_eq!((s.raw_allocations, s.reuses), (2, 1));
        assert_eq!((s.in_use, s.held), (1024 + 4096, 1024 + 4096));
        a.free(y);
        a.free(z);
        let s = a.stats();
        assert_eq!((s.in_use, s.held, s.peak_in_use), (0, 5120, 5120));
    }

    #[test]
    fn a_loop_of_one_plan_allocates_from_the_raw_allocator_once() {
        let a = allocator(1 << 30);
        for _ in 0..100 {
            // Three buffers live at once, freed at their last use.
            let x = a.allocate(3 << 20).unwrap();
            let y = a.allocate(3 << 20).unwrap();
            a.free(x);
            let z = a.allocate(3 << 20).unwrap();
            a.free(y);
            a.free(z);
        }
        let s = a.stats();
        assert_eq!(s.raw_allocations, 2, "{s:?}");
        assert_eq!(s.peak_in_use, 2 * (4 << 20));
        assert_eq!(s.held, 2 * (4 << 20));
    }

    #[test]
    fn out_of_memory_releases_the_cache_and_retries() {
        let a = allocator(8192);
        let x = a.allocate(4096).unwrap();
        let y = a.allocate(4096).unwrap();
        a.free(x);
        a.free(y);
        // 8192 bytes are cached in the 4096 class; a 6000-byte request (class 6144) only fits
        // once they are given back.
        let z = a.allocate(6000).unwrap();
        assert_eq!(z.bytes, 6144);
        let calls = a.raw().calls.borrow().clone();
        assert_eq!(
            calls[2..],
            ["alloc 6144", "free 1", "free 2", "alloc 6144"].map(String::from)
        );
        assert_eq!(a.stats().held, 6144);
        // A request that cannot fit at all is the raw allocator's error.
        assert!(a.allocate(8192).is_err());
        // Another failure gives nothing back: it is not for want of memory.
        let y = a.allocate(512).unwrap();
        a.free(y);
        *a.raw().broken.borrow_mut() = true;
        let calls = a.raw().calls.borrow().len();
        assert_eq!(a.allocate(700).err(), Some("broken".to_string()));
        assert_eq!(a.raw().calls.borrow()[calls..], ["alloc 1024".to_string()]);
        *a.raw().broken.borrow_mut() = false;
        a.free(z);
        a.empty_cache();
        assert_eq!(a.stats().held, 0);
        assert_eq!(*a.raw().live.borrow(), 0);
    }
}
