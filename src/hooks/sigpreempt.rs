//! The preemption signal (`sched/preempt.rs`: SIGURG) as the program sees
//! it: corun keeps its trampoline in the kernel for it for the whole run,
//! and `sigaction` and the `signal` family report and record what the
//! program set, without letting SIG_DFL or SIG_IGN reach the kernel.
//!
//! - a handler of the program's goes to the trampoline's table as any
//!   other (`sigdeliver.rs` runs it for a SIGURG that is not corun's);
//! - SIG_DFL or SIG_IGN: no handler in the table (the trampoline then drops
//!   a SIGURG of the program's, which is what both mean for SIGURG), and
//!   the disposition is kept here for `sigaction`'s old action;
//! - the kernel's action always has SA_SIGINFO (the trampoline tells
//!   corun's request by its siginfo) and SA_RESTART (the request may land
//!   on a system call the program makes inline: it restarts).
//!
//! Only while preemption is on; off (`CORUN_PREEMPT_MS=0`), SIGURG is the
//! program's like any signal.

use std::ffi::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};

use libc::sigaction as SigAction;

use super::sigdeliver::{is_function, trampoline, FLAGS, HANDLER, MASK};
use crate::sched::preempt;

/// The program's disposition when it has no handler: SIG_DFL or SIG_IGN.
static NO_HANDLER: AtomicUsize = AtomicUsize::new(libc::SIG_DFL);

/// Whether corun keeps `sig` in the kernel for itself.
#[inline]
pub fn owns(sig: c_int) -> bool {
    sig == preempt::SIGNAL && preempt::enabled()
}

/// The kernel action for handler flags `flags` and mask `mask`.
fn kernel_action(flags: c_int, mask: libc::sigset_t) -> SigAction {
    // SAFETY: a zeroed sigaction is a valid value.
    let mut a: SigAction = unsafe { std::mem::zeroed() };
    a.sa_sigaction = trampoline as *const () as usize;
    a.sa_flags = flags | libc::SA_SIGINFO | libc::SA_RESTART;
    a.sa_mask = mask;
    a
}

/// At start, before `main`: puts the trampoline in the kernel for the
/// signal, keeping an inherited SIG_IGN as the program's view. Preemption
/// is turned off if the kernel refuses.
pub fn install() {
    if !preempt::enabled() {
        return;
    }
    // SAFETY: zeroed sigactions are valid; a query, then our action.
    unsafe {
        let mut cur: SigAction = std::mem::zeroed();
        if crate::sys::real::sigaction(preempt::SIGNAL, std::ptr::null(), &mut cur) != 0 {
            preempt::disable();
            return;
        }
        if cur.sa_sigaction == libc::SIG_IGN {
            NO_HANDLER.store(libc::SIG_IGN, Ordering::Relaxed);
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        let a = kernel_action(0, empty);
        if crate::sys::real::sigaction(preempt::SIGNAL, &a, std::ptr::null_mut()) != 0 {
            preempt::disable();
        }
    }
}

/// What the program set for the signal, as `sigaction` reports it.
fn program_view() -> SigAction {
    let i = preempt::SIGNAL as usize;
    // SAFETY: a zeroed sigaction is a valid value.
    let mut v: SigAction = unsafe { std::mem::zeroed() };
    let h = HANDLER[i].load(Ordering::Acquire);
    if is_function(h) && h != 0 {
        v.sa_sigaction = h;
        v.sa_flags = FLAGS[i].load(Ordering::Acquire);
        // SAFETY: a sigset_t is at least 8 bytes; the first 8 are the kernel's.
        unsafe {
            *(&mut v.sa_mask as *mut libc::sigset_t as *mut u64) = MASK[i].load(Ordering::Acquire)
        };
    } else {
        v.sa_sigaction = NO_HANDLER.load(Ordering::Relaxed);
    }
    v
}

/// `sigaction` for the signal while corun owns it.
///
/// # Safety
/// The caller's sigaction contract: `act` and `old` are NULL or valid.
pub unsafe fn sigaction(act: *const SigAction, old: *mut SigAction) -> c_int {
    let i = preempt::SIGNAL as usize;
    let before = program_view();
    // SAFETY: readable per the contract.
    if let Some(a) = unsafe { act.as_ref() } {
        if is_function(a.sa_sigaction) {
            let k = kernel_action(a.sa_flags & !libc::SA_RESETHAND, a.sa_mask);
            // SAFETY: our trampoline with the program's mask and flags.
            if unsafe { crate::sys::real::sigaction(preempt::SIGNAL, &k, std::ptr::null_mut()) }
                != 0
            {
                return -1;
            }
            FLAGS[i].store(a.sa_flags, Ordering::Release);
            // SAFETY: as in `program_view`.
            MASK[i].store(
                unsafe { *(&a.sa_mask as *const libc::sigset_t as *const u64) },
                Ordering::Release,
            );
            HANDLER[i].store(a.sa_sigaction, Ordering::Release);
        } else if a.sa_sigaction == libc::SIG_DFL || a.sa_sigaction == libc::SIG_IGN {
            HANDLER[i].store(0, Ordering::Release);
            NO_HANDLER.store(a.sa_sigaction, Ordering::Relaxed);
        } else {
            crate::sys::set_errno(libc::EINVAL);
            return -1;
        }
    }
    if !old.is_null() {
        // SAFETY: writable per the contract.
        unsafe { *old = before };
    }
    0
}

/// `signal`, `bsd_signal`, `sysv_signal` for the signal while corun owns
/// it (glibc's flags for `signal`: SA_RESTART).
pub fn signal(h: libc::sighandler_t) -> libc::sighandler_t {
    // SAFETY: zeroed sigactions are valid values.
    let (mut a, mut o): (SigAction, SigAction) = unsafe { std::mem::zeroed() };
    a.sa_sigaction = h;
    a.sa_flags = libc::SA_RESTART;
    // SAFETY: our own readable and writable actions.
    if unsafe { sigaction(&a, &mut o) } != 0 {
        return libc::SIG_ERR;
    }
    o.sa_sigaction
}
