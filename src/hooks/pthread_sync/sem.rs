//! Semaphores: `sem_wait`, `trywait`, `timedwait`, `clockwait`, `post`
//! (see mod.rs).

use super::*;

/// glibc's `struct new_sem` on 64-bit little-endian: `data` = value |
/// nwaiters << 32, then `private`, which holds glibc's LLL_SHARED (nonzero)
/// for a process-shared semaphore and 0 for a private one.
#[repr(C)]
pub(super) struct SemWords {
    pub(super) value: AtomicU32,
    pub(super) nwaiters: AtomicU32,
    pub(super) private: i32,
}

/// # Safety
/// `s` points at a live sem_t.
unsafe fn sem_ours<'a>(s: *mut sem_t) -> Option<&'a SemWords> {
    if !on() || !layout().sem {
        return None;
    }
    // SAFETY: SemWords is a prefix of sem_t (32 bytes, 8-aligned).
    let w = unsafe { &*(s as *const SemWords) };
    // SAFETY: reading the caller's object.
    (unsafe { std::ptr::read_volatile(&w.private) } == 0).then_some(w)
}

/// 0, or -1 with errno, as the sem_* functions return.
fn sem_result(e: c_int) -> c_int {
    if e == 0 {
        0
    } else {
        set_errno(e);
        -1
    }
}

fn sem_down(w: &SemWords, try_only: bool, deadline: Option<Deadline>) -> c_int {
    // A signal handler that runs in the waiting coroutine ends the wait
    // with EINTR unless it had SA_RESTART, as glibc's futex wait does.
    let mut intr: Option<crate::sched::signals::Interruptible> = None;
    loop {
        let v = w.value.load(Ordering::Relaxed);
        if v > 0 {
            if w.value
                .compare_exchange_weak(v, v - 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return 0;
            }
            continue;
        }
        if try_only {
            return libc::EAGAIN;
        }
        if in_coroutine() {
            let i = intr.get_or_insert_with(crate::sched::signals::Interruptible::begin);
            if let Some(restart) = i.check() {
                // The kernel ends a timed futex wait with EINTR after any
                // handler, SA_RESTART or not (ERESTART_RESTARTBLOCK).
                if !restart || deadline.is_some() {
                    return libc::EINTR;
                }
                *i = crate::sched::signals::Interruptible::begin();
            }
        }
        w.nwaiters.fetch_add(1, Ordering::SeqCst);
        crate::sched::waitdesc::describe(
            crate::sched::waitdesc::Cause::Sem,
            w.value.as_ptr() as u64,
        );
        let r = sync::wait_cancelable(&w.value, 0, deadline);
        w.nwaiters.fetch_sub(1, Ordering::SeqCst);
        if let Some(t) = crate::sched::current() {
            crate::sched::identity::cancel_point(&t.ident);
        }
        if r == WaitResult::TimedOut {
            return libc::ETIMEDOUT;
        }
    }
}

/// A process-shared or named semaphore in a coroutine: glibc's trywait
/// with a back-off (mod.rs), a cancellation point as sem_wait is; None
/// where the wait does not back off (`backs_off`: the caller makes glibc's
/// blocking call).
///
/// While it waits, the coroutine counts itself in the semaphore's waiter
/// count (glibc's high word, as glibc's own waiters do), so that a
/// `sem_post` of any process makes its FUTEX_WAKE, which the watcher
/// thread passes on (`sync::shared_watch`). A cancellation that acts at an
/// attempt takes the count back first; one that acts as the park begins
/// leaves it one too high: each later post then makes a wake nobody
/// needs.
fn glibc_down(s: *mut sem_t, deadline: Option<Deadline>) -> Option<c_int> {
    if !backs_off() {
        return None;
    }
    // SAFETY: the caller's semaphore; SemWords is a prefix of sem_t, whose
    // layout the probe checked.
    let w = layout().sem.then(|| unsafe { &*(s as *const SemWords) });
    if let Some(t) = current() {
        sched::identity::cancel_point(&t.ident);
    }
    if let Some(w) = w {
        w.nwaiters.fetch_add(1, Ordering::SeqCst);
    }
    let r = try_with_backoff(
        libc::EAGAIN,
        deadline,
        OnSignal::Eintr,
        w.map(|w| &w.value),
        || {
            if let Some(t) = current() {
                if let (true, Some(w)) = (t.ident.cancel_due(), w) {
                    w.nwaiters.fetch_sub(1, Ordering::SeqCst);
                    sched::identity::cancel_point(&t.ident);
                    // Not acted on after all (disabled, or deferred and
                    // not at a point now): the wait goes on, counted.
                    w.nwaiters.fetch_add(1, Ordering::SeqCst);
                }
                sched::identity::cancel_point(&t.ident);
            }
            // SAFETY: the caller's semaphore.
            match unsafe { real::sem_trywait(s) } {
                0 => 0,
                _ => crate::sys::errno(),
            }
        },
    );
    if let Some(w) = w {
        w.nwaiters.fetch_sub(1, Ordering::SeqCst);
    }
    Some(sem_result(r))
}

#[no_mangle]
pub unsafe extern "C" fn sem_wait(s: *mut sem_t) -> c_int {
    // SAFETY: the caller's semaphore.
    match unsafe { sem_ours(s) } {
        Some(w) => sem_result(sem_down(w, false, None)),
        // SAFETY: the caller's contract.
        None => glibc_down(s, None).unwrap_or_else(|| unsafe { real::sem_wait(s) }),
    }
}

#[no_mangle]
pub unsafe extern "C" fn sem_trywait(s: *mut sem_t) -> c_int {
    // SAFETY: the caller's semaphore.
    match unsafe { sem_ours(s) } {
        Some(w) => sem_result(sem_down(w, true, None)),
        // SAFETY: the caller's contract.
        None => unsafe { real::sem_trywait(s) },
    }
}

fn sem_timed(w: &SemWords, clk: clockid_t, abs: *const timespec) -> c_int {
    match sem_down(w, true, None) {
        libc::EAGAIN => match deadline_of(clk, abs) {
            Ok(d) => sem_result(sem_down(w, false, Some(d))),
            Err(e) => sem_result(e),
        },
        r => sem_result(r),
    }
}

#[no_mangle]
pub unsafe extern "C" fn sem_timedwait(s: *mut sem_t, abs: *const timespec) -> c_int {
    // SAFETY: the caller's semaphore.
    match unsafe { sem_ours(s) } {
        Some(w) => sem_timed(w, libc::CLOCK_REALTIME, abs),
        None => match deadline_of(libc::CLOCK_REALTIME, abs) {
            Ok(d) => glibc_down(s, Some(d)),
            Err(_) => None,
        }
        // SAFETY: the caller's contract.
        .unwrap_or_else(|| unsafe { real::sem_timedwait(s, abs) }),
    }
}

#[no_mangle]
pub unsafe extern "C" fn sem_clockwait(
    s: *mut sem_t,
    clk: clockid_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: the caller's semaphore.
    match unsafe { sem_ours(s) } {
        Some(w) => sem_timed(w, clk, abs),
        None => match deadline_of(clk, abs) {
            Ok(d) => glibc_down(s, Some(d)),
            Err(_) => None,
        }
        // SAFETY: the caller's contract.
        .unwrap_or_else(|| unsafe { real::sem_clockwait(s, clk, abs) }),
    }
}

#[no_mangle]
pub unsafe extern "C" fn sem_post(s: *mut sem_t) -> c_int {
    // SAFETY: the caller's semaphore.
    let Some(w) = (unsafe { sem_ours(s) }) else {
        // SAFETY: the caller's contract.
        return unsafe { real::sem_post(s) };
    };
    loop {
        let v = w.value.load(Ordering::Relaxed);
        if v >= i32::MAX as u32 {
            return sem_result(libc::EOVERFLOW);
        }
        if w.value
            .compare_exchange_weak(v, v + 1, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
        {
            break;
        }
    }
    if w.nwaiters.load(Ordering::SeqCst) != 0 {
        if crate::sched::park::in_async_signal_handler() {
            // Async-signal-safe: no lock here, a worker wakes the waiter.
            sync::wake_later(&w.value);
        } else {
            sync::wake(&w.value, 1);
        }
    }
    0
}
