//! `futex_waitv(waiters, nr, flags, timeout, clockid)` from a coroutine
//! (SYS_futex_waitv, through `syscall`): the kernel's attempt with a passed
//! deadline checks everything (the waiters, their flags, the clock) and
//! compares every word; then the coroutine parks on all the words at once
//! (`sync::park_on_any`) until a wake of any, its absolute deadline on the
//! monotonic or realtime clock, or, when a word is shared, the next look
//! at the words (as in `super::wait`). Returns the index of the word woken,
//! as the kernel does.
//!
//! That attempt arms a kernel timer and leaves the thread off its CPU
//! until it fires, as FUTEX_WAIT's did before `futex.rs` checked with a
//! FUTEX_CMP_REQUEUE of nobody; without it the waiters array would have
//! to be validated by hand. Left so: futex_waitv is rare (Wine).

use std::ffi::{c_long, c_uint};
use std::sync::atomic::{AtomicU32, Ordering};

use super::{fail, real6, timeout_ns, with_pause, PAST};
use crate::sched::sync::{self, Deadline, WaitResult};
use crate::sys::errno;

pub(super) const SYS_FUTEX_WAITV: c_long = 449;
/// `struct futex_waitv` flags: a 32-bit word (the only size), private.
const FUTEX2_SIZE_U32: u32 = 2;
const FUTEX2_PRIVATE: u32 = 128;

/// `struct futex_waitv` of linux/futex.h.
#[repr(C)]
struct FutexWaitv {
    val: u64,
    uaddr: u64,
    flags: u32,
    reserved: u32,
}

/// The call from a coroutine; see the module comment.
pub(super) fn waitv(
    waiters: c_long,
    nr: c_uint,
    flags: c_uint,
    t: c_long,
    clock: libc::clockid_t,
) -> c_long {
    let attempt = || {
        real6(
            SYS_FUTEX_WAITV,
            [
                waiters,
                nr as c_long,
                flags as c_long,
                &PAST as *const _ as c_long,
                libc::CLOCK_MONOTONIC as c_long,
                0,
            ],
        )
    };
    if flags != 0 || nr == 0 || nr as usize > sync::WAITV_MAX || waiters == 0 {
        return attempt();
    }
    let deadline = match timeout_ns(t) {
        Err(e) => return fail(e),
        Ok(None) => None,
        Ok(Some(ns)) if clock == libc::CLOCK_MONOTONIC => Some(Deadline::Monotonic(ns)),
        Ok(Some(ns)) if clock == libc::CLOCK_REALTIME => Some(Deadline::Realtime(ns)),
        Ok(Some(_)) => return fail(libc::EINVAL),
    };
    let r = attempt();
    if r >= 0 || errno() != libc::ETIMEDOUT {
        return r;
    }
    if deadline.is_some_and(|d| d.passed()) {
        return fail(libc::ETIMEDOUT);
    }
    // SAFETY: the kernel just read these `nr` entries and every word they
    // name (aligned 32-bit words, each its flags said: FUTEX2_SIZE_U32).
    let ws = unsafe { std::slice::from_raw_parts(waiters as *const FutexWaitv, nr as usize) };
    let words: Vec<(&AtomicU32, u32)> = ws
        .iter()
        // SAFETY: as above.
        .map(|w| {
            (
                unsafe { &*(w.uaddr as usize as *const AtomicU32) },
                w.val as u32,
            )
        })
        .collect();
    let shared = ws.iter().any(|w| w.flags & FUTEX2_PRIVATE == 0);
    debug_assert!(ws.iter().all(|w| w.flags & 3 == FUTEX2_SIZE_U32));
    let changed = || {
        words
            .iter()
            .position(|(w, v)| w.load(Ordering::SeqCst) != *v)
    };
    let mut first = true;
    loop {
        match sync::park_on_any(&words, with_pause(deadline, shared)) {
            Ok(i) => return i as c_long,
            Err(WaitResult::Mismatch) if first => return fail(libc::EAGAIN),
            Err(WaitResult::TimedOut) if deadline.is_some_and(|d| d.passed()) => {
                return fail(libc::ETIMEDOUT)
            }
            // After a pause on a shared word: a word that changed is one
            // another process may have woken.
            Err(WaitResult::Mismatch | WaitResult::TimedOut) => {
                if let Some(i) = changed() {
                    return i as c_long;
                }
                first = false;
            }
            // Resumed with no slot taken: start again, as the kernel does.
            Err(WaitResult::Woken) => {}
        }
    }
}
