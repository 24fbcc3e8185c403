//! POSIX AIO waits: `aio_suspend` and `lio_listio(LIO_WAIT)`.
//!
//! glibc runs each request on a helper thread of its own (made with its
//! internal pthread_create: a kernel thread, which may block) and the
//! caller waits on a futex word through an inline system call, woken by
//! the helper: under corun that wait held the caller's worker, and every
//! other coroutine there with it (a coroutine that was to write the pipe
//! the request reads never ran).
//!
//! Here a coroutine waits parked instead. Completion is read from each
//! request's own state (`aio_error` is EINPROGRESS until the helper has
//! stored the result), between naps on the worker's timer that start at
//! 20 us and double to 1 ms: the helper's wake-up goes to a futex word
//! inside glibc's call, which corun does not see. So a completion is
//! noticed at most about a millisecond late, the price of not holding the
//! worker. Results are glibc's:
//!
//! - `aio_suspend`: 0 as soon as one listed request is done (or none is
//!   listed); -1 with EAGAIN when the timeout (relative, CLOCK_MONOTONIC)
//!   passes; -1 with EINTR when a signal handler runs in the thread
//!   (glibc's futex wait ends so; without a timeout, a handler with
//!   SA_RESTART lets the wait go on, as the kernel restarts it).
//! - `lio_listio(LIO_WAIT)`: the requests are queued with glibc's own
//!   `lio_listio(LIO_NOWAIT)` (no notification: LIO_WAIT ignores `sig`),
//!   then the thread waits for every one; 0 if all succeeded, -1 with EIO
//!   if one could not be queued or failed, -1 with EINTR when a handler
//!   without SA_RESTART runs first (the requests go on, as natively).
//!
//! The process's only coroutine, and native threads, call glibc's.

use std::ffi::{c_int, c_void};

use libc::{sigevent, timespec};

use crate::sched::signals::Interruptible;
use crate::sched::{current, park, park_cancelable, parking};
use crate::sys::{now_ns, set_errno, timespec_ns};

mod real {
    use libc::{c_int, c_void, sigevent, timespec};
    crate::sys::real::real_fns! {
        fn aio_suspend(list: *const *const c_void, n: c_int, timeout: *const timespec) -> c_int;
        fn lio_listio(mode: c_int, list: *const *mut c_void, n: c_int, sig: *mut sigevent) -> c_int;
        fn aio_error(cb: *const c_void) -> c_int;
    }
}

/// `aio_lio_opcode` in glibc's `struct aiocb` (after `aio_fildes`).
const OPCODE_OFFSET: usize = 4;

/// First and longest nap between looks at the requests (ns).
const FIRST_NAP: u64 = 20_000;
const LONGEST_NAP: u64 = 1_000_000;

/// How a wait for requests ended.
pub(crate) enum Waited {
    Done,
    TimedOut,
    Interrupted,
}

/// Waits, parked, until `done()` says so, `deadline` (monotonic ns)
/// passes, or a handler runs (one with SA_RESTART lets the wait go on
/// when `restartable`). A `cancelable` wait is a cancellation point
/// (`aio_suspend`); `gai.rs`'s is not (glibc defers cancellation there).
pub(crate) fn wait_parked(
    mut done: impl FnMut() -> bool,
    deadline: Option<u64>,
    restartable: bool,
    cancelable: bool,
) -> Waited {
    let mut intr = Interruptible::begin();
    let mut nap = FIRST_NAP;
    loop {
        if done() {
            return Waited::Done;
        }
        if let Some(restart) = intr.check() {
            if !(restart && restartable) {
                return Waited::Interrupted;
            }
            intr = Interruptible::begin();
        }
        let now = now_ns();
        let mut until = now + nap;
        if let Some(d) = deadline {
            if now >= d {
                return Waited::TimedOut;
            }
            until = until.min(d);
        }
        crate::sched::waitdesc::describe(crate::sched::waitdesc::Cause::Timer, until);
        if cancelable {
            park_cancelable(|_| true, Some(until));
            if let Some(t) = current() {
                crate::sched::identity::cancel_point(&t.ident);
            }
        } else {
            park(|_| true, Some(until));
        }
        nap = (nap * 2).min(LONGEST_NAP);
    }
}

/// Whether request `cb` is still in progress.
///
/// # Safety
/// `cb` points at an aiocb the program handed to glibc.
unsafe fn in_progress(cb: *const c_void) -> bool {
    // SAFETY: the caller's contract; aio_error only reads the aiocb.
    unsafe { real::aio_error(cb) == libc::EINPROGRESS }
}

#[no_mangle]
pub unsafe extern "C" fn aio_suspend(
    list: *const *const c_void,
    n: c_int,
    timeout: *const timespec,
) -> c_int {
    let valid_timeout = timeout.is_null()
        // SAFETY: non-null: the caller's timespec.
        || crate::hooks::sleep::valid_timespec(unsafe { &*timeout });
    if !parking() || n < 0 || list.is_null() || !valid_timeout {
        // SAFETY: the caller's contract.
        return unsafe { real::aio_suspend(list, n, timeout) };
    }
    // SAFETY: `list` holds `n` entries (the caller's contract).
    let entries = unsafe { std::slice::from_raw_parts(list, n as usize) };
    let deadline = (!timeout.is_null())
        // SAFETY: checked non-null and valid above.
        .then(|| now_ns().saturating_add(timespec_ns(unsafe { &*timeout })));
    let any_done = || {
        let mut listed = false;
        for &cb in entries.iter().filter(|cb| !cb.is_null()) {
            listed = true;
            // SAFETY: a listed request of the caller's.
            if !unsafe { in_progress(cb) } {
                return true;
            }
        }
        !listed
    };
    match wait_parked(any_done, deadline, timeout.is_null(), true) {
        Waited::Done => 0,
        Waited::TimedOut => {
            set_errno(libc::EAGAIN);
            -1
        }
        Waited::Interrupted => {
            set_errno(libc::EINTR);
            -1
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn aio_suspend64(
    list: *const *const c_void,
    n: c_int,
    timeout: *const timespec,
) -> c_int {
    // SAFETY: the same function in glibc (64-bit offsets are the default).
    unsafe { aio_suspend(list, n, timeout) }
}

#[no_mangle]
pub unsafe extern "C" fn lio_listio(
    mode: c_int,
    list: *const *mut c_void,
    n: c_int,
    sig: *mut sigevent,
) -> c_int {
    if mode != libc::LIO_WAIT || !parking() || n < 0 || list.is_null() {
        // SAFETY: the caller's contract.
        return unsafe { real::lio_listio(mode, list, n, sig) };
    }
    // SIGEV_NONE: LIO_WAIT asks for no notification of the whole list.
    // SAFETY: a zeroed sigevent is valid; only its notify field is read.
    let mut none: sigevent = unsafe { std::mem::zeroed() };
    none.sigev_notify = libc::SIGEV_NONE;
    // SAFETY: the caller's list, queued as glibc's LIO_WAIT would queue it.
    let queued_all = unsafe { real::lio_listio(libc::LIO_NOWAIT, list, n, &mut none) } == 0;
    // SAFETY: `list` holds `n` entries (the caller's contract).
    let entries = unsafe { std::slice::from_raw_parts(list, n as usize) };
    let requests = || {
        entries.iter().copied().filter(|cb| {
            // SAFETY: a listed aiocb; its opcode is an int after aio_fildes.
            !cb.is_null()
                && unsafe { *((*cb as *const u8).add(OPCODE_OFFSET) as *const c_int) }
                    != libc::LIO_NOP
        })
    };
    // SAFETY: listed requests of the caller's.
    let all_done = || requests().all(|cb| !unsafe { in_progress(cb) });
    match wait_parked(all_done, None, true, true) {
        Waited::Interrupted => {
            set_errno(libc::EINTR);
            -1
        }
        _ => {
            // SAFETY: as above.
            if queued_all && requests().all(|cb| unsafe { real::aio_error(cb) } == 0) {
                0
            } else {
                set_errno(libc::EIO);
                -1
            }
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn lio_listio64(
    mode: c_int,
    list: *const *mut c_void,
    n: c_int,
    sig: *mut sigevent,
) -> c_int {
    // SAFETY: the same function in glibc (64-bit offsets are the default).
    unsafe { lio_listio(mode, list, n, sig) }
}
