//! `epoll_wait`, `epoll_pwait`, `epoll_pwait2`, `epoll_create`,
//! `epoll_create1`.
//!
//! A coroutine waiting on its own epoll set parks on that epoll fd's
//! readiness: the program's epoll fd is registered (once, edge-triggered)
//! with the worker's netpoller, which is allowed (epoll fds nest) and makes
//! the program's fd readable exactly when its ready list is not empty. The
//! events themselves always come from the real call with a zero timeout, so
//! they are the kernel's (level- and edge-triggered, EPOLLONESHOT,
//! EPOLLEXCLUSIVE alike):
//!
//! ```text
//!   loop: snapshot epfd's read sequence;
//!         real epoll_pwait(timeout 0) -> events (or an error)? return them
//!         deadline? 0; park_until_ready(epfd, read, snapshot, deadline)
//! ```
//!
//! A coroutine alone on its worker skips all that and blocks in the real
//! call, as natively (`epoll_solo.rs`); reserved events that way adds to an
//! epoll set never reach the program, whichever call returns them.
//!
//! A handler that runs in the coroutine meanwhile ends the wait with EINTR;
//! the signal mask of `epoll_pwait`/`epoll_pwait2` is the coroutine's for
//! the whole call, as in `poll.rs`. `epoll_create`/`epoll_create1` reset the new fd's entry
//! (see `open.rs` for why).

use std::ffi::c_int;

use libc::{epoll_event, sigset_t, timespec};

use super::epoll_solo::{self, Solo};
use super::fdctl::note_new_fd;
use super::poll::{parking_with, with_wait_mask};
use crate::sched::fdtable::{self, Dir, KIND_OTHER};
use crate::sched::{park_until_ready, parking, FdWait};
use crate::sys::{now_ns, real, set_errno};

pub(crate) mod next {
    use libc::{c_int, epoll_event, sigset_t, timespec};
    crate::sys::real::real_fns! {
        fn epoll_pwait(epfd: c_int, ev: *mut epoll_event, max: c_int, timeout: c_int,
            mask: *const sigset_t) -> c_int;
        fn epoll_pwait2(epfd: c_int, ev: *mut epoll_event, max: c_int, ts: *const timespec,
            mask: *const sigset_t) -> c_int;
        fn epoll_create(size: c_int) -> c_int;
        fn epoll_create1(flags: c_int) -> c_int;
    }
}

/// epoll_wait/epoll_pwait in a coroutine; None: make the real call.
fn epoll_parking(
    epfd: c_int,
    ev: *mut epoll_event,
    max: c_int,
    deadline: Option<u64>,
    mask: *const sigset_t,
) -> Option<c_int> {
    let e = fdtable::get(epfd)?;
    // SAFETY: the caller's epoll_pwait contract; timeout 0.
    let check = || unsafe { next::epoll_pwait(epfd, ev, max, 0, mask) };
    let mut blocking = false;
    let r = with_wait_mask(mask, |intr| {
        let mut solo = true;
        loop {
            if solo {
                // Alone on the worker: one blocking call, as natively.
                if intr.check().is_some() {
                    set_errno(libc::EINTR);
                    return -1;
                }
                if crate::sched::token::cancel_point() {
                    set_errno(libc::ECANCELED);
                    return -1;
                }
                match epoll_solo::wait(epfd, ev, max, deadline, mask) {
                    Solo::Done(r) => return r,
                    Solo::Round => {}
                    Solo::No => epoll_solo::unshare(epfd),
                }
            }
            // The snapshot (two atomic loads) comes before the check, so
            // one check per round is enough: an edge after it moves the
            // sequence.
            let seen = e.snapshot(Dir::Read);
            let r = check();
            // SAFETY: on success the kernel wrote `r` events to `ev`.
            let r = unsafe { epoll_solo::filter(epfd, ev, r) };
            if r != 0 {
                return r;
            }
            if intr.check().is_some() {
                set_errno(libc::EINTR);
                return -1;
            }
            if deadline.is_some_and(|d| now_ns() >= d) {
                return 0;
            }
            if crate::sched::token::cancel_point() {
                set_errno(libc::ECANCELED);
                return -1;
            }
            solo = true;
            match park_until_ready(epfd, Dir::Read, seen, deadline) {
                FdWait::Ready | FdWait::TimedOut => {}
                FdWait::Closed => {
                    set_errno(libc::EBADF);
                    return -1;
                }
                FdWait::NotPollable(_) => {
                    blocking = true;
                    return 0;
                }
            }
        }
    });
    (!blocking).then_some(r)
}

unsafe fn epoll_wait_inner(epfd: c_int, ev: *mut epoll_event, max: c_int, timeout: c_int) -> c_int {
    if parking() && timeout != 0 {
        let deadline = super::poll::deadline_ms(timeout);
        if let Some(r) = epoll_parking(epfd, ev, max, deadline, std::ptr::null()) {
            return r;
        }
    }
    passthrough(epfd, ev, timeout, |t| {
        // SAFETY: the caller's epoll_wait contract.
        unsafe { real::epoll_wait(epfd, ev, max, t) }
    })
}

unsafe fn epoll_pwait_inner(
    epfd: c_int,
    ev: *mut epoll_event,
    max: c_int,
    timeout: c_int,
    mask: *const sigset_t,
) -> c_int {
    if parking_with(mask) && timeout != 0 {
        let deadline = super::poll::deadline_ms(timeout);
        if let Some(r) = epoll_parking(epfd, ev, max, deadline, mask) {
            return r;
        }
    }
    passthrough(epfd, ev, timeout, |t| {
        // SAFETY: the caller's epoll_pwait contract.
        unsafe { next::epoll_pwait(epfd, ev, max, t, mask) }
    })
}

unsafe fn epoll_pwait2_inner(
    epfd: c_int,
    ev: *mut epoll_event,
    max: c_int,
    ts: *const timespec,
    mask: *const sigset_t,
) -> c_int {
    if parking_with(mask) {
        // SAFETY: NULL or readable per the caller's contract.
        let deadline = unsafe { super::poll::parking_deadline(ts) };
        if let Some(d) = deadline {
            if let Some(r) = epoll_parking(epfd, ev, max, d, mask) {
                return r;
            }
        }
    }
    // SAFETY: the caller's epoll_pwait2 contract.
    let r = unsafe { next::epoll_pwait2(epfd, ev, max, ts, mask) };
    // SAFETY: on success the kernel wrote `r` events to `ev`.
    let n = unsafe { epoll_solo::filter(epfd, ev, r) };
    if n == 0 && r > 0 {
        // Only a reserved event: the kernel's wait had not ended for the
        // program; its own timeout (a timespec) is rare here, so wait
        // again as epoll_pwait with the time left, in milliseconds.
        // SAFETY: NULL or readable per the caller's contract.
        let left = match unsafe { super::poll::parking_deadline(ts) } {
            None => 0,
            Some(None) => -1,
            Some(Some(d)) => d.saturating_sub(now_ns()).div_ceil(1_000_000) as c_int,
        };
        return passthrough(epfd, ev, left, |t| {
            // SAFETY: the caller's epoll_pwait2 contract.
            unsafe { next::epoll_pwait(epfd, ev, max, t, mask) }
        });
    }
    n
}

/// A real epoll call `call(timeout_ms)` without reserved events
/// (`epoll_solo.rs`): one that returned only those waits again for the
/// time left.
fn passthrough(
    epfd: c_int,
    ev: *mut epoll_event,
    mut timeout: c_int,
    call: impl Fn(c_int) -> c_int,
) -> c_int {
    if !epoll_solo::used() {
        return call(timeout);
    }
    let deadline = super::poll::deadline_ms(timeout);
    loop {
        let r = call(timeout);
        // SAFETY: on success the kernel wrote `r` events to `ev`.
        let n = unsafe { epoll_solo::filter(epfd, ev, r) };
        if n != 0 || r <= 0 || timeout == 0 {
            return n;
        }
        if let Some(d) = deadline {
            let left = d.saturating_sub(now_ns());
            if left == 0 {
                return 0;
            }
            timeout = left.div_ceil(1_000_000).min(c_int::MAX as u64) as c_int;
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn epoll_create(size: c_int) -> c_int {
    // SAFETY: plain integer.
    let r = unsafe { next::epoll_create(size) };
    if r >= 0 {
        note_new_fd(r, KIND_OTHER, false);
        epoll_solo::reset(r);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn epoll_create1(flags: c_int) -> c_int {
    // SAFETY: plain integer.
    let r = unsafe { next::epoll_create1(flags) };
    if r >= 0 {
        note_new_fd(r, KIND_OTHER, false);
        epoll_solo::reset(r);
    }
    r
}

// Each epoll wait ends, as poll's do, with a look at the time slice
// (`sched/slice.rs`): an event loop whose waits are answered at once (a
// level-triggered descriptor it leaves to another thread) lets the other
// threads of its worker run after a slice, as the kernel's preemption
// would. A wait that parked has switched, which starts a new slice.

#[no_mangle]
pub unsafe extern "C" fn epoll_wait(
    epfd: c_int,
    ev: *mut epoll_event,
    max: c_int,
    timeout: c_int,
) -> c_int {
    if crate::sched::lone::nothing_parks() && !epoll_solo::used() {
        // A lone entry (hooks/mod.rs): what the rest does when nothing parks.
        // SAFETY: the caller's epoll_wait contract.
        return unsafe { real::epoll_wait(epfd, ev, max, timeout) };
    }
    // SAFETY: as above.
    unsafe { epoll_wait_hooked(epfd, ev, max, timeout) }
}

#[inline(never)]
unsafe fn epoll_wait_hooked(
    epfd: c_int,
    ev: *mut epoll_event,
    max: c_int,
    timeout: c_int,
) -> c_int {
    // SAFETY: the caller's epoll_wait contract, passed on.
    let r = unsafe { epoll_wait_inner(epfd, ev, max, timeout) };
    crate::sched::slice::yield_if_slice_spent();
    r
}

#[no_mangle]
pub unsafe extern "C" fn epoll_pwait(
    epfd: c_int,
    ev: *mut epoll_event,
    max: c_int,
    timeout: c_int,
    mask: *const sigset_t,
) -> c_int {
    if mask.is_null() && crate::sched::lone::nothing_parks() && !epoll_solo::used() {
        // A lone entry (hooks/mod.rs): what the rest does when nothing
        // parks (a mask makes the call park all the same: `parking_with`).
        // SAFETY: the caller's epoll_pwait contract.
        return unsafe { next::epoll_pwait(epfd, ev, max, timeout, mask) };
    }
    // SAFETY: as above.
    unsafe { epoll_pwait_hooked(epfd, ev, max, timeout, mask) }
}

#[inline(never)]
unsafe fn epoll_pwait_hooked(
    epfd: c_int,
    ev: *mut epoll_event,
    max: c_int,
    timeout: c_int,
    mask: *const sigset_t,
) -> c_int {
    // SAFETY: the caller's epoll_pwait contract, passed on.
    let r = unsafe { epoll_pwait_inner(epfd, ev, max, timeout, mask) };
    crate::sched::slice::yield_if_slice_spent();
    r
}

#[no_mangle]
pub unsafe extern "C" fn epoll_pwait2(
    epfd: c_int,
    ev: *mut epoll_event,
    max: c_int,
    ts: *const timespec,
    mask: *const sigset_t,
) -> c_int {
    // SAFETY: the caller's epoll_pwait2 contract, passed on.
    let r = unsafe { epoll_pwait2_inner(epfd, ev, max, ts, mask) };
    crate::sched::slice::yield_if_slice_spent();
    r
}
