//! The C API of `include/corun.h`, for programs written for corun.
//!
//! A `corun_co_t *` is the task id disguised as a pointer, looked up in a
//! table: joining twice, joining a detached coroutine or passing a made-up
//! handle finds nothing and returns ESRCH instead of touching freed
//! memory (`handles.rs`).
//!
//! One file per family: `chan.rs` (channels, select), `sync.rs` (mutex,
//! condition variable, semaphore, wait group), `cancel.rs` (cancel tokens,
//! structured scopes). Every function validates its arguments and returns
//! an errno value (no panic crosses the boundary: the crate aborts on one).

mod cancel;
mod chan;
mod sync;

mod handles;

use std::ffi::{c_int, c_void};

use crate::sched::{self, Entry, JoinError};
use crate::sys::set_errno;
use handles::{insert, take};

/// Spawns `f(arg)` as a coroutine; NULL and errno on failure.
#[no_mangle]
pub extern "C" fn corun_spawn(
    f: Option<extern "C" fn(*mut c_void) -> *mut c_void>,
    arg: *mut c_void,
) -> *mut c_void {
    let f = match f {
        Some(f) => f,
        None => {
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
    };
    spawn_handle(Entry::C { f, arg })
}

/// The stack size of coroutines the C API spawns.
pub(crate) fn stack_size() -> usize {
    sched::runtime().map_or(crate::config::DEFAULT_STACK_SIZE, |r| r.config.stack_size)
}

/// Spawns `entry` and returns its joinable handle (NULL and errno).
pub(crate) fn spawn_handle(entry: Entry) -> *mut c_void {
    match sched::spawn(entry, stack_size()) {
        Ok(t) => {
            let id = t.id;
            insert(t);
            id as usize as *mut c_void
        }
        Err(e) => {
            set_errno(e);
            std::ptr::null_mut()
        }
    }
}

/// Waits for a coroutine and takes its result; 0 or an errno value.
///
/// # Safety
/// `result` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn corun_join(co: *mut c_void, result: *mut *mut c_void) -> c_int {
    let id = co as usize as u64;
    if id == 0 {
        return libc::EINVAL;
    }
    if id == sched::current_id() {
        return libc::EDEADLK;
    }
    let t = match take(id) {
        Some(t) => t,
        None => return libc::ESRCH,
    };
    match sched::join(&t) {
        Ok(r) => {
            if !result.is_null() {
                // SAFETY: the caller passed a writable pointer or NULL.
                unsafe { *result = r as *mut c_void };
            }
            0
        }
        Err(JoinError::Deadlock) => libc::EDEADLK,
        Err(JoinError::Claimed) => libc::ESRCH,
        Err(JoinError::Cancelled) => libc::ECANCELED,
    }
}

/// Lets the coroutine run to completion unjoined; 0 or an errno value.
#[no_mangle]
pub extern "C" fn corun_detach(co: *mut c_void) -> c_int {
    let id = co as usize as u64;
    if id == 0 {
        return libc::EINVAL;
    }
    match take(id) {
        Some(t) => match sched::detach(&t) {
            Ok(()) => 0,
            Err(_) => libc::ESRCH,
        },
        None => libc::ESRCH,
    }
}

/// Lets the other runnable coroutines of this worker run.
#[no_mangle]
pub extern "C" fn corun_yield() {
    sched::yield_now();
}

/// Sleeps `ns` nanoseconds (parks a coroutine, blocks a native thread):
/// 0, or ECANCELED when the coroutine's cancel token is cancelled.
#[no_mangle]
pub extern "C" fn corun_sleep_ns(ns: u64) -> c_int {
    if sched::in_coroutine() {
        use crate::hooks::sleep::{park_for, Slept};
        let mut left = ns;
        loop {
            match park_for(left) {
                Slept::Done => return 0,
                Slept::Cancelled(_) => return libc::ECANCELED,
                // A signal handler ran: the rest of the sleep, as the
                // native path restarts on EINTR.
                Slept::Interrupted(l) if l > 0 => left = l,
                Slept::Interrupted(_) => return 0,
            }
        }
    }
    let ts = crate::sys::ns_timespec(ns);
    // SAFETY: valid timespec; the real nanosleep, restarted on EINTR.
    let mut rem = ts;
    loop {
        let cur = rem;
        if unsafe { crate::sys::real::nanosleep(&cur, &mut rem) } == 0 {
            return 0;
        }
        let e = crate::sys::errno();
        if e != libc::EINTR {
            return e;
        }
    }
}

/// The running coroutine's id, 0 outside coroutines.
#[no_mangle]
pub extern "C" fn corun_self_id() -> u64 {
    sched::current_id()
}
