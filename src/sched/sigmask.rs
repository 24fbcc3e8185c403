//! The kernel signal mask of the worker threads.
//!
//! A coroutine's signal mask is its own (`ident.sigmask`, kept by the mask
//! hooks); the kernel only knows the mask of each worker thread, shared by
//! every coroutine that runs there. Which one should it be?
//!
//! - Too open, and a signal nobody wants is taken from the kernel: one with
//!   a handler is caught by corun's trampoline (which can keep it pending
//!   on corun's side), but one left at SIG_DFL would kill the process that
//!   natively kept it pending for `sigwait`, and `signalfd`, `sigwait` and
//!   `sigpending` no longer see it in the kernel.
//! - Too closed, and a coroutine that unblocked a signal never gets it.
//!
//! So a worker blocks exactly the signals that *every* live coroutine
//! blocks: a signal is let through as soon as one coroutine may take it.
//! corun's trampoline then picks the coroutine (`signals.rs`), as the
//! kernel picks a thread. A program that blocks SIGINT/SIGTERM in `main`
//! before making its threads and waits for them in `sigwait` or a
//! `signalfd` finds them pending in the kernel, as natively; one thread
//! that unblocks them opens them on every worker.
//!
//! Tallies, not a scan: `LIVE` counts live tasks and `BLOCKERS[s]` those
//! that block signal `s`; the workers' mask is `{s : BLOCKERS[s] >= LIVE}`.
//! A task that starts adds its mask (most block nothing: one increment);
//! a mask change adjusts the bits that changed. The tallies follow the
//! *counted* mask of a task (`ident.sig.counted`), which is its mask
//! outside handlers: the mask a handler runs with lasts only as long as
//! the handler, and a signal that arrives meanwhile is kept pending by
//! corun and delivered when the handler returns, as the kernel would.
//!
//! The desired mask is recomputed under a try-lock that never waits (it
//! may run in a signal handler): a caller that finds it taken leaves a
//! note, and the holder recomputes again before letting go. A change bumps
//! `EPOCH`; each worker applies the mask to its own thread (no thread can
//! set another's) at its next scheduler pass, and the thread that made the
//! change applies it at once, so a signal a coroutine just unblocked and
//! that is pending in the kernel is delivered before its `sigprocmask`
//! returns, as natively. Never blocked: the synchronous fault signals
//! (a blocked SIGSEGV kills; corun's overflow report needs it), SIGKILL and
//! SIGSTOP, and glibc's two internal signals (32 and 33).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// Bit of signal `sig` in a 64-bit set.
#[inline]
pub const fn bit(sig: i32) -> u64 {
    1u64 << (sig - 1)
}

/// Signals no mask holds (the kernel ignores SIGKILL/SIGSTOP, glibc strips
/// its SIGCANCEL and SIGSETXID from every set).
pub const UNBLOCKABLE: u64 = bit(libc::SIGKILL) | bit(libc::SIGSTOP) | bit(32) | bit(33);

/// Signals a worker never blocks.
pub const NEVER_BLOCKED: u64 = UNBLOCKABLE
    | bit(libc::SIGSEGV)
    | bit(libc::SIGBUS)
    | bit(libc::SIGILL)
    | bit(libc::SIGFPE)
    | bit(libc::SIGTRAP)
    | bit(libc::SIGSYS);

// A forked child re-counts its only task (`reset`, then `count_in`): these
// share the page of the statics every child writes (`sys::ForkReset`).
#[link_section = "corun_fork"] // written after a fork: sys::ForkReset
static LIVE: AtomicU64 = AtomicU64::new(0);
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
static BLOCKERS: [AtomicU32; 64] = [const { AtomicU32::new(0) }; 64];
/// Sum of BLOCKERS: zero when no task blocks anything (the usual case).
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
static BLOCKED_PAIRS: AtomicU64 = AtomicU64::new(0);
/// The mask every worker should have, and its generation.
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
static KMASK: AtomicU64 = AtomicU64::new(0);
static EPOCH: AtomicU64 = AtomicU64::new(1);
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
static LOCK: AtomicBool = AtomicBool::new(false);
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
static AGAIN: AtomicBool = AtomicBool::new(false);

fn add(mask: u64, delta: i32) {
    // Most tasks block nothing: no read-modify-write at all then (each is
    // a locked instruction, paid twice per spawn and join).
    if mask == 0 {
        return;
    }
    let mut m = mask;
    while m != 0 {
        let s = m.trailing_zeros() as usize;
        m &= m - 1;
        if delta > 0 {
            BLOCKERS[s].fetch_add(1, Ordering::SeqCst);
        } else {
            BLOCKERS[s].fetch_sub(1, Ordering::SeqCst);
        }
    }
    let n = mask.count_ones() as u64;
    if delta > 0 {
        BLOCKED_PAIRS.fetch_add(n, Ordering::SeqCst);
    } else {
        BLOCKED_PAIRS.fetch_sub(n, Ordering::SeqCst);
    }
}

/// A task with mask `mask` starts. Returns true if the workers' mask
/// changed. (Once a task lives, a new one can only open signals.)
/// A task that blocks every signal the workers block changes nothing (the
/// workers' mask only loses the signals it does not block): no recompute,
/// which a program whose threads all block a signal (or a process started
/// with one blocked) paid at every spawn.
pub fn count_in(mask: u64) -> bool {
    add(mask, 1);
    let first = LIVE.fetch_add(1, Ordering::SeqCst) == 0;
    (first || KMASK.load(Ordering::SeqCst) & !mask != 0) && recompute()
}

/// A task with counted mask `mask` ended.
pub fn count_out(mask: u64) -> bool {
    LIVE.fetch_sub(1, Ordering::SeqCst);
    add(mask, -1);
    (BLOCKED_PAIRS.load(Ordering::SeqCst) != 0 || KMASK.load(Ordering::SeqCst) != 0) && recompute()
}

/// A task's counted mask changes from `old` to `new`.
pub fn count_change(old: u64, new: u64) -> bool {
    if old == new {
        return false;
    }
    add(new & !old, 1);
    add(old & !new, -1);
    recompute()
}

/// Forgets every task (a forked child re-counts its only one).
pub fn reset() {
    use crate::sys::ForkReset;
    LIVE.reset_to(0);
    // Every entry, not only when BLOCKED_PAIRS says some is set: a spawn
    // on another thread cut by the fork may have counted one and not yet
    // the sum.
    for b in &BLOCKERS {
        b.reset_to(0);
    }
    BLOCKED_PAIRS.reset_to(0);
    LOCK.reset_to(false);
    AGAIN.reset_to(false);
}

fn desired() -> u64 {
    let live = LIVE.load(Ordering::SeqCst);
    if live == 0 || BLOCKED_PAIRS.load(Ordering::SeqCst) == 0 {
        return 0;
    }
    let mut d = 0u64;
    for (s, b) in BLOCKERS.iter().enumerate() {
        if b.load(Ordering::SeqCst) as u64 >= live {
            d |= 1 << s;
        }
    }
    // corun's preemption signal too, while preemption is on (`preempt.rs`).
    d & !NEVER_BLOCKED & !preempt_bit()
}

fn preempt_bit() -> u64 {
    if super::preempt::enabled() {
        bit(super::preempt::SIGNAL)
    } else {
        0
    }
}

/// Recomputes the workers' mask; true if it changed. Never waits.
fn recompute() -> bool {
    let mut changed = false;
    AGAIN.store(true, Ordering::SeqCst);
    while AGAIN.load(Ordering::SeqCst) {
        if LOCK.swap(true, Ordering::SeqCst) {
            // The holder sees AGAIN before letting go, and recomputes.
            break;
        }
        AGAIN.store(false, Ordering::SeqCst);
        let d = desired();
        if KMASK.load(Ordering::SeqCst) != d {
            KMASK.store(d, Ordering::SeqCst);
            EPOCH.fetch_add(1, Ordering::SeqCst);
            changed = true;
        }
        LOCK.store(false, Ordering::SeqCst);
    }
    changed
}

/// The mask every worker thread should have.
#[inline]
pub fn kernel_mask() -> u64 {
    KMASK.load(Ordering::Acquire)
}

/// Its generation.
#[inline]
pub fn epoch() -> u64 {
    EPOCH.load(Ordering::Acquire)
}

/// Sets this thread's kernel mask to `mask` (raw: the hooks interpose
/// `sigprocmask`).
pub fn set_thread_mask(mask: u64) {
    // SAFETY: an 8-byte kernel sigset from a live local; this thread only.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &mask as *const u64,
            std::ptr::null_mut::<u64>(),
            8usize,
        )
    };
}

/// This thread's kernel mask.
pub fn thread_mask() -> u64 {
    let mut old = 0u64;
    // SAFETY: a query (NULL set) into a live 8-byte local.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_BLOCK,
            std::ptr::null::<u64>(),
            &mut old as *mut u64,
            8usize,
        )
    };
    old
}

/// Applies the workers' mask to this (worker) thread if `applied`, the
/// generation it last applied, is stale. Not for signal handlers: the
/// kernel puts the interrupted mask back when a handler returns.
pub fn apply_here(applied: &AtomicU64) {
    let e = epoch();
    if applied.load(Ordering::Relaxed) == e {
        return;
    }
    set_thread_mask(kernel_mask());
    applied.store(e, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_decide_the_mask() {
        reset();
        let usr1 = bit(libc::SIGUSR1);
        assert!(count_in(usr1) || kernel_mask() == usr1);
        assert_eq!(kernel_mask(), usr1, "the only task blocks it");
        count_in(0);
        assert_eq!(kernel_mask(), 0, "a second task takes it");
        count_change(0, usr1 | bit(libc::SIGSEGV));
        assert_eq!(kernel_mask(), usr1, "faults are never blocked");
        count_out(usr1 | bit(libc::SIGSEGV));
        count_out(usr1);
        assert_eq!(kernel_mask(), 0);
        reset();
    }
}
