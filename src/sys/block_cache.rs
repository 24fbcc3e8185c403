//! A cache of heap blocks of one size in front of glibc's heap, one per
//! worker, with a shared level between them: the tasks' blocks (each spawn
//! allocates one `Arc<Task>`, each end frees one).
//!
//! # Why
//!
//! glibc's per-thread cache keeps 7 blocks of a size. A program with many
//! coroutines alive at once (100,000 sleepers) gets its tasks from the
//! arena's bins instead (`_int_malloc`, `_int_free`: 380 of the 3,170
//! instructions a sleeper costs on 1 worker), and with 2 workers the
//! worker that ends a task frees a block of the spawner's arena, under
//! that arena's lock, while the spawner allocates from it.
//!
//! # How
//!
//! A free block becomes a node of a singly linked list: the worker's own
//! list holds up to `LOCAL_MAX` blocks (no lock, no atomic); a full list
//! moves to the shared level whole, as one batch (one lock for
//! `LOCAL_MAX` frees), and an empty one takes a batch back from there (one
//! lock for `LOCAL_MAX` allocations). So blocks flow from the worker where
//! tasks end to the one where they are spawned.
//!
//! The cache is the worker's, not the thread's: a coroutine with a TLS
//! block of its own sees its own copies of thread-locals, and a list kept
//! there would be lost with that block. The scheduler says which cache a
//! thread has (`enable`); threads without one (helpers, native threads)
//! use glibc directly.
//!
//! The shared lock is only ever tried: a thread that finds it taken uses
//! glibc for that call. Nothing waits, so a forked child whose parent held
//! it (a thread that does not exist there) only loses the shared level.
//! The shared level keeps at most `SHARED_MAX` batches; blocks past that
//! go back to glibc.

use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Blocks a worker keeps, and the size of a batch moved to or from the
/// shared level.
const LOCAL_MAX: usize = 64;
/// Batches the shared level keeps (`SHARED_MAX * LOCAL_MAX` blocks: 43
/// MiB of 656-byte tasks).
const SHARED_MAX: usize = 1024;

/// A free block, as the cache links it (the block's first bytes).
struct Node {
    next: *mut Node,
    /// In the first node of a batch on the shared level: the next batch.
    next_batch: *mut Node,
}

/// One worker's free blocks. Only the worker's own thread touches it.
pub struct BlockCache {
    head: Cell<*mut Node>,
    len: Cell<usize>,
}

impl Default for BlockCache {
    fn default() -> Self {
        BlockCache::new()
    }
}

/// The size cached (0: none yet), and how a thread finds its cache.
static SIZE: AtomicUsize = AtomicUsize::new(0);
static FIND: AtomicUsize = AtomicUsize::new(0);

/// The calling thread's cache, if it has one.
pub type Finder = fn() -> *const BlockCache;

/// Caches blocks of `size` bytes (at most 16-aligned); `find` names the
/// calling thread's cache (null: none). Called once, before any cache is
/// used.
pub fn enable(size: usize, find: Finder) {
    if size < std::mem::size_of::<Node>() {
        return;
    }
    FIND.store(find as usize, Ordering::Release);
    SIZE.store(size, Ordering::Release);
}

/// The calling thread's cache for blocks of `size` bytes, if it has one.
#[inline]
pub fn mine(size: usize) -> Option<&'static BlockCache> {
    if size != SIZE.load(Ordering::Relaxed) || size == 0 {
        return None;
    }
    let f = FIND.load(Ordering::Acquire);
    // SAFETY: FIND holds a `Finder` whenever SIZE is not 0 (`enable`
    // stores it first).
    let f: Finder = unsafe { std::mem::transmute::<usize, Finder>(f) };
    // SAFETY: a finder returns a cache that lives as long as the process
    // (a worker's, leaked) or null.
    unsafe { f().as_ref() }
}

struct Shared {
    lock: AtomicBool,
    batches: UnsafeCell<(*mut Node, usize)>,
}

// SAFETY: `batches` is only touched while `lock` is held (`with_shared`).
unsafe impl Sync for Shared {}

static SHARED: Shared = Shared {
    lock: AtomicBool::new(false),
    batches: UnsafeCell::new((std::ptr::null_mut(), 0)),
};

/// Runs `f` on the shared batches if the lock is free now; None if not.
fn with_shared<R>(f: impl FnOnce(&mut (*mut Node, usize)) -> R) -> Option<R> {
    if SHARED.lock.swap(true, Ordering::Acquire) {
        return None;
    }
    // SAFETY: the lock is held until the store below.
    let r = f(unsafe { &mut *SHARED.batches.get() });
    SHARED.lock.store(false, Ordering::Release);
    Some(r)
}

impl BlockCache {
    pub const fn new() -> BlockCache {
        BlockCache {
            head: Cell::new(std::ptr::null_mut()),
            len: Cell::new(0),
        }
    }

    /// A cached block, or null (the caller asks glibc).
    #[inline]
    pub fn take(&self) -> *mut u8 {
        let mut h = self.head.get();
        if h.is_null() {
            // A batch from the shared level: the list of its first node.
            let batch = with_shared(|s| {
                let b = s.0;
                if !b.is_null() {
                    // SAFETY: batches on the shared level are lists of free
                    // blocks of the cached size; the lock is held.
                    s.0 = unsafe { (*b).next_batch };
                    s.1 -= 1;
                }
                b
            });
            h = batch.unwrap_or(std::ptr::null_mut());
            if h.is_null() {
                return std::ptr::null_mut();
            }
            self.len.set(LOCAL_MAX);
        }
        // SAFETY: `h` is a free block of this cache's list.
        self.head.set(unsafe { (*h).next });
        self.len.set(self.len.get() - 1);
        h.cast()
    }

    /// Keeps the free block `p` (of the cached size, from glibc's heap);
    /// false if the cache is full (the caller frees it).
    #[inline]
    pub fn give(&self, p: *mut u8) -> bool {
        if self.len.get() >= LOCAL_MAX {
            // The full list goes to the shared level as one batch.
            let h = self.head.get();
            let moved = with_shared(|s| {
                if s.1 >= SHARED_MAX {
                    return false;
                }
                // SAFETY: `h` heads this cache's full list (LOCAL_MAX > 0
                // blocks); the lock is held.
                unsafe { (*h).next_batch = s.0 };
                s.0 = h;
                s.1 += 1;
                true
            });
            if moved != Some(true) {
                return false;
            }
            self.head.set(std::ptr::null_mut());
            self.len.set(0);
        }
        let n = p.cast::<Node>();
        // SAFETY: `p` is a free block of at least `size_of::<Node>()`
        // bytes, 16-aligned (`enable`); nobody else uses it now.
        unsafe { (*n).next = self.head.get() };
        self.head.set(n);
        self.len.set(self.len.get() + 1);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_come_back_in_lifo_order_and_overflow_to_batches() {
        let c = BlockCache::new();
        assert!(c.take().is_null() || c.len.get() == LOCAL_MAX - 1);
        // Drain whatever a batch left, so that the local list is empty.
        while c.len.get() > 0 {
            c.take();
        }
        let mut blocks: Vec<[usize; 4]> = vec![[0; 4]; LOCAL_MAX + 1];
        let ptrs: Vec<*mut u8> = blocks.iter_mut().map(|b| b.as_mut_ptr().cast()).collect();
        for &p in &ptrs[..LOCAL_MAX] {
            assert!(c.give(p));
        }
        assert_eq!(c.len.get(), LOCAL_MAX);
        assert_eq!(c.take(), ptrs[LOCAL_MAX - 1], "last in, first out");
        assert!(c.give(ptrs[LOCAL_MAX - 1]));
        // Full: the list moves to the shared level, the block starts a new one.
        assert!(c.give(ptrs[LOCAL_MAX]));
        assert_eq!(c.len.get(), 1);
        assert_eq!(c.take(), ptrs[LOCAL_MAX]);
        // Empty: a batch comes back from the shared level (this test's own,
        // unless a concurrent test's batch is on top; both are blocks).
        let p = c.take();
        assert!(!p.is_null());
        assert_eq!(c.len.get(), LOCAL_MAX - 1);
        // Give everything back to the shared level before `blocks` goes.
        while c.len.get() > 0 {
            c.take();
        }
        with_shared(|s| *s = (std::ptr::null_mut(), 0));
    }
}
