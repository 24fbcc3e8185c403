//! The coroutines as a debugger sees them: an exported, C-layout registry
//! (`corun_debug`) that `scripts/corun-gdb.py` reads in a live process or
//! a core file, and the registers each coroutine saved when it last
//! suspended, from which `corun dump` (`unwind.rs`) and gdb walk its stack
//! (docs/ARCHITECTURE.md §11).
//!
//! gdb cannot read Rust's own layouts (a `Vec<Option<Arc<Task>>>` has none
//! it may rely on) and a core file cannot run code, so the registry is plain
//! memory found through one unmangled symbol, with a layout that has a
//! version number. Layout version 1 (x86_64, little-endian, every field 8
//! bytes unless said):
//!
//! ```text
//! corun_debug:  magic "CORUNDBG" | version u32 | record size u32 |
//!               lists | heads[lists] (address of a record, or 0)
//! record:       next | prev | id | address of the state word (u64; its
//!               low 3 bits: 0 new, 1 runnable, 2 running, 3 parked,
//!               4 woken, 5 done) | pc | sp | fp (rbp) | stack low |
//!               stack high | start routine | address of the wait cause
//!               (u8, `waitdesc::Cause`) | address of the wait object (u64)
//!               | name (16 bytes, NUL-padded; empty: none given)
//! ```
//!
//! A task's record is linked into list `id % lists` when the task is
//! registered (`sigdispatch::register`) and unlinked when it ends, under
//! that shard's lock: no lock of its own, nothing on the park path. `pc`,
//! `sp`, `fp` are written by the task itself just before each suspension
//! (three stores) and describe its stack while it is suspended; `stack low`
//! and `stack high` bound every read of it. Readers in the process (the
//! dump thread) see a snapshot: they check the state word before and after.

use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Lists in the registry: the registry's shards (`sigdispatch`).
pub const LISTS: usize = 16;
/// Bumped when the layout above changes.
pub const VERSION: u32 = 1;

#[repr(C)]
pub struct DebugRoot {
    magic: [u8; 8],
    version: AtomicU32,
    record_size: AtomicU32,
    lists: AtomicUsize,
    heads: [AtomicPtr<DebugRecord>; LISTS],
}

/// The registry gdb finds by name. A forked child links its task here:
/// on the page of the statics every child writes (`sys::ForkReset`).
#[no_mangle]
#[used]
#[link_section = "corun_fork"] // written after a fork: sys::ForkReset
pub static corun_debug: DebugRoot = DebugRoot {
    magic: *b"CORUNDBG",
    version: AtomicU32::new(VERSION),
    record_size: AtomicU32::new(std::mem::size_of::<DebugRecord>() as u32),
    lists: AtomicUsize::new(LISTS),
    heads: [const { AtomicPtr::new(std::ptr::null_mut()) }; LISTS],
};

/// One task's entry (embedded in its `Task`, which does not move: it lives
/// in an `Arc`).
#[repr(C)]
pub struct DebugRecord {
    next: AtomicPtr<DebugRecord>,
    prev: AtomicPtr<DebugRecord>,
    id: AtomicU64,
    state_addr: AtomicUsize,
    pc: AtomicUsize,
    sp: AtomicUsize,
    fp: AtomicUsize,
    stack_lo: AtomicUsize,
    stack_hi: AtomicUsize,
    start: AtomicUsize,
    cause_addr: AtomicUsize,
    object_addr: AtomicUsize,
    name: [AtomicU64; 2],
}

/// The registers a suspended coroutine saved: where to start walking its
/// stack, and the stack's bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Saved {
    pub pc: usize,
    pub sp: usize,
    pub fp: usize,
    pub stack: (usize, usize),
}

impl DebugRecord {
    pub fn new(id: u64, start: usize) -> DebugRecord {
        DebugRecord {
            next: AtomicPtr::new(std::ptr::null_mut()),
            prev: AtomicPtr::new(std::ptr::null_mut()),
            id: AtomicU64::new(id),
            state_addr: AtomicUsize::new(0),
            pc: AtomicUsize::new(0),
            sp: AtomicUsize::new(0),
            fp: AtomicUsize::new(0),
            stack_lo: AtomicUsize::new(0),
            stack_hi: AtomicUsize::new(0),
            start: AtomicUsize::new(start),
            cause_addr: AtomicUsize::new(0),
            object_addr: AtomicUsize::new(0),
            name: [AtomicU64::new(0), AtomicU64::new(0)],
        }
    }

    /// Links the record into list `list`, with the addresses of the task's
    /// state word and wait description. Caller: that shard's lock held.
    pub(super) fn link(&self, list: usize, state: usize, cause: usize, object: usize) {
        self.state_addr.store(state, Relaxed);
        self.cause_addr.store(cause, Relaxed);
        self.object_addr.store(object, Relaxed);
        self.link_to(&corun_debug.heads[list % LISTS]);
    }

    fn link_to(&self, head: &AtomicPtr<DebugRecord>) {
        let me = self as *const DebugRecord as *mut DebugRecord;
        let old = head.load(Relaxed);
        self.prev.store(std::ptr::null_mut(), Relaxed);
        self.next.store(old, Relaxed);
        // SAFETY: records in a list belong to registered tasks, alive while
        // registered; the shard's lock is held.
        if let Some(o) = unsafe { old.as_ref() } {
            o.prev.store(me, Relaxed);
        }
        head.store(me, Relaxed);
    }

    /// Takes the record out of list `list`. Caller: that shard's lock held,
    /// the record linked.
    pub(super) fn unlink(&self, list: usize) {
        self.unlink_from(&corun_debug.heads[list % LISTS]);
    }

    fn unlink_from(&self, head: &AtomicPtr<DebugRecord>) {
        let (prev, next) = (self.prev.load(Relaxed), self.next.load(Relaxed));
        // SAFETY: neighbours are linked records of live tasks (lock held).
        match unsafe { prev.as_ref() } {
            Some(p) => p.next.store(next, Relaxed),
            None => head.store(next, Relaxed),
        }
        // SAFETY: as above.
        if let Some(n) = unsafe { next.as_ref() } {
            n.prev.store(prev, Relaxed);
        }
        self.next.store(std::ptr::null_mut(), Relaxed);
        self.prev.store(std::ptr::null_mut(), Relaxed);
    }

    /// The coroutine's stack: set when its coroutine is made.
    pub(super) fn set_stack(&self, lo: usize, hi: usize) {
        self.stack_lo.store(lo, Relaxed);
        self.stack_hi.store(hi, Relaxed);
    }

    /// The thread's name (at most 15 bytes are kept, as Linux does).
    pub fn set_name(&self, name: &[u8]) {
        let mut b = [0u8; 16];
        let n = name
            .iter()
            .position(|&c| c == 0)
            .unwrap_or(name.len())
            .min(15);
        b[..n].copy_from_slice(&name[..n]);
        let (lo, hi) = b.split_at(8);
        self.name[0].store(u64::from_le_bytes(lo.try_into().unwrap_or([0; 8])), Relaxed);
        self.name[1].store(u64::from_le_bytes(hi.try_into().unwrap_or([0; 8])), Relaxed);
    }

    /// The addresses of the records beside this one in its list (0:
    /// none). Read without the lock: only to be prefetched, never followed.
    #[inline]
    pub(super) fn neighbours(&self) -> [usize; 2] {
        [
            self.prev.load(Relaxed) as usize,
            self.next.load(Relaxed) as usize,
        ]
    }

    /// The stack pointer saved at the last suspension (0 before the first):
    /// where the task's stack is touched first when it resumes.
    #[inline]
    pub(super) fn saved_sp(&self) -> usize {
        self.sp.load(Relaxed)
    }

    /// Saves the caller's pc, sp and rbp: called by the task itself just
    /// before it suspends (inlined, so they are those of the suspending
    /// function, whose unwind table the walk starts from).
    #[inline(always)]
    pub(super) fn save_registers(&self) {
        #[cfg(target_arch = "x86_64")]
        {
            let (pc, sp, fp): (usize, usize, usize);
            // SAFETY: reads rip, rsp and rbp into registers; no memory or
            // stack is touched, no flag changed.
            unsafe {
                std::arch::asm!(
                    "lea {pc}, [rip]",
                    "mov {sp}, rsp",
                    "mov {fp}, rbp",
                    pc = out(reg) pc,
                    sp = out(reg) sp,
                    fp = out(reg) fp,
                    options(nomem, nostack, preserves_flags)
                )
            };
            self.pc.store(pc, Relaxed);
            self.sp.store(sp, Relaxed);
            self.fp.store(fp, Relaxed);
        }
    }

    /// The saved registers as they are, bounds unchecked (tests).
    #[cfg(test)]
    pub fn saved_unchecked(&self) -> Saved {
        Saved {
            pc: self.pc.load(Relaxed),
            sp: self.sp.load(Relaxed),
            fp: self.fp.load(Relaxed),
            stack: (self.stack_lo.load(Relaxed), self.stack_hi.load(Relaxed)),
        }
    }

    /// What the task saved at its last suspension (None before any, or
    /// before its stack exists).
    pub fn saved(&self) -> Option<Saved> {
        let s = Saved {
            pc: self.pc.load(Relaxed),
            sp: self.sp.load(Relaxed),
            fp: self.fp.load(Relaxed),
            stack: (self.stack_lo.load(Relaxed), self.stack_hi.load(Relaxed)),
        };
        (s.pc != 0 && s.stack.0 < s.stack.1 && (s.stack.0..s.stack.1).contains(&s.sp)).then_some(s)
    }
}

/// Calls `f` with each record of list `list`, newest first, until it
/// returns false. Caller: that shard's lock held (the records stay linked
/// and alive meanwhile).
pub(super) fn walk(list: usize, mut f: impl FnMut(*const DebugRecord) -> bool) {
    let mut p = corun_debug.heads[list % LISTS].load(Relaxed);
    while !p.is_null() {
        // SAFETY: a linked record belongs to a registered task, alive while
        // registered; the caller holds the lock that keeps it linked.
        let next = unsafe { (*p).next.load(Relaxed) };
        if !f(p) {
            return;
        }
        p = next;
    }
}

/// In a forked child: the parent's tasks are gone (their records with
/// them); the lists start empty before the child's main registers again.
pub(super) fn after_fork_child() {
    for h in &corun_debug.heads {
        crate::sys::ForkReset::reset_to(h, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_and_unlink_keep_the_list() {
        let (a, b, c) = (
            DebugRecord::new(1, 0),
            DebugRecord::new(2, 0),
            DebugRecord::new(3, 0),
        );
        let head: AtomicPtr<DebugRecord> = AtomicPtr::new(std::ptr::null_mut());
        let ids = || {
            let mut v = Vec::new();
            let mut p = head.load(Relaxed);
            // SAFETY: the records above are alive for the whole test.
            while let Some(r) = unsafe { p.as_ref() } {
                v.push(r.id.load(Relaxed));
                p = r.next.load(Relaxed);
            }
            v
        };
        a.link_to(&head);
        b.link_to(&head);
        c.link_to(&head);
        assert_eq!(ids(), [3, 2, 1]);
        b.unlink_from(&head);
        assert_eq!(ids(), [3, 1]);
        c.unlink_from(&head);
        assert_eq!(ids(), [1]);
        a.unlink_from(&head);
        assert_eq!(ids(), Vec::<u64>::new());
    }

    #[test]
    fn names_are_cut_at_15_bytes() {
        let r = DebugRecord::new(1, 0);
        r.set_name(b"a-very-long-thread-name");
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&r.name[0].load(Relaxed).to_le_bytes());
        b[8..].copy_from_slice(&r.name[1].load(Relaxed).to_le_bytes());
        assert_eq!(&b, b"a-very-long-thr\0");
    }
}
