//! Read-write locks: `pthread_rwlock_*` (see mod.rs).

use super::*;

/// Bytes of the object corun uses.
pub(super) const RWLOCK_WORDS: usize = 16;
const WRITER: u32 = u32::MAX;
const MAX_READERS: u32 = u32::MAX - 1;

#[repr(C)]
struct RwWords {
    /// Reader count, or WRITER.
    state: AtomicU32,
    /// Threads sleeping (or about to) on `seq`.
    sleepers: AtomicU32,
    seq: AtomicU32,
    /// Owner tag of the writer.
    writer: AtomicI32,
}

/// # Safety
/// `l` points at a live pthread_rwlock_t.
unsafe fn rw_ours<'a>(l: *mut pthread_rwlock_t) -> Option<&'a RwWords> {
    // SAFETY: the caller's contract.
    let w = unsafe { rw_ours_unmarked(l) };
    if w.is_none() {
        super::kernel_bound();
    }
    w
}

/// `rw_ours`, without marking the caller bound to its kernel thread.
///
/// # Safety
/// As `rw_ours`.
unsafe fn rw_ours_unmarked<'a>(l: *mut pthread_rwlock_t) -> Option<&'a RwWords> {
    if !on() {
        return None;
    }
    let shared = layout().rwlock.as_ref()?;
    // SAFETY: the caller's object (56 readable, 8-aligned bytes); RwWords
    // covers its first 16.
    unsafe {
        if shared.hit(l as *const u8) {
            return None;
        }
        Some(&*(l as *const RwWords))
    }
}

/// Sleeps until `blocked()` may have changed; false on timeout.
fn rw_sleep(w: &RwWords, blocked: impl Fn(u32) -> bool, deadline: Option<Deadline>) -> bool {
    w.sleepers.fetch_add(1, Ordering::SeqCst);
    let q = w.seq.load(Ordering::SeqCst);
    let mut ok = true;
    if blocked(w.state.load(Ordering::SeqCst)) {
        crate::sched::waitdesc::describe(
            crate::sched::waitdesc::Cause::RwLock,
            w as *const RwWords as u64,
        );
        ok = sync::wait_then_act(&w.seq, q, deadline) != WaitResult::TimedOut;
    }
    w.sleepers.fetch_sub(1, Ordering::SeqCst);
    // An asynchronous cancellation acts with the count put back.
    if let Some(t) = crate::sched::current() {
        crate::sched::identity::async_cancel_point(&t.ident);
    }
    ok
}

fn rdlock(w: &RwWords, try_only: bool, deadline: Option<Deadline>) -> c_int {
    loop {
        let s = w.state.load(Ordering::Relaxed);
        if s == WRITER {
            if try_only {
                return libc::EBUSY;
            }
            if w.writer.load(Ordering::Relaxed) == owner_tag() {
                return libc::EDEADLK;
            }
            if !rw_sleep(w, |s| s == WRITER, deadline) {
                return libc::ETIMEDOUT;
            }
            continue;
        }
        if s >= MAX_READERS - 1 {
            return libc::EAGAIN;
        }
        if w.state
            .compare_exchange_weak(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return 0;
        }
    }
}

fn wrlock(w: &RwWords, try_only: bool, deadline: Option<Deadline>) -> c_int {
    let me = owner_tag();
    loop {
        if w.state
            .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            w.writer.store(me, Ordering::Relaxed);
            return 0;
        }
        if w.state.load(Ordering::Relaxed) == WRITER && w.writer.load(Ordering::Relaxed) == me {
            return libc::EDEADLK;
        }
        if try_only {
            return libc::EBUSY;
        }
        if !rw_sleep(w, |s| s != 0, deadline) {
            return libc::ETIMEDOUT;
        }
    }
}

fn rw_unlock(w: &RwWords) -> c_int {
    loop {
        let s = w.state.load(Ordering::Relaxed);
        let next = match s {
            0 => return libc::EPERM,
            WRITER => {
                w.writer.store(0, Ordering::Relaxed);
                0
            }
            n => n - 1,
        };
        if w.state
            .compare_exchange_weak(s, next, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
        {
            if next == 0 && w.sleepers.load(Ordering::SeqCst) != 0 {
                w.seq.fetch_add(1, Ordering::SeqCst);
                sync::wake_all(&w.seq);
            }
            return 0;
        }
    }
}

type RwLockFn = fn(&RwWords, bool, Option<Deadline>) -> c_int;

/// A timed rwlock operation: try first, then wait until the deadline (an
/// invalid deadline is EINVAL only when waiting is needed, as glibc).
/// None: the lock is glibc's (process-shared), pass through.
///
/// # Safety
/// `l` points at a live pthread_rwlock_t; `abs` is NULL or readable.
unsafe fn rw_timed(
    l: *mut pthread_rwlock_t,
    clk: clockid_t,
    abs: *const timespec,
    lock: RwLockFn,
) -> Option<c_int> {
    // SAFETY: the caller's rwlock.
    let w = unsafe { rw_ours(l) }?;
    Some(match lock(w, true, None) {
        libc::EBUSY => deadline_of(clk, abs).map_or_else(|e| e, |d| lock(w, false, Some(d))),
        r => r,
    })
}

/// A process-shared rwlock in a coroutine: glibc's try operation with a
/// back-off (mod.rs); None outside coroutines (glibc's blocking call).
fn glibc_rw(
    clk_abs: Option<(clockid_t, *const timespec)>,
    attempt: impl FnMut() -> c_int,
) -> Option<c_int> {
    if !backs_off() {
        return None;
    }
    let deadline = match clk_abs {
        None => None,
        Some((clk, abs)) => match deadline_of(clk, abs) {
            Ok(d) => Some(d),
            Err(e) => return Some(e),
        },
    };
    Some(try_with_backoff(
        libc::EBUSY,
        deadline,
        OnSignal::Continue,
        None,
        attempt,
    ))
}

#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_rdlock(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's rwlock.
    match unsafe { rw_ours(l) } {
        Some(w) => rdlock(w, false, None),
        // SAFETY: the caller's contract (both calls).
        None => glibc_rw(None, || unsafe { real::pthread_rwlock_tryrdlock(l) })
            .unwrap_or_else(|| unsafe { real::pthread_rwlock_rdlock(l) }),
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_tryrdlock(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's rwlock.
    match unsafe { rw_ours(l) } {
        Some(w) => rdlock(w, true, None),
        // SAFETY: the caller's contract.
        None => unsafe { real::pthread_rwlock_tryrdlock(l) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_timedrdlock(
    l: *mut pthread_rwlock_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: the caller's rwlock and timespec.
    unsafe {
        rw_timed(l, libc::CLOCK_REALTIME, abs, rdlock)
            .or_else(|| {
                glibc_rw(Some((libc::CLOCK_REALTIME, abs)), || {
                    real::pthread_rwlock_tryrdlock(l)
                })
            })
            .unwrap_or_else(|| real::pthread_rwlock_timedrdlock(l, abs))
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_clockrdlock(
    l: *mut pthread_rwlock_t,
    clk: clockid_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: the caller's rwlock and timespec.
    unsafe {
        rw_timed(l, clk, abs, rdlock)
            .or_else(|| glibc_rw(Some((clk, abs)), || real::pthread_rwlock_tryrdlock(l)))
            .unwrap_or_else(|| real::pthread_rwlock_clockrdlock(l, clk, abs))
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_wrlock(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's rwlock.
    match unsafe { rw_ours(l) } {
        Some(w) => wrlock(w, false, None),
        // SAFETY: the caller's contract (both calls).
        None => glibc_rw(None, || unsafe { real::pthread_rwlock_trywrlock(l) })
            .unwrap_or_else(|| unsafe { real::pthread_rwlock_wrlock(l) }),
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_trywrlock(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's rwlock.
    match unsafe { rw_ours(l) } {
        Some(w) => wrlock(w, true, None),
        // SAFETY: the caller's contract.
        None => unsafe { real::pthread_rwlock_trywrlock(l) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_timedwrlock(
    l: *mut pthread_rwlock_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: the caller's rwlock and timespec.
    unsafe {
        rw_timed(l, libc::CLOCK_REALTIME, abs, wrlock)
            .or_else(|| {
                glibc_rw(Some((libc::CLOCK_REALTIME, abs)), || {
                    real::pthread_rwlock_trywrlock(l)
                })
            })
            .unwrap_or_else(|| real::pthread_rwlock_timedwrlock(l, abs))
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_clockwrlock(
    l: *mut pthread_rwlock_t,
    clk: clockid_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: the caller's rwlock and timespec.
    unsafe {
        rw_timed(l, clk, abs, wrlock)
            .or_else(|| glibc_rw(Some((clk, abs)), || real::pthread_rwlock_trywrlock(l)))
            .unwrap_or_else(|| real::pthread_rwlock_clockwrlock(l, clk, abs))
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_unlock(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's rwlock.
    match unsafe { rw_ours(l) } {
        Some(w) => rw_unlock(w),
        // SAFETY: the caller's contract.
        None => unsafe { real::pthread_rwlock_unlock(l) },
    }
}
