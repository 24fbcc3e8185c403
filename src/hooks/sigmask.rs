//! Per-thread signal masks for threads that are coroutines:
//! `pthread_sigmask`, `sigprocmask`, `sigpending`, and the old `sigblock`,
//! `sigsetmask`, `siggetmask`, `sighold`, `sigrelse`.
//!
//! In a coroutine (its code, or a handler running as its) these read and
//! write the coroutine's own mask (`ident.sigmask`, 64 bits as the kernel
//! keeps them): the old mask comes back as the kernel would give it (only
//! the kernel's 8 bytes of a `sigset_t` are written, as glibc's call
//! does); SIGKILL, SIGSTOP and glibc's internal signals are never held.
//! The worker's kernel mask follows from every coroutine's
//! (`sched/sigmask.rs`): a coroutine that unblocks a signal nobody took
//! opens it on the workers, and this thread's kernel mask is updated
//! before the call returns, so a signal pending in the kernel is delivered
//! at once, in this coroutine; one pending on corun's side (for this
//! thread, or for the process) is delivered here too, as natively before
//! `sigprocmask` returns. In a handler, the kernel mask follows too (a
//! signal pending in the kernel that the change lets through runs at once,
//! nested, as natively: a child forked in a handler never returns from
//! it); one pending on corun's side runs when the handler returns.
//!
//! Outside coroutines (a native thread, runtime code, a process confined
//! by seccomp) every call is the real one.

use std::ffi::c_int;

use libc::sigset_t;

use crate::sched::park::in_signal_handler;
use crate::sched::{sigmask, signals, Running, Task};
use crate::sys::set_errno;

/// The coroutine whose mask these calls read and write; None: the
/// kernel's (a native thread, runtime code, a process confined by seccomp).
fn current() -> Option<Running> {
    crate::sched::current().filter(|_| !crate::sched::confined::is())
}

mod real {
    use libc::{c_int, sigset_t};
    crate::sys::real::real_fns! {
        fn pthread_sigmask(how: c_int, set: *const sigset_t, old: *mut sigset_t) -> c_int;
        fn sigprocmask(how: c_int, set: *const sigset_t, old: *mut sigset_t) -> c_int;
        fn sigpending(set: *mut sigset_t) -> c_int;
        fn sigblock(mask: c_int) -> c_int;
        fn sigsetmask(mask: c_int) -> c_int;
        fn siggetmask() -> c_int;
        fn sighold(sig: c_int) -> c_int;
        fn sigrelse(sig: c_int) -> c_int;
    }
}

/// Changes `t`'s mask as `how` says; returns the old mask, or an errno.
pub(crate) fn change(t: &Task, how: c_int, set: Option<u64>) -> Result<u64, c_int> {
    let old = t.ident.sigmask.load(std::sync::atomic::Ordering::SeqCst);
    let Some(s) = set else { return Ok(old) };
    let new = match how {
        libc::SIG_BLOCK => old | s,
        libc::SIG_UNBLOCK => old & !s,
        libc::SIG_SETMASK => s,
        _ => return Err(libc::EINVAL),
    } & !sigmask::UNBLOCKABLE;
    if new != old {
        signals::set_mask(t, new);
        if !in_signal_handler() {
            signals::sync_here();
            if old & !new != 0 {
                signals::run_pending(t);
            }
        } else {
            signals::sync_in_handler();
        }
    }
    Ok(old)
}

/// The kernel's 64 bits of a caller's sigset_t (None for NULL).
///
/// # Safety
/// `set` is NULL or readable.
unsafe fn read_set(set: *const sigset_t) -> Option<u64> {
    // SAFETY: per the contract; a sigset_t is at least 8 bytes.
    (!set.is_null()).then(|| unsafe { *(set as *const u64) })
}

/// Writes `m` as the kernel writes a mask: its 8 bytes.
///
/// # Safety
/// `set` is NULL or writable.
unsafe fn write_set(set: *mut sigset_t, m: u64) {
    if !set.is_null() {
        // SAFETY: per the contract.
        unsafe { *(set as *mut u64) = m };
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_sigmask(
    how: c_int,
    set: *const sigset_t,
    old: *mut sigset_t,
) -> c_int {
    let Some(t) = current() else {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_sigmask(how, set, old) };
    };
    // SAFETY: the caller's contract: NULL or a readable set.
    match change(&t, how, unsafe { read_set(set) }) {
        Ok(m) => {
            // SAFETY: the caller's contract: NULL or a writable set.
            unsafe { write_set(old, m) };
            0
        }
        Err(e) => e,
    }
}

/// The program's `syscall(SYS_rt_sigprocmask, how, set, old, size)` in a
/// coroutine: the hook's call, with the kernel's size check (the kernel's
/// 8 bytes); None elsewhere (the real system call).
pub(crate) fn raw_call(
    how: c_int,
    set: *const sigset_t,
    old: *mut sigset_t,
    size: usize,
) -> Option<libc::c_long> {
    current()?;
    let r = if size != 8 {
        libc::EINVAL
    } else {
        // SAFETY: the caller's pointers, NULL or as the kernel takes them.
        unsafe { pthread_sigmask(how, set, old) }
    };
    if r == 0 {
        return Some(0);
    }
    set_errno(r);
    Some(-1)
}

#[no_mangle]
pub unsafe extern "C" fn sigprocmask(
    how: c_int,
    set: *const sigset_t,
    old: *mut sigset_t,
) -> c_int {
    if current().is_none() {
        // SAFETY: the caller's contract.
        return unsafe { real::sigprocmask(how, set, old) };
    }
    // SAFETY: forwarded with the same contract.
    match unsafe { pthread_sigmask(how, set, old) } {
        0 => 0,
        e => {
            set_errno(e);
            -1
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn sigpending(set: *mut sigset_t) -> c_int {
    // SAFETY: the caller's contract.
    let r = unsafe { real::sigpending(set) };
    if r == 0 && !set.is_null() {
        if let Some(t) = current() {
            // The kernel's (process, and this worker's thread) and corun's
            // (this coroutine's, and the process signals corun holds).
            // SAFETY: writable per the contract; just written by the kernel.
            unsafe { *(set as *mut u64) |= signals::pending_for(&t) };
        }
    }
    r
}

/// The old BSD calls take and give the first 32 signals as an int.
fn bsd(how: c_int, mask: c_int) -> Option<c_int> {
    let t = current()?;
    let set = (how != libc::SIG_BLOCK || mask != 0).then_some(mask as u32 as u64);
    change(&t, how, set).ok().map(|m| m as u32 as c_int)
}

#[no_mangle]
pub unsafe extern "C" fn sigblock(mask: c_int) -> c_int {
    match bsd(libc::SIG_BLOCK, mask) {
        Some(m) => m,
        // SAFETY: plain integer.
        None => unsafe { real::sigblock(mask) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn sigsetmask(mask: c_int) -> c_int {
    match bsd(libc::SIG_SETMASK, mask) {
        Some(m) => m,
        // SAFETY: plain integer.
        None => unsafe { real::sigsetmask(mask) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn siggetmask() -> c_int {
    match current() {
        Some(t) => t.ident.sigmask.load(std::sync::atomic::Ordering::SeqCst) as u32 as c_int,
        // SAFETY: no arguments.
        None => unsafe { real::siggetmask() },
    }
}

/// sighold/sigrelse: one signal, 0 or -1/EINVAL.
fn one(how: c_int, sig: c_int) -> Option<c_int> {
    let t = current()?;
    if !(1..=64).contains(&sig) {
        set_errno(libc::EINVAL);
        return Some(-1);
    }
    change(&t, how, Some(sigmask::bit(sig))).ok().map(|_| 0)
}

#[no_mangle]
pub unsafe extern "C" fn sighold(sig: c_int) -> c_int {
    match one(libc::SIG_BLOCK, sig) {
        Some(r) => r,
        // SAFETY: plain integer.
        None => unsafe { real::sighold(sig) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn sigrelse(sig: c_int) -> c_int {
    match one(libc::SIG_UNBLOCK, sig) {
        Some(r) => r,
        // SAFETY: plain integer.
        None => unsafe { real::sigrelse(sig) },
    }
}
