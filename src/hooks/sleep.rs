//! `sleep`, `usleep`, `nanosleep`, `clock_nanosleep`.
//!
//! In a coroutine these park on the worker's timer heap instead of
//! blocking the worker. Signals do not interrupt a parked sleep (the worker
//! thread takes the signal, the coroutine keeps sleeping), so `nanosleep`
//! never reports EINTR and never writes `rem`: the behaviour of a sleep that
//! no signal interrupted. Zero-length sleeps yield to the other coroutines.
//!
//! `clock_nanosleep` parks for CLOCK_MONOTONIC, CLOCK_REALTIME,
//! CLOCK_BOOTTIME and CLOCK_TAI, relative or TIMER_ABSTIME (an absolute time
//! is turned into a monotonic deadline when the call is made: a later step
//! of the realtime clock does not move it). It returns the error number,
//! as it does natively (EINVAL for a bad timespec, or from the real call
//! for clocks corun does not park on, which pass through).

use std::ffi::{c_int, c_uint};

use libc::{timespec, useconds_t};

use crate::sched::{parking, sleep_until, yield_now};
use crate::sys::{now_ns, real, set_errno, timespec_ns};

/// Parks for `ns` nanoseconds (yields when 0).
pub(crate) fn park_for(ns: u64) {
    if ns == 0 {
        yield_now();
    } else {
        sleep_until(now_ns().saturating_add(ns));
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
    park_for(timespec_ns(&ts));
    0
}

#[no_mangle]
pub unsafe extern "C" fn usleep(us: useconds_t) -> c_int {
    if !parking() {
        // SAFETY: plain integer.
        return unsafe { real::usleep(us) };
    }
    park_for(us as u64 * 1000);
    0
}

#[no_mangle]
pub unsafe extern "C" fn sleep(s: c_uint) -> c_uint {
    if !parking() {
        // SAFETY: plain integer.
        return unsafe { real::sleep(s) };
    }
    park_for(s as u64 * 1_000_000_000);
    0
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
    let ns = if flags & libc::TIMER_ABSTIME != 0 {
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
    park_for(ns);
    0
}
