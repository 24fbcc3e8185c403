//! Joining and detaching: `pthread_join`, `pthread_tryjoin_np`,
//! `pthread_timedjoin_np`, `pthread_clockjoin_np`, `pthread_detach`.

use super::*;

/// Joins coroutine `id` once it has finished (or finishes by `deadline`;
/// `poll` only checks).
pub(super) fn join_coroutine(
    id: u64,
    ret: *mut *mut c_void,
    deadline: Option<Deadline>,
    poll: bool,
) -> c_int {
    if id == current_id() {
        return libc::EDEADLK;
    }
    let me = current();
    if let (Some(me), false) = (me, poll) {
        sched::identity::cancel_point(&me.ident);
    }
    let Some((task, rec)) = lookup(id) else {
        return libc::ESRCH;
    };
    {
        let st = lock(&rec.state);
        if st.detached || st.joining {
            return libc::EINVAL;
        }
    }
    if poll || deadline.is_some() {
        while rec.finished.load(Ordering::Acquire) == 0 {
            if poll {
                return libc::EBUSY;
            }
            crate::sched::waitdesc::describe(crate::sched::waitdesc::Cause::Join, id);
            let w = sync::wait_cancelable(&rec.finished, 0, deadline);
            if let Some(me) = me {
                sched::identity::cancel_point(&me.ident);
            }
            if w == WaitResult::TimedOut && rec.finished.load(Ordering::Acquire) == 0 {
                return libc::ETIMEDOUT;
            }
        }
    }
    {
        let mut st = lock(&rec.state);
        if st.detached || st.joining {
            return libc::EINVAL;
        }
        st.joining = true;
    }
    match sched::join(&task) {
        Ok(r) => {
            if let Some(m) = lock(shard(id)).as_mut() {
                m.remove(&id);
            }
            if !ret.is_null() {
                // SAFETY: the caller passed a writable pointer or NULL.
                unsafe { *ret = r as *mut c_void };
            }
            0
        }
        Err(JoinError::Deadlock) => libc::EDEADLK,
        Err(JoinError::Claimed) => libc::EINVAL,
        Err(JoinError::Cancelled) => {
            lock(&rec.state).joining = false;
            if let Some(me) = me {
                sched::identity::cancel_point(&me.ident);
            }
            libc::EINVAL
        }
    }
}

/// Whether a coroutine joining a real thread must poll (other coroutines
/// need its worker) rather than make glibc's join. The process's only
/// coroutine (`main` under CORUN_THREADS=native, or in a program whose
/// threads all schedule themselves) blocks as natively: polling with
/// naps of 1 ms and more made 20,000 create+join take 26 s, not 1 s.
fn must_poll() -> bool {
    in_coroutine() && !sched::alone()
}

/// A coroutine joining a real thread: polls, so the worker keeps running.
pub(super) fn join_real_from_coroutine(
    t: pthread_t,
    ret: *mut *mut c_void,
    deadline: Option<Deadline>,
) -> c_int {
    let mut nap = 1_000_000u64;
    loop {
        // SAFETY: the caller's contract (a real handle).
        let r = unsafe { real::pthread_tryjoin_np(t, ret) };
        if r != libc::EBUSY {
            return r;
        }
        if deadline.is_some_and(|d| d.passed()) {
            return libc::ETIMEDOUT;
        }
        sched::sleep_until(crate::sys::now_ns() + nap);
        nap = (nap * 2).min(50_000_000);
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_join(t: pthread_t, ret: *mut *mut c_void) -> c_int {
    match decode(t) {
        Some(id) => join_coroutine(id, ret, None, false),
        None if must_poll() => join_real_from_coroutine(t, ret, None),
        // SAFETY: the caller's contract.
        None => unsafe { real::pthread_join(t, ret) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_tryjoin_np(t: pthread_t, ret: *mut *mut c_void) -> c_int {
    match decode(t) {
        Some(id) => join_coroutine(id, ret, None, true),
        // SAFETY: the caller's contract.
        None => unsafe { real::pthread_tryjoin_np(t, ret) },
    }
}

/// An absolute timespec as a deadline on `clock`; None if invalid.
pub(crate) fn abs_deadline(clock: clockid_t, abs: *const timespec) -> Option<Deadline> {
    if abs.is_null() {
        return None;
    }
    // SAFETY: non-null, readable by the caller's contract.
    let ts = unsafe { *abs };
    if !(0..1_000_000_000).contains(&ts.tv_nsec) {
        return None;
    }
    let ns = if ts.tv_sec < 0 {
        0
    } else {
        crate::sys::timespec_ns(&ts)
    };
    match clock {
        libc::CLOCK_MONOTONIC => Some(Deadline::Monotonic(ns)),
        libc::CLOCK_REALTIME => Some(Deadline::Realtime(ns)),
        _ => None,
    }
}

pub(super) unsafe fn timed_join(
    t: pthread_t,
    ret: *mut *mut c_void,
    clk: clockid_t,
    abs: *const timespec,
) -> c_int {
    let Some(d) = abs_deadline(clk, abs) else {
        return libc::EINVAL;
    };
    match decode(t) {
        Some(id) => join_coroutine(id, ret, Some(d), false),
        None if must_poll() => join_real_from_coroutine(t, ret, Some(d)),
        // SAFETY: the caller's contract.
        None => unsafe { real::pthread_clockjoin_np(t, ret, clk, abs) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_timedjoin_np(
    t: pthread_t,
    ret: *mut *mut c_void,
    abs: *const timespec,
) -> c_int {
    if decode(t).is_none() && !in_coroutine() {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_timedjoin_np(t, ret, abs) };
    }
    // SAFETY: forwarding the caller's arguments.
    unsafe { timed_join(t, ret, libc::CLOCK_REALTIME, abs) }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_clockjoin_np(
    t: pthread_t,
    ret: *mut *mut c_void,
    clk: clockid_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: forwarding the caller's arguments.
    unsafe { timed_join(t, ret, clk, abs) }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_detach(t: pthread_t) -> c_int {
    let Some(id) = decode(t) else {
        // SAFETY: the caller's contract.
        return unsafe { crate::sys::real::pthread_detach(t) };
    };
    let mut g = lock(shard(id));
    let Some(e) = g.as_ref().and_then(|m| m.get(&id)) else {
        return libc::ESRCH;
    };
    let task = e.task.clone();
    let rec = e.rec.clone();
    let mut st = lock(&rec.state);
    if st.detached || st.joining {
        return libc::EINVAL;
    }
    if sched::detach(&task).is_err() {
        return libc::EINVAL;
    }
    st.detached = true;
    if st.finished {
        if let Some(m) = g.as_mut() {
            m.remove(&id);
        }
    }
    0
}
