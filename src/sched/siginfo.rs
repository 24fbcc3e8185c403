//! Where the `siginfo_t` of a pending signal waits until its handler runs.
//!
//! A signal that cannot run its handler where it arrived (its target is
//! parked, or another coroutine) is only marked pending (a bit in the
//! target's `ident.pending`, or in the process set of `signals.rs`); its
//! siginfo (sender pid and uid, `sigqueue` value, child status...) is kept
//! here for the handler that runs later, in the target's own context.
//!
//! The store is filled from signal handlers, so it never locks and never
//! allocates: a fixed table of slots, each claimed with a compare-and-swap
//! of its key (`(owner + 1) << 8 | sig`; owner 0 is the process), written,
//! then published. As the kernel keeps one instance of a pending standard
//! signal, a target keeps one slot per signal: the caller marks the
//! pending bit after `put` and gives the slot back (`take`) when the bit
//! was set already. When the table is full the handler still runs, with a
//! siginfo that only names the signal (SI_USER, no sender).
//!
//! The slots are claimed from the first; `HIGH` is one past the last slot
//! ever claimed, so the searches look no further. A forked child's `clear`
//! then touches none of the table's 9 pages when no siginfo was ever kept
//! (each would be a page fault: `sys::ForkReset`).

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// `sizeof(siginfo_t)` in 8-byte words.
pub const WORDS: usize = 16;
pub type Info = [u64; WORDS];

const SLOTS: usize = 256;
const FREE: u64 = 0;
const BUSY: u64 = 1;

struct Slot {
    key: AtomicU64,
    info: UnsafeCell<Info>,
}

// SAFETY: `info` is only written or read by the thread that moved `key` to
// BUSY with a compare-and-swap, until it publishes another key.
unsafe impl Sync for Slot {}

static TABLE: [Slot; SLOTS] = [const {
    Slot {
        key: AtomicU64::new(FREE),
        info: UnsafeCell::new([0; WORDS]),
    }
}; SLOTS];

/// One past the highest slot ever claimed. Raised before the slot is
/// claimed, so a key that is not FREE always lies below it; whoever must
/// see a kept siginfo (the pending bit marked after `put`) sees it raised.
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
static HIGH: AtomicUsize = AtomicUsize::new(0);

/// The slots ever claimed.
fn used() -> &'static [Slot] {
    &TABLE[..HIGH.load(Ordering::Acquire).min(SLOTS)]
}

fn key(owner: u64, sig: i32) -> u64 {
    (owner.wrapping_add(1) << 8) | (sig as u64 & 0xff)
}

/// Keeps `info` for `sig` pending at `owner` (a task id, 0: the process).
/// Returns false when the table is full.
pub fn put(owner: u64, sig: i32, info: &Info) -> bool {
    let k = key(owner, sig);
    for (i, s) in TABLE.iter().enumerate() {
        if s.key.load(Ordering::Relaxed) != FREE {
            continue;
        }
        HIGH.fetch_max(i + 1, Ordering::AcqRel);
        if s.key
            .compare_exchange(FREE, BUSY, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            // SAFETY: the slot is ours (BUSY) until the key is published.
            unsafe { *s.info.get() = *info };
            s.key.store(k, Ordering::Release);
            return true;
        }
    }
    false
}

/// Takes the siginfo kept for `sig` at `owner`, if any.
pub fn take(owner: u64, sig: i32) -> Option<Info> {
    let k = key(owner, sig);
    for s in used() {
        if s.key.load(Ordering::Relaxed) == k
            && s.key
                .compare_exchange(k, BUSY, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            // SAFETY: the slot is ours (BUSY) until it is freed.
            let info = unsafe { *s.info.get() };
            s.key.store(FREE, Ordering::Release);
            return Some(info);
        }
    }
    None
}

/// Hands the siginfo of `sig` from one owner to another (a process signal
/// given to a thread).
pub fn transfer(from: u64, to: u64, sig: i32) {
    let (kf, kt) = (key(from, sig), key(to, sig));
    for s in used() {
        if s.key.load(Ordering::Relaxed) == kf
            && s.key
                .compare_exchange(kf, kt, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            return;
        }
    }
}

/// Frees every slot of `owner` (a thread that ended: its pending signals go
/// with it, as a thread's do).
pub fn forget(owner: u64) {
    for sig in 1..=64 {
        while take(owner, sig).is_some() {}
    }
}

/// Frees every slot (a forked child starts with no pending signal).
pub fn clear() {
    for s in used() {
        let k = s.key.load(Ordering::Relaxed);
        if k > BUSY {
            let _ = s
                .key
                .compare_exchange(k, FREE, Ordering::AcqRel, Ordering::Relaxed);
        }
    }
}

/// A siginfo that names only the signal: what a handler gets when the
/// sender's was not kept.
pub fn bare(sig: i32) -> Info {
    let mut info = [0u64; WORDS];
    info[0] = sig as u32 as u64; // si_signo; si_errno 0
    info[1] = 0; // si_code SI_USER (0), then padding
    info
}

/// Copies a kernel siginfo into an `Info`.
///
/// # Safety
/// `p` is NULL or points at a readable `siginfo_t`.
pub unsafe fn from_ptr(p: *const libc::siginfo_t, sig: i32) -> Info {
    if p.is_null() {
        return bare(sig);
    }
    let mut info = [0u64; WORDS];
    // SAFETY: a siginfo_t is WORDS * 8 bytes, readable per the contract.
    unsafe {
        std::ptr::copy_nonoverlapping(p as *const u64, info.as_mut_ptr(), WORDS);
    }
    info
}

/// `si_code` of an `Info`.
pub fn code(info: &Info) -> i32 {
    info[1] as u32 as i32
}

/// `si_pid` of an `Info` whose code carries one (user, queue, tkill).
pub fn pid(info: &Info) -> i32 {
    info[2] as u32 as i32
}

/// The `sigval` of an `Info` from `sigqueue` (second word of the union).
pub fn value(info: &Info) -> u64 {
    info[3]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_take_transfer() {
        let mut i = bare(10);
        i[3] = 77;
        assert!(put(0, 10, &i));
        transfer(0, 5, 10);
        assert!(take(0, 10).is_none());
        let got = take(5, 10).expect("moved to task 5");
        assert_eq!(value(&got), 77);
        assert!(take(5, 10).is_none());
        assert!(put(9, 12, &i));
        forget(9);
        assert!(take(9, 12).is_none());
    }
}
