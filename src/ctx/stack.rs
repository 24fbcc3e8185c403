//! Guarded coroutine stacks and the pool that reuses them.
//!
//! A stack is one anonymous mapping: a PROT_NONE guard page at the low end and
//! the usable region above it (stacks grow down). Overflow therefore faults on
//! the guard page instead of silently writing into a neighbour; the SIGSEGV
//! handler in `overflow.rs` recognises the address and names the coroutine.
//!
//! Mapping and unmapping cost ~10 us (DESIGN.md §6) against ~12 ns for reusing
//! a stack, so finished coroutines give their stack back to a per-worker
//! `StackPool` and a spawn never maps memory when the pool has one. The pool
//! keeps a few *hot* stacks as they are (their pages are probably still in the
//! cache) and returns the pages of the rest to the kernel with
//! `madvise(MADV_DONTNEED)`, keeping only the address range: an idle pooled
//! stack costs no RSS. Past `MAX_COLD` idle stacks of one size, stacks are
//! unmapped.

use std::num::NonZeroUsize;

use corosensei::stack::{Stack, StackPointer};

/// Stacks of one size kept without releasing their pages.
pub const HOT: usize = 32;
/// Stacks of one size kept with their pages released.
pub const MAX_COLD: usize = 4096;

/// A mapped stack with a guard page below it.
pub struct GuardedStack {
    /// Lowest address of the mapping (the guard page starts here).
    map: usize,
    /// Length of the whole mapping, guard included.
    map_len: usize,
    guard: usize,
}

// SAFETY: the stack is plain memory owned by this value; moving the owner
// between threads (a never-run coroutine is stolen) moves the whole mapping.
unsafe impl Send for GuardedStack {}

impl GuardedStack {
    /// Maps a stack of at least `size` usable bytes plus one guard page.
    pub fn new(size: usize) -> std::io::Result<GuardedStack> {
        let page = crate::sys::page_size();
        let usable = size
            .max(corosensei::stack::MIN_STACK_SIZE)
            .next_multiple_of(page);
        let map_len = usable + page;
        // SAFETY: an anonymous private mapping at a kernel-chosen address.
        // MAP_NORESERVE: untouched pages cost no commit charge, so large
        // thread stacks (8 MiB) are as cheap as small ones until used.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the first page lies inside the mapping just created.
        if unsafe { libc::mprotect(p, page, libc::PROT_NONE) } != 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: unmapping exactly what was mapped above.
            unsafe { libc::munmap(p, map_len) };
            return Err(e);
        }
        Ok(GuardedStack {
            map: p as usize,
            map_len,
            guard: page,
        })
    }

    /// Usable bytes (guard excluded).
    pub fn usable_size(&self) -> usize {
        self.map_len - self.guard
    }

    /// The guard page's address range.
    pub fn guard_range(&self) -> (usize, usize) {
        (self.map, self.map + self.guard)
    }

    /// Highest address (exclusive): where the stack starts growing down.
    pub fn top(&self) -> usize {
        self.map + self.map_len
    }

    /// Gives the usable pages back to the kernel; the range stays mapped and
    /// reads back as zeroes.
    pub fn release_pages(&self) {
        // SAFETY: the range is inside our private anonymous mapping and no
        // coroutine runs on it (the pool only holds idle stacks).
        unsafe {
            libc::madvise(
                (self.map + self.guard) as *mut libc::c_void,
                self.usable_size(),
                libc::MADV_DONTNEED,
            )
        };
    }
}

impl Drop for GuardedStack {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping this value owns.
        unsafe { libc::munmap(self.map as *mut libc::c_void, self.map_len) };
    }
}

// SAFETY: base() and limit() bound a mapping owned by this value whose lowest
// page is a PROT_NONE guard page; both are page aligned, hence aligned to
// STACK_ALIGNMENT, and the usable part is at least MIN_STACK_SIZE.
unsafe impl Stack for GuardedStack {
    fn base(&self) -> StackPointer {
        NonZeroUsize::new(self.top()).expect("mapping is not at address 0")
    }

    fn limit(&self) -> StackPointer {
        NonZeroUsize::new(self.map).expect("mapping is not at address 0")
    }
}

/// Idle stacks of one usable size.
struct SizeClass {
    size: usize,
    hot: Vec<GuardedStack>,
    cold: Vec<GuardedStack>,
}

/// A per-worker pool of idle stacks, by size.
#[derive(Default)]
pub struct StackPool {
    classes: Vec<SizeClass>,
    /// Stacks mapped by this pool over its life (for tests and stats).
    pub mapped: u64,
}

impl StackPool {
    pub fn new() -> StackPool {
        StackPool::default()
    }

    fn class(&mut self, size: usize) -> &mut SizeClass {
        let i = match self.classes.iter().position(|c| c.size == size) {
            Some(i) => i,
            None => {
                self.classes.push(SizeClass {
                    size,
                    hot: Vec::new(),
                    cold: Vec::new(),
                });
                self.classes.len() - 1
            }
        };
        &mut self.classes[i]
    }

    /// A stack with exactly `size` usable bytes (page-rounded), reused when
    /// one is idle, mapped otherwise.
    pub fn get(&mut self, size: usize) -> std::io::Result<GuardedStack> {
        let size = round_size(size);
        let c = self.class(size);
        if let Some(s) = c.hot.pop().or_else(|| c.cold.pop()) {
            return Ok(s);
        }
        self.mapped += 1;
        GuardedStack::new(size)
    }

    /// Takes back the stack of a finished coroutine.
    pub fn put(&mut self, stack: GuardedStack) {
        let c = self.class(stack.usable_size());
        if c.hot.len() < HOT {
            c.hot.push(stack);
        } else if c.cold.len() < MAX_COLD {
            stack.release_pages();
            c.cold.push(stack);
        }
        // else: dropped, which unmaps it.
    }

    /// Idle stacks held for `size`: (hot, cold).
    pub fn idle(&self, size: usize) -> (usize, usize) {
        let size = round_size(size);
        self.classes
            .iter()
            .find(|c| c.size == size)
            .map_or((0, 0), |c| (c.hot.len(), c.cold.len()))
    }
}

/// The usable size a request of `size` bytes gets.
pub fn round_size(size: usize) -> usize {
    size.max(corosensei::stack::MIN_STACK_SIZE)
        .next_multiple_of(crate::sys::page_size())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_has_guard_and_size() {
        let s = GuardedStack::new(64 * 1024).unwrap();
        assert_eq!(s.usable_size(), 64 * 1024);
        let (lo, hi) = s.guard_range();
        assert_eq!(hi - lo, crate::sys::page_size());
        assert_eq!(s.limit().get(), lo);
        assert_eq!(s.base().get(), s.top());
        // The usable part is writable.
        // SAFETY: writing one byte just below the top of our own mapping.
        unsafe { *((s.top() - 1) as *mut u8) = 7 };
    }

    #[test]
    fn pool_reuses_without_mapping() {
        let mut pool = StackPool::new();
        let a = pool.get(64 * 1024).unwrap();
        let addr = a.top();
        pool.put(a);
        assert_eq!(pool.idle(64 * 1024), (1, 0));
        let b = pool.get(64 * 1024).unwrap();
        assert_eq!(b.top(), addr, "the idle stack is reused");
        assert_eq!(pool.mapped, 1);
        pool.put(b);
    }

    #[test]
    fn pool_releases_pages_past_hot() {
        let mut pool = StackPool::new();
        let stacks: Vec<_> = (0..HOT + 3).map(|_| pool.get(16 * 1024).unwrap()).collect();
        for s in &stacks {
            // SAFETY: dirtying the top byte of each idle stack we own.
            unsafe { *((s.top() - 1) as *mut u8) = 1 };
        }
        for s in stacks {
            pool.put(s);
        }
        assert_eq!(pool.idle(16 * 1024), (HOT, 3));
        // Cold stacks come back zeroed: their pages were returned.
        let mut saw_zero = false;
        for _ in 0..HOT + 3 {
            let s = pool.get(16 * 1024).unwrap();
            // SAFETY: reading the top byte of a stack we own.
            if unsafe { *((s.top() - 1) as *const u8) } == 0 {
                saw_zero = true;
            }
        }
        assert!(saw_zero);
    }

    #[test]
    fn sizes_round_to_pages() {
        let p = crate::sys::page_size();
        assert_eq!(
            round_size(1),
            corosensei::stack::MIN_STACK_SIZE.next_multiple_of(p)
        );
        assert_eq!(round_size(p + 1), 2 * p);
    }
}
