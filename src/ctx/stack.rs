//! Guarded coroutine stacks, mapped in slabs, and the pool that reuses them.
//!
//! # Layout
//!
//! A stack is a usable region with a guard page below it (stacks grow down),
//! so running off the end faults instead of silently writing into a
//! neighbour; the SIGSEGV handler in `overflow.rs` recognises the address
//! and names the coroutine.
//!
//! Stacks are carved out of *slabs*: one anonymous mapping holds several
//! stacks of one size (about 8 MiB of address space per slab). The guard
//! pages are installed with `madvise(MADV_GUARD_INSTALL)` (Linux 6.13),
//! which marks page-table entries instead of splitting the mapping: a slab
//! of 31 stacks is one VMA, not 62, so 100,000 coroutines stay far below
//! `vm.max_map_count` (65,530 by default, docs/ARCHITECTURE.md §5.6), and no
//! `mprotect` takes the process-wide mmap lock for writing. On an older
//! kernel the guard falls back to `mprotect(PROT_NONE)` (two VMAs a stack).
//!
//! # Cost, measured
//!
//! Mapping a stack costs microseconds and, in a multi-threaded process, TLB
//! shoot-down interrupts to every CPU running one of its threads (seen in
//! `perf`: `smp_call_function_many_cond` under mprotect/madvise/munmap was
//! half the time of 10,000 spawns on 2 workers). Reusing one costs nothing.
//! So finished coroutines give their stack back to a per-worker
//! `StackPool`, a spawn never maps when the pool has one, and slabs are
//! never unmapped: address space is cheap, pages are what cost.
//!
//! # Returning memory
//!
//! A pooled stack keeps the pages its coroutine touched. The pool keeps the
//! `HOT` most recently used stacks as they are; the others are *released*
//! (`madvise(MADV_DONTNEED)`: the range stays mapped and reads back as
//! zeroes) by `scavenge`, which the worker calls when it is idle, a batch
//! at a time, so the madvise and its TLB shoot-downs stay off the hot path.

use std::collections::VecDeque;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};

use corosensei::stack::{Stack, StackPointer};

/// Stacks of one size kept as they are (not released).
pub const HOT: usize = 32;
/// Address space of one slab.
const SLAB_BYTES: usize = 8 << 20;
/// At most this many stacks in one slab.
const SLAB_MAX: usize = 64;
/// `MADV_GUARD_INSTALL` (Linux 6.13), not yet in the libc crate.
const MADV_GUARD_INSTALL: i32 = 102;

static NO_GUARD_MADVISE: AtomicBool = AtomicBool::new(false);

/// A stack with a guard page below it, part of a slab that is never unmapped.
pub struct GuardedStack {
    /// Lowest address (the guard page starts here).
    low: usize,
    /// Guard + usable bytes.
    len: usize,
    guard: usize,
    /// Pages may be resident (false right after release or mapping).
    dirty: bool,
    /// Memory the program gave (`pthread_attr_setstack`): no guard, never
    /// pooled, released or unmapped by corun.
    program: bool,
}

// SAFETY: the stack is plain memory owned by this value; moving the owner
// between threads (a never-run coroutine is stolen) moves the whole region.
unsafe impl Send for GuardedStack {}

impl GuardedStack {
    /// Maps a slab of stacks of `size` usable bytes (page-rounded) and
    /// returns them all.
    pub fn map_slab(size: usize) -> std::io::Result<Vec<GuardedStack>> {
        let page = crate::sys::page_size();
        let usable = round_size(size);
        let each = usable + page;
        let count = (SLAB_BYTES / each).clamp(1, SLAB_MAX);
        let total = each * count;
        // SAFETY: an anonymous private mapping at a kernel-chosen address.
        // MAP_NORESERVE: untouched pages cost no commit charge, so large
        // thread stacks (8 MiB) are as cheap as small ones until used.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let base = p as usize;
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            let low = base + i * each;
            if let Err(e) = install_guard(low, page) {
                // SAFETY: unmapping exactly the slab mapped above, none of
                // whose stacks has been handed out.
                unsafe { libc::munmap(p, total) };
                return Err(e);
            }
            out.push(GuardedStack {
                low,
                len: each,
                guard: page,
                dirty: false,
                program: false,
            });
        }
        Ok(out)
    }

    /// The stack a program gave for a thread (`pthread_attr_setstack`):
    /// `[addr, addr + size)`, trimmed inward to the 16-byte alignment the
    /// switch needs. None if less than corosensei's minimum is left.
    /// The memory stays the program's: `is_program` stacks are never
    /// pooled, released or unmapped.
    pub fn program(addr: usize, size: usize) -> Option<GuardedStack> {
        let align = corosensei::stack::STACK_ALIGNMENT;
        let low = addr.checked_next_multiple_of(align)?;
        let top = addr.checked_add(size)? & !(align - 1);
        if low == 0 || top < low + corosensei::stack::MIN_STACK_SIZE {
            return None;
        }
        Some(GuardedStack {
            low,
            len: top - low,
            guard: 0,
            dirty: true,
            program: true,
        })
    }

    /// Whether the program gave this stack (see `program`).
    pub fn is_program(&self) -> bool {
        self.program
    }

    /// Whether a coroutine ran on the stack since it was mapped or
    /// released: its top pages may be resident.
    pub fn was_used(&self) -> bool {
        self.dirty
    }

    /// Usable bytes (guard excluded).
    pub fn usable_size(&self) -> usize {
        self.len - self.guard
    }

    /// The guard page's address range (empty, at the lowest address, for
    /// a program's stack).
    pub fn guard_range(&self) -> (usize, usize) {
        (self.low, self.low + self.guard)
    }

    /// Highest address (exclusive): where the stack starts growing down.
    pub fn top(&self) -> usize {
        self.low + self.len
    }

    /// A coroutine is about to run on the stack: its pages may be
    /// resident from now on (until `release_pages`).
    pub fn mark_used(&mut self) {
        self.dirty = true;
    }

    /// Gives the usable pages back to the kernel; the range stays mapped and
    /// reads back as zeroes. The guard stays (DONTNEED keeps guard markers).
    pub fn release_pages(&mut self) {
        // SAFETY: the range is inside our private anonymous mapping and no
        // coroutine runs on it (only idle stacks are released).
        unsafe {
            libc::madvise(
                (self.low + self.guard) as *mut libc::c_void,
                self.usable_size(),
                libc::MADV_DONTNEED,
            )
        };
        self.dirty = false;
    }
}

fn install_guard(low: usize, page: usize) -> std::io::Result<()> {
    if !NO_GUARD_MADVISE.load(Ordering::Relaxed) {
        // SAFETY: the page lies inside a mapping this module just created.
        if unsafe { libc::madvise(low as *mut libc::c_void, page, MADV_GUARD_INSTALL) } == 0 {
            return Ok(());
        }
        NO_GUARD_MADVISE.store(true, Ordering::Relaxed);
    }
    // SAFETY: as above.
    if unsafe { libc::mprotect(low as *mut libc::c_void, page, libc::PROT_NONE) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

// SAFETY: base() and limit() bound a region owned by this value whose lowest
// page is a guard page; both are page aligned, hence aligned to
// STACK_ALIGNMENT, and the usable part is at least MIN_STACK_SIZE. A
// program's stack (`program`) has no guard (as natively with a stack given
// by pthread_attr_setstack), is 16-byte aligned and at least MIN_STACK_SIZE;
// the program hands it over for the thread's life (POSIX).
unsafe impl Stack for GuardedStack {
    fn base(&self) -> StackPointer {
        NonZeroUsize::new(self.top()).expect("mapping is not at address 0")
    }

    fn limit(&self) -> StackPointer {
        NonZeroUsize::new(self.low).expect("mapping is not at address 0")
    }
}

impl Default for StackPool {
    fn default() -> Self {
        StackPool::new()
    }
}

/// Idle stacks of one usable size: a LIFO (the back is the most recently
/// used, hence most likely cached); entries below `clean_below` are known
/// released. A deque, so that a stack put under the others (`put_cold`)
/// is not a shift of the whole pool at each start.
struct SizeClass {
    size: usize,
    idle: VecDeque<GuardedStack>,
    clean_below: usize,
}

/// A per-worker pool of idle stacks, by size.
pub struct StackPool {
    classes: Vec<SizeClass>,
    /// Slabs mapped by this pool over its life (for tests and stats).
    pub slabs: u64,
}

impl StackPool {
    pub const fn new() -> StackPool {
        StackPool {
            classes: Vec::new(),
            slabs: 0,
        }
    }

    fn class(&mut self, size: usize) -> &mut SizeClass {
        let i = match self.classes.iter().position(|c| c.size == size) {
            Some(i) => i,
            None => {
                self.classes.push(SizeClass {
                    size,
                    idle: VecDeque::new(),
                    clean_below: 0,
                });
                self.classes.len() - 1
            }
        };
        &mut self.classes[i]
    }

    /// A stack with `size` usable bytes (page-rounded): the most recently
    /// used idle one, or one from a new slab.
    pub fn get(&mut self, size: usize) -> std::io::Result<GuardedStack> {
        let size = round_size(size);
        let c = self.class(size);
        if let Some(s) = c.idle.pop_back() {
            c.clean_below = c.clean_below.min(c.idle.len());
            return Ok(s);
        }
        let mut slab = GuardedStack::map_slab(size)?;
        self.slabs += 1;
        let s = slab.pop().expect("a slab holds at least one stack");
        let c = self.class(size);
        // Only reached with no idle stack of this size: the fresh (clean)
        // ones become the whole list.
        debug_assert!(c.idle.is_empty());
        c.idle = VecDeque::from(std::mem::take(&mut slab));
        c.clean_below = c.idle.len();
        Ok(s)
    }

    /// The most recently used idle stack of `size`, without mapping.
    pub fn take_idle(&mut self, size: usize) -> Option<GuardedStack> {
        let size = round_size(size);
        let c = self.classes.iter_mut().find(|c| c.size == size)?;
        let s = c.idle.pop_back()?;
        c.clean_below = c.clean_below.min(c.idle.len());
        Some(s)
    }

    /// Takes back an idle stack: one a coroutine ran on goes on top (handed
    /// out next); one never run on (a spawn's reservation that a worker's
    /// recent stack replaced, moving between pools) goes under the others,
    /// with the released ones (`put_cold`). On top, such stacks were
    /// handed out before the used ones below them, and each first run
    /// faulted its page in: 100,000 sleepers with 2 workers faulted 9,000
    /// to 14,000 never-touched stacks in every trial, each trial new ones
    /// (perf page-faults: no address twice in 6 trials), while the pools
    /// held used ones.
    pub fn put(&mut self, stack: GuardedStack) {
        if stack.program {
            return; // the program's memory: not ours to reuse
        }
        if !stack.dirty {
            self.put_cold(stack);
            return;
        }
        let c = self.class(stack.usable_size());
        c.idle.push_back(stack);
    }

    /// The most recently used idle stack of `size`, if a coroutine ran on
    /// it and its pages were not released since (they may be cached).
    pub fn take_recent(&mut self, size: usize) -> Option<GuardedStack> {
        let size = round_size(size);
        let c = self.classes.iter_mut().find(|c| c.size == size)?;
        if c.idle.len() <= c.clean_below || !c.idle.back()?.dirty {
            return None;
        }
        c.idle.pop_back()
    }

    /// Takes back a stack that was handed out but not run on (reserved by
    /// a spawn, `take_recent` taken instead): at the bottom of the idle
    /// ones if no coroutine ever ran on it (with the released ones, to be
    /// handed out last), else under the used ones.
    pub fn put_cold(&mut self, stack: GuardedStack) {
        if stack.program {
            return;
        }
        let c = self.class(stack.usable_size());
        if stack.dirty {
            c.idle.insert(c.clean_below, stack);
        } else {
            c.idle.push_front(stack);
            c.clean_below += 1;
        }
    }

    /// An idle stack of `size` known released or never run on (the
    /// bottom of the pool), if any.
    pub fn take_clean(&mut self, size: usize) -> Option<GuardedStack> {
        let size = round_size(size);
        let c = self.classes.iter_mut().find(|c| c.size == size)?;
        if c.clean_below == 0 {
            return None;
        }
        c.clean_below -= 1;
        c.idle.pop_front()
    }

    /// Whether `scavenge` may have work (idle stacks beyond the hot ones
    /// not yet known to be released).
    pub fn needs_scavenge(&self) -> bool {
        self.classes
            .iter()
            .any(|c| c.idle.len().saturating_sub(HOT) > c.clean_below)
    }

    /// Releases the pages of up to `max` idle stacks beyond the `HOT` most
    /// recent of each size, oldest first. Returns how many were released.
    pub fn scavenge(&mut self, max: usize) -> usize {
        let mut n = 0;
        for c in &mut self.classes {
            let keep_from = c.idle.len().saturating_sub(HOT);
            while c.clean_below < keep_from && n < max {
                let s = &mut c.idle[c.clean_below];
                if s.dirty {
                    s.release_pages();
                    n += 1;
                }
                c.clean_below += 1;
            }
        }
        n
    }

    /// Idle stacks held for `size`.
    pub fn idle(&self, size: usize) -> usize {
        let size = round_size(size);
        self.classes
            .iter()
            .find(|c| c.size == size)
            .map_or(0, |c| c.idle.len())
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
        let mut slab = GuardedStack::map_slab(64 * 1024).unwrap();
        assert!(slab.len() > 1, "several stacks share a slab");
        let s = slab.pop().unwrap();
        assert_eq!(s.usable_size(), 64 * 1024);
        let (lo, hi) = s.guard_range();
        assert_eq!(hi - lo, crate::sys::page_size());
        assert_eq!(s.limit().get(), lo);
        assert_eq!(s.base().get(), s.top());
        // SAFETY: writing the lowest and highest usable bytes of our own stack.
        unsafe {
            *((s.top() - 1) as *mut u8) = 7;
            *(hi as *mut u8) = 7;
        }
    }

    #[test]
    fn pool_reuses_without_mapping() {
        let mut pool = StackPool::new();
        let mut a = pool.get(64 * 1024).unwrap();
        let addr = a.top();
        assert_eq!(pool.slabs, 1);
        a.mark_used();
        pool.put(a);
        let b = pool.get(64 * 1024).unwrap();
        assert_eq!(b.top(), addr, "the most recently used stack comes back");
        let n = pool.idle(64 * 1024);
        let more: Vec<_> = (0..n).map(|_| pool.get(64 * 1024).unwrap()).collect();
        assert_eq!(pool.slabs, 1, "the rest of the slab served {n} more");
        pool.put(b);
        for s in more {
            pool.put(s);
        }
    }

    /// A stack nobody ran on goes under the used ones, whatever puts it
    /// back, and `take_clean` finds it there.
    #[test]
    fn untouched_stacks_go_under_used_ones() {
        let mut pool = StackPool::new();
        let size = 64 * 1024;
        let mut used = pool.get(size).unwrap();
        let untouched = pool.get(size).unwrap();
        let (used_top, untouched_top) = (used.top(), untouched.top());
        while pool.take_idle(size).is_some() {}
        used.mark_used();
        pool.put(used);
        pool.put(untouched);
        let r = pool.take_recent(size).expect("the used one is on top");
        assert_eq!(r.top(), used_top);
        assert!(
            pool.take_recent(size).is_none(),
            "only an untouched one left"
        );
        let c = pool.take_clean(size).expect("at the bottom");
        assert_eq!(c.top(), untouched_top);
        assert!(pool.take_clean(size).is_none());
    }

    #[test]
    fn scavenge_releases_all_but_hot() {
        let mut pool = StackPool::new();
        let n = HOT + 40;
        let mut stacks: Vec<_> = (0..n).map(|_| pool.get(16 * 1024).unwrap()).collect();
        for s in &mut stacks {
            s.mark_used();
            // SAFETY: dirtying the top byte of each idle stack we own.
            unsafe { *((s.top() - 1) as *mut u8) = 1 };
        }
        let tops: Vec<usize> = stacks.iter().map(|s| s.top()).collect();
        for s in stacks {
            pool.put(s);
        }
        assert!(pool.needs_scavenge());
        let released = pool.scavenge(usize::MAX);
        assert_eq!(released, n - HOT);
        assert!(!pool.needs_scavenge());
        // The released ones read back zero, the hot ones keep their byte.
        let zeroed = tops
            .iter()
            // SAFETY: reading the top byte of stacks still mapped by the pool.
            .filter(|&&t| unsafe { *((t - 1) as *const u8) } == 0)
            .count();
        assert_eq!(zeroed, n - HOT);
    }

    #[test]
    fn program_stack_is_trimmed_and_never_pooled() {
        let mem = vec![0u8; 64 * 1024];
        let addr = mem.as_ptr() as usize + 3;
        let s = GuardedStack::program(addr, 32 * 1024).unwrap();
        assert!(s.is_program());
        assert_eq!(s.limit().get() % 16, 0);
        assert_eq!(s.base().get() % 16, 0);
        assert!(s.limit().get() >= addr && s.base().get() <= addr + 32 * 1024);
        assert!(s.usable_size() > 32 * 1024 - 32);
        assert!(
            GuardedStack::program(addr, 100).is_none(),
            "below the minimum"
        );
        let mut pool = StackPool::new();
        pool.put(s);
        assert!(
            pool.classes.is_empty(),
            "the program's memory is not reused"
        );
    }

    #[test]
    fn recent_stacks_first_and_unused_ones_last() {
        let mut pool = StackPool::new();
        let size = 16 * 1024;
        let mut ran = pool.get(size).unwrap();
        let reserved = pool.get(size).unwrap();
        // Nothing ran on the pool's stacks yet: none is recent.
        assert!(pool.take_recent(size).is_none());
        ran.mark_used();
        let ran_top = ran.top();
        pool.put(ran);
        let r = pool
            .take_recent(size)
            .expect("the stack a coroutine ran on");
        assert_eq!(r.top(), ran_top);
        // The reserved one, never run on, goes under every idle stack:
        // the last one `get` hands out.
        let reserved_top = reserved.top();
        pool.put_cold(reserved);
        assert!(pool.take_recent(size).is_none());
        let n = pool.idle(size);
        let all: Vec<_> = (0..n).map(|_| pool.get(size).unwrap()).collect();
        assert_eq!(all.last().map(|s| s.top()), Some(reserved_top));
        pool.put(r);
        for s in all {
            pool.put(s);
        }
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
