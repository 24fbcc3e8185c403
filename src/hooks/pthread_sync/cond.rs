//! Condition variables: `pthread_cond_wait`, `timedwait`, `clockwait`,
//! `signal`, `broadcast` (see mod.rs).
//!
//! A process-shared one stays glibc's (its waiters may be in other
//! processes), and glibc has no "try" for a condition wait that a back-off
//! could repeat: the wait is glibc's own, made on a blocking-pool helper
//! while the coroutine parks (`shared_wait`). The helper's wait unlocks
//! the mutex and relocks it as glibc does (atomically with the wait, so no
//! signal is lost), then the helper lets go of it and the coroutine takes
//! it back with the back-off of the other glibc-only mutexes: the mutex is
//! the coroutine's again (an error-checking one's owner is its worker's
//! tid, as for every lock a coroutine takes), and a woken waiter racing
//! for it is what a wake-up always is.
//!
//! Why not the back-off: a condition wait may return spuriously, so
//! "unlock, sleep 20 us, relock, return" would be correct, but a program
//! that hands a turn back and forth with another process through one
//! (two processes, a pshared mutex and condition variable, one worker)
//! took a median 202 us per round trip that way, 17 us with the helper,
//! 4.9 us natively (5 runs of 2,000 rounds each, on the loaded 2-core
//! machine). It also wakes every waiter every pause, and a program that
//! does not re-check its predicate (wrong, but it works natively, where
//! glibc's waits are not spurious) would go wrong.

use super::*;
use crate::sched::blocking::run_blocking;

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

/// A glibc condition wait (`wait(c, m)`) in a coroutine, on a helper
/// thread; None: make it here (not a coroutine, or a mutex corun
/// implements, which glibc's unlock inside the wait would release without
/// waking its parked waiters: that mix still blocks the worker).
///
/// # Safety
/// `c` and `m` point at the caller's live objects.
unsafe fn shared_wait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    wait: impl FnOnce(*mut pthread_cond_t, *mut pthread_mutex_t) -> c_int + Send,
) -> Option<c_int> {
    // SAFETY: the caller's mutex.
    if !on() || !in_coroutine() || !unsafe { mutex::glibcs(m) } {
        return None;
    }
    let (cp, mp) = (c as usize, m as usize);
    let r = run_blocking(move || {
        let (c, m) = (cp as *mut pthread_cond_t, mp as *mut pthread_mutex_t);
        let r = wait(c, m);
        if r == 0 || r == libc::ETIMEDOUT {
            // SAFETY: glibc relocked the caller's mutex for this thread.
            unsafe { real::pthread_mutex_unlock(m) };
        }
        r
    });
    if r == 0 || r == libc::ETIMEDOUT {
        // SAFETY: the caller's mutex.
        let l = unsafe { lock_any(m) };
        if l != 0 {
            return Some(l);
        }
    }
    Some(r)
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
            None => shared_wait(c, m, |c, m| real::pthread_cond_wait(c, m))
                .unwrap_or_else(|| real::pthread_cond_wait(c, m)),
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
            None => {
                let a = abs as usize;
                shared_wait(c, m, move |c, m| {
                    real::pthread_cond_timedwait(c, m, a as *const timespec)
                })
                .unwrap_or_else(|| real::pthread_cond_timedwait(c, m, abs))
            }
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
            None => {
                let a = abs as usize;
                shared_wait(c, m, move |c, m| {
                    real::pthread_cond_clockwait(c, m, clk, a as *const timespec)
                })
                .unwrap_or_else(|| real::pthread_cond_clockwait(c, m, clk, abs))
            }
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
