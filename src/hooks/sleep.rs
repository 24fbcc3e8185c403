//! `sleep`, `usleep`, `nanosleep`, `clock_nanosleep`.
//!
//! In a coroutine these park on the worker's timer heap instead of
//! blocking the worker. A signal handler that runs in the coroutine ends
//! the sleep, as the kernel ends one whatever SA_RESTART says: `nanosleep`
//! and a relative `clock_nanosleep` report the time left, `usleep` fails
//! with EINTR, `sleep` returns the whole seconds left, as glibc's does.
//! Zero-length sleeps yield to the other coroutines.
//! A coroutine whose cancel token is cancelled (`sched::token`) ends its
//! sleep at once: -1 and errno ECANCELED (`sleep`: the seconds left, with
//! errno ECANCELED; `clock_nanosleep`: ECANCELED returned). Every sleep is
//! a pthread cancellation point.
//!
//! `clock_nanosleep` parks for CLOCK_MONOTONIC, CLOCK_REALTIME,
//! CLOCK_BOOTTIME and CLOCK_TAI, relative or TIMER_ABSTIME (an absolute time
//! is turned into a monotonic deadline when the call is made: a later step
//! of the realtime clock does not move it). It returns the error number,
//! as it does natively (EINVAL for a bad timespec, or from the real call
//! for clocks corun does not park on, which pass through).

use std::ffi::{c_int, c_uint};

use libc::{timespec, useconds_t};

use crate::sched::signals::Interruptible;
use crate::sched::{current, park_cancelable, parking, token, yield_now, Woken};
use crate::sys::{now_ns, ns_timespec, real, set_errno, timespec_ns};

/// How a sleep ended.
pub(crate) enum Slept {
    /// It lasted its whole length.
    Done,
    /// A signal handler ran in the coroutine: the time left (ns).
    Interrupted(u64),
    /// The coroutine's cancel token was cancelled: the time left (ns).
    Cancelled(u64),
}

/// Parks for `ns` nanoseconds (yields when 0): a pthread cancellation
/// point, cut short by a signal handler or a cancelled token.
pub(crate) fn park_for(ns: u64) -> Slept {
    if ns == 0 {
        yield_now();
        return Slept::Done;
    }
    // One clock read per sleep and one per early wake: the first look uses
    // the time the deadline was computed from, and a park that ended
    // because its timer fired is past the deadline already (a timer fires
    // only once the clock read at the poll reached it).
    let mut now = now_ns();
    let deadline = now.saturating_add(ns);
    let intr = Interruptible::begin();
    loop {
        if intr.check().is_some() {
            return Slept::Interrupted(deadline.saturating_sub(now));
        }
        if now >= deadline {
            return Slept::Done;
        }
        if token::cancel_point() {
            return Slept::Cancelled(deadline.saturating_sub(now));
        }
        crate::sched::waitdesc::describe(crate::sched::waitdesc::Cause::Timer, deadline);
        let woken = park_cancelable(|_| true, Some(deadline));
        if let Some(t) = current() {
            crate::sched::identity::cancel_point(&t.ident);
        }
        now = if woken == Woken::TimedOut {
            deadline
        } else {
            now_ns()
        };
    }
}

/// Whether a timespec is one the kernel accepts as a duration.
pub(crate) fn valid_timespec(ts: &timespec) -> bool {
    ts.tv_sec >= 0 && (0..1_000_000_000).contains(&ts.tv_nsec)
}

#[no_mangle]
pub unsafe extern "C" fn nanosleep(req: *const timespec, rem: *mut timespec) -> c_int {
    if !parking() || req.is_null() {
        // SAFETY: the caller's nanosleep contract (NULL gives EFAULT there).
        return unsafe { real::nanosleep(req, rem) };
    }
    // SAFETY: non-null, and the caller's contract makes it readable.
    let ts = unsafe { *req };
    if !valid_timespec(&ts) {
        set_errno(libc::EINVAL);
        return -1;
    }
    match park_for(timespec_ns(&ts)) {
        Slept::Done => 0,
        Slept::Interrupted(left) => {
            if !rem.is_null() {
                // SAFETY: the caller's contract makes a non-NULL rem writable.
                unsafe { *rem = ns_timespec(left) };
            }
            set_errno(libc::EINTR);
            -1
        }
        Slept::Cancelled(_) => {
            set_errno(libc::ECANCELED);
            -1
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn usleep(us: useconds_t) -> c_int {
    if !parking() {
        // SAFETY: plain integer.
        return unsafe { real::usleep(us) };
    }
    match park_for(us as u64 * 1000) {
        Slept::Done => 0,
        Slept::Interrupted(_) => {
            set_errno(libc::EINTR);
            -1
        }
        Slept::Cancelled(_) => {
            set_errno(libc::ECANCELED);
            -1
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn sleep(s: c_uint) -> c_uint {
    if !parking() {
        // SAFETY: plain integer.
        return unsafe { real::sleep(s) };
    }
    match park_for(s as u64 * 1_000_000_000) {
        Slept::Done => 0,
        // glibc's sleep: the whole seconds left of its nanosleep.
        Slept::Interrupted(left) => (left / 1_000_000_000) as c_uint,
        // The seconds left, rounded up as glibc's sleep does; errno says why.
        Slept::Cancelled(left) => {
            set_errno(libc::ECANCELED);
            left.div_ceil(1_000_000_000) as c_uint
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn clock_nanosleep(
    clock: libc::clockid_t,
    flags: c_int,
    req: *const timespec,
    rem: *mut timespec,
) -> c_int {
    let parkable = matches!(
        clock,
        libc::CLOCK_MONOTONIC | libc::CLOCK_REALTIME | libc::CLOCK_BOOTTIME | libc::CLOCK_TAI
    );
    if !parking() || req.is_null() || !parkable {
        // SAFETY: the caller's clock_nanosleep contract.
        return unsafe { real::clock_nanosleep(clock, flags, req, rem) };
    }
    // SAFETY: non-null, and the caller's contract makes it readable.
    let ts = unsafe { *req };
    if !valid_timespec(&ts) {
        return libc::EINVAL;
    }
    let abs = flags & libc::TIMER_ABSTIME != 0;
    let ns = if abs {
        let mut now = timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid out-pointer; clock_gettime is not interposed.
        unsafe { libc::clock_gettime(clock, &mut now) };
        timespec_ns(&ts).saturating_sub(timespec_ns(&now))
    } else {
        timespec_ns(&ts)
    };
    match park_for(ns) {
        Slept::Done => 0,
        Slept::Interrupted(left) => {
            if !abs && !rem.is_null() {
                // SAFETY: the caller's contract makes a non-NULL rem writable.
                unsafe { *rem = ns_timespec(left) };
            }
            libc::EINTR
        }
        Slept::Cancelled(_) => libc::ECANCELED,
    }
}
