//! `gai_suspend`: the wait for `getaddrinfo_a` requests, parked.
//!
//! glibc resolves each `getaddrinfo_a` request on a helper thread of its
//! own (made with its internal pthread_create: a kernel thread, which may
//! block in the lookup) and `gai_suspend` waits on a futex word through an
//! inline system call that the helper wakes: under corun that wait held
//! the caller's worker, and every other coroutine there waited for the
//! slowest DNS answer with it.
//!
//! Here a coroutine waits parked instead, as `aio.rs` waits for AIO
//! requests: a request's own state says whether it is done (`gai_error`
//! is EAI_INPROGRESS until the helper has stored the result), read between
//! naps on the worker's timer of 20 us doubling to 1 ms; a completion is
//! seen at most about a millisecond late. Results are glibc's:
//!
//! - no listed request in progress (every one done, or none listed):
//!   glibc's own call answers at once (EAI_ALLDONE in glibc 2.36, whose
//!   "finished entry" test never holds; whatever the running glibc says);
//! - 0 as soon as one of the requests in progress at the call is done
//!   (as in glibc, one that was done already does not end the wait);
//! - when the timeout (relative, CLOCK_MONOTONIC) passes, what glibc's
//!   call says with no time left: EAI_AGAIN as documented, EAI_SYSTEM in
//!   glibc 2.36 (it maps its futex wait's timeout to EAGAIN, then EAGAIN
//!   to EAI_SYSTEM);
//! - EAI_INTR when a signal handler runs in the thread (glibc's futex wait
//!   ends so; without a timeout, a handler with SA_RESTART lets the wait
//!   go on, as the kernel restarts a futex wait without a timeout).
//!
//! Unlike `aio_suspend` this is no cancellation point: glibc disables
//! cancellation for its wait, and so does the parked one.
//!
//! The process's only coroutine, and native threads, call glibc's.

use std::ffi::{c_int, c_void};

use libc::timespec;

use super::aio::{wait_parked, Waited};
use crate::sched::parking;
use crate::sys::{now_ns, timespec_ns};

mod real {
    use libc::{c_int, c_void, timespec};
    crate::sys::real::real_fns! {
        fn gai_suspend(list: *const *const c_void, n: c_int, timeout: *const timespec) -> c_int;
        fn gai_error(req: *mut c_void) -> c_int;
    }
}

/// glibc's `<netdb.h>` values (the libc crate does not have them all).
const EAI_INPROGRESS: c_int = -100;
const EAI_ALLDONE: c_int = -103;
const EAI_INTR: c_int = -104;

/// Whether request `req` (a `struct gaicb *`) is still being resolved.
///
/// # Safety
/// `req` points at a gaicb the program handed to `getaddrinfo_a`.
unsafe fn in_progress(req: *const c_void) -> bool {
    // SAFETY: the caller's contract; gai_error only reads the request.
    unsafe { real::gai_error(req as *mut c_void) == EAI_INPROGRESS }
}

#[no_mangle]
pub unsafe extern "C" fn gai_suspend(
    list: *const *const c_void,
    n: c_int,
    timeout: *const timespec,
) -> c_int {
    let valid_timeout = timeout.is_null()
        // SAFETY: non-null: the caller's timespec.
        || crate::hooks::sleep::valid_timespec(unsafe { &*timeout });
    if !parking() || n <= 0 || list.is_null() || !valid_timeout {
        // SAFETY: the caller's contract.
        return unsafe { real::gai_suspend(list, n, timeout) };
    }
    // SAFETY: `list` holds `n` entries (the caller's contract).
    let entries = unsafe { std::slice::from_raw_parts(list, n as usize) };
    // glibc waits for the requests in progress when it is called (one
    // listed that is done already does not end the wait).
    let pending: Vec<*const c_void> = entries
        .iter()
        .copied()
        // SAFETY: a listed request of the caller's.
        .filter(|&r| !r.is_null() && unsafe { in_progress(r) })
        .collect();
    if pending.is_empty() {
        // Nothing to wait for: glibc's answer, given at once.
        // SAFETY: the caller's contract.
        return unsafe { real::gai_suspend(list, n, timeout) };
    }
    // SAFETY: requests of the caller's, listed above.
    let one_done = || pending.iter().any(|&r| !unsafe { in_progress(r) });
    let deadline = (!timeout.is_null())
        // SAFETY: checked non-null and valid above.
        .then(|| now_ns().saturating_add(timespec_ns(unsafe { &*timeout })));
    match wait_parked(one_done, deadline, timeout.is_null(), false) {
        Waited::Done => 0,
        Waited::TimedOut if one_done() => 0,
        Waited::TimedOut => {
            // glibc's own answer for a timeout, which depends on its
            // version (2.36 says EAI_SYSTEM, mapping its futex wait's
            // EAGAIN as no timeout): its call with no time left.
            let zero = timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: the caller's list; a valid timespec of ours.
            match unsafe { real::gai_suspend(list, n, &zero) } {
                // A request finished since the look above.
                0 | EAI_ALLDONE => 0,
                rc => rc,
            }
        }
        Waited::Interrupted => EAI_INTR,
    }
}
