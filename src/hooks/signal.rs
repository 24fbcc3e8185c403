//! `sigwait`, `sigwaitinfo`, `sigtimedwait`, `pause`, `sigsuspend`,
//! `sched_yield`.
//!
//! The classic design "block signals everywhere, one thread sits in
//! sigwait" would hold a whole worker in the kernel under corun. In a
//! coroutine these calls instead poll for a pending signal of the set with
//! a zero-timeout `sigtimedwait` and park a few milliseconds between polls
//! (1 ms growing to 10 ms), until a signal comes or the timeout passes. The
//! signals must be blocked, as they must be natively for sigwait to see
//! them: a program that blocks them in `main` before starting threads
//! blocks them on the workers, which inherit that mask.
//!
//! `sched_yield` in a coroutine lets the other coroutines of its worker run
//! (a spin loop waiting for a coroutine parked on the same worker would
//! otherwise spin for ever); with none runnable it yields the thread.

use std::ffi::c_int;

use libc::{siginfo_t, sigset_t, timespec};

use crate::sched::{in_coroutine, sleep_until, yield_now};
use crate::sys::{errno, now_ns, set_errno, timespec_ns};

mod real {
    use libc::{siginfo_t, sigset_t, timespec};
    use std::ffi::c_int;
    crate::sys::real::real_fns! {
        fn sigwait(set: *const sigset_t, sig: *mut c_int) -> c_int;
        fn sigwaitinfo(set: *const sigset_t, info: *mut siginfo_t) -> c_int;
        fn sigtimedwait(set: *const sigset_t, info: *mut siginfo_t, ts: *const timespec) -> c_int;
        fn sched_yield() -> c_int;
    }
}

/// Waits for a signal of `set` without holding the worker. Returns the
/// signal number, or -1 with errno (EAGAIN on timeout, EINVAL...).
fn wait_parking(set: *const sigset_t, info: *mut siginfo_t, deadline: Option<u64>) -> c_int {
    let zero = timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let mut pause = 1_000_000u64;
    loop {
        // SAFETY: the caller's set and info pointers; a zero timeout polls.
        let r = unsafe { real::sigtimedwait(set, info, &zero) };
        if r > 0 {
            return r;
        }
        let e = errno();
        if e != libc::EAGAIN && e != libc::EINTR {
            return -1;
        }
        let now = now_ns();
        if deadline.is_some_and(|d| now >= d) {
            set_errno(libc::EAGAIN);
            return -1;
        }
        let mut until = now + pause;
        if let Some(d) = deadline {
            until = until.min(d);
        }
        sleep_until(until);
        pause = (pause * 2).min(10_000_000);
    }
}

#[no_mangle]
pub unsafe extern "C" fn sigwait(set: *const sigset_t, sig: *mut c_int) -> c_int {
    if !in_coroutine() {
        // SAFETY: the caller's sigwait contract.
        return unsafe { real::sigwait(set, sig) };
    }
    let saved = errno();
    let r = wait_parking(set, std::ptr::null_mut(), None);
    if r < 0 {
        let e = errno();
        set_errno(saved);
        return e;
    }
    if !sig.is_null() {
        // SAFETY: the caller passed a writable int.
        unsafe { *sig = r };
    }
    set_errno(saved);
    0
}

#[no_mangle]
pub unsafe extern "C" fn sigwaitinfo(set: *const sigset_t, info: *mut siginfo_t) -> c_int {
    if !in_coroutine() {
        // SAFETY: the caller's contract.
        return unsafe { real::sigwaitinfo(set, info) };
    }
    wait_parking(set, info, None)
}

#[no_mangle]
pub unsafe extern "C" fn sigtimedwait(
    set: *const sigset_t,
    info: *mut siginfo_t,
    ts: *const timespec,
) -> c_int {
    if !in_coroutine() || ts.is_null() {
        if ts.is_null() && in_coroutine() {
            return wait_parking(set, info, None);
        }
        // SAFETY: the caller's contract.
        return unsafe { real::sigtimedwait(set, info, ts) };
    }
    // SAFETY: non-null and readable per the contract.
    let t = unsafe { *ts };
    if t.tv_nsec < 0 || t.tv_nsec >= 1_000_000_000 || t.tv_sec < 0 {
        set_errno(libc::EINVAL);
        return -1;
    }
    wait_parking(set, info, Some(now_ns().saturating_add(timespec_ns(&t))))
}

#[no_mangle]
pub unsafe extern "C" fn sched_yield() -> c_int {
    if in_coroutine() && crate::sched::worker::current_worker().is_some_and(|w| w.has_other_work())
    {
        yield_now();
        return 0;
    }
    // SAFETY: no arguments.
    unsafe { real::sched_yield() }
}

mod real_wait {
    use libc::sigset_t;
    use std::ffi::c_int;
    crate::sys::real::real_fns! {
        fn pause() -> c_int;
        fn sigsuspend(mask: *const sigset_t) -> c_int;
    }
}

/// How often a coroutine in pause/sigsuspend looks for a signal.
const SIGNAL_POLL_NS: u64 = 10_000_000;

/// The signals that would be delivered on this thread under `mask`:
/// pending for the thread or the process, and not blocked by `mask`.
fn deliverable_under(mask: &sigset_t) -> bool {
    // SAFETY: a zeroed sigset_t is valid; sigpending fills it.
    let mut pending: sigset_t = unsafe { std::mem::zeroed() };
    if unsafe { libc::sigpending(&mut pending) } != 0 {
        return false;
    }
    (1..libc::SIGRTMAX()).any(|s| {
        // SAFETY: valid sets and signal numbers.
        unsafe { libc::sigismember(&pending, s) == 1 && libc::sigismember(mask, s) != 1 }
    })
}

/// `pause` in a coroutine parks; every 10 ms it returns -1/EINTR, as if a
/// signal had been handled, so `while (!done) pause();` sees the flags its
/// handlers set (handlers run on the worker threads whenever the signal is
/// not blocked there). A spurious EINTR is the price of not holding the
/// worker in the kernel.
#[no_mangle]
pub unsafe extern "C" fn pause() -> c_int {
    if !in_coroutine() {
        // SAFETY: no arguments.
        return unsafe { real_wait::pause() };
    }
    sleep_until(now_ns() + SIGNAL_POLL_NS);
    set_errno(libc::EINTR);
    -1
}

/// `sigsuspend(mask)` in a coroutine: once a signal that `mask` lets
/// through is pending, install `mask` on the worker thread for a moment so
/// its handler runs there, restore the mask, and return -1/EINTR. Until
/// then, park in 10 ms steps.
#[no_mangle]
pub unsafe extern "C" fn sigsuspend(mask: *const sigset_t) -> c_int {
    if !in_coroutine() || mask.is_null() {
        // SAFETY: the caller's contract.
        return unsafe { real_wait::sigsuspend(mask) };
    }
    // SAFETY: non-null, readable per the contract.
    let m = unsafe { *mask };
    loop {
        if deliverable_under(&m) {
            // SAFETY: valid sets; the raw syscall applies to this thread only.
            unsafe {
                let mut old: sigset_t = std::mem::zeroed();
                crate::sys::real::syscall!(
                    libc::SYS_rt_sigprocmask,
                    libc::SIG_SETMASK,
                    &m,
                    &mut old,
                    8usize,
                );
                crate::sys::real::syscall!(
                    libc::SYS_rt_sigprocmask,
                    libc::SIG_SETMASK,
                    &old,
                    std::ptr::null_mut::<sigset_t>(),
                    8usize,
                );
            }
            set_errno(libc::EINTR);
            return -1;
        }
        sleep_until(now_ns() + SIGNAL_POLL_NS);
    }
}
