//! Condition variables: `pthread_cond_wait`, `timedwait`, `clockwait`,
//! `signal`, `broadcast` (see mod.rs).

use super::*;

/// Bytes of the object corun uses: the sequence word.
pub(super) const COND_WORDS: usize = 4;

/// # Safety
/// `c` points at a live pthread_cond_t.
unsafe fn cond_seq<'a>(c: *mut pthread_cond_t) -> &'a AtomicU32 {
    // SAFETY: the first 4 bytes of the (8-aligned) object.
    unsafe { &*(c as *const AtomicU32) }
}

/// The cond's (shared, monotonic) flags, or None if corun does not handle
/// it (passthrough).
unsafe fn cond_ours(c: *mut pthread_cond_t) -> Option<bool> {
    if !on() {
        return None;
    }
    let (shared, mono) = layout().cond.as_ref()?;
    // SAFETY: the caller's object, 48 readable bytes.
    unsafe {
        if shared.hit(c as *const u8) {
            return None;
        }
        Some(mono.hit(c as *const u8))
    }
}

unsafe fn cond_wait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    deadline: Option<Deadline>,
) -> c_int {
    // SAFETY: the caller's cond.
    let seq = unsafe { cond_seq(c) };
    let s = seq.load(Ordering::SeqCst);
    // SAFETY: the caller's mutex.
    let r = unsafe { unlock_any(m) };
    if r != 0 {
        return r;
    }
    crate::sched::waitdesc::describe(crate::sched::waitdesc::Cause::Cond, c as u64);
    let w = sync::wait_cancelable(seq, s, deadline);
    // SAFETY: the caller's mutex.
    unsafe { lock_any(m) };
    // A cancellation acts with the mutex held again, as POSIX requires
    // (cleanup handlers usually unlock it).
    if let Some(t) = crate::sched::current() {
        crate::sched::identity::cancel_point(&t.ident);
    }
    if w == WaitResult::TimedOut {
        libc::ETIMEDOUT
    } else {
        0
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_cond_wait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
) -> c_int {
    // SAFETY: the caller's objects.
    unsafe {
        match cond_ours(c) {
            Some(_) => cond_wait(c, m, None),
            None => real::pthread_cond_wait(c, m),
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_cond_timedwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: the caller's objects.
    unsafe {
        match cond_ours(c) {
            Some(mono) => {
                let clk = if mono {
                    libc::CLOCK_MONOTONIC
                } else {
                    libc::CLOCK_REALTIME
                };
                match deadline_of(clk, abs) {
                    Ok(d) => cond_wait(c, m, Some(d)),
                    Err(e) => e,
                }
            }
            None => real::pthread_cond_timedwait(c, m, abs),
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_cond_clockwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    clk: clockid_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: the caller's objects.
    unsafe {
        match cond_ours(c) {
            Some(_) => match deadline_of(clk, abs) {
                Ok(d) => cond_wait(c, m, Some(d)),
                Err(e) => e,
            },
            None => real::pthread_cond_clockwait(c, m, clk, abs),
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: the caller's cond.
    unsafe {
        if cond_ours(c).is_none() {
            return real::pthread_cond_signal(c);
        }
        let seq = cond_seq(c);
        seq.fetch_add(1, Ordering::SeqCst);
        sync::wake(seq, 1);
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: the caller's cond.
    unsafe {
        if cond_ours(c).is_none() {
            return real::pthread_cond_broadcast(c);
        }
        let seq = cond_seq(c);
        seq.fetch_add(1, Ordering::SeqCst);
        sync::wake_all(seq);
    }
    0
}
