//! Mutexes: `pthread_mutex_lock`, `trylock`, `timedlock`, `clocklock`,
//! `unlock`, and glibc's old `__pthread_mutex_*` aliases (see mod.rs).

use super::*;

/// The head of glibc's `struct __pthread_mutex_s` (same on every 64-bit
/// Linux glibc).
#[repr(C)]
pub(super) struct MutexWords {
    pub(super) lock: AtomicU32,
    pub(super) count: AtomicU32,
    pub(super) owner: AtomicI32,
    pub(super) nusers: AtomicU32,
    pub(super) kind: AtomicI32,
}

const KIND_MASK: i32 = 3;
/// Robust (16), priority inherit (32) or protect (64), process-shared (128).
pub(super) const KIND_PASSTHROUGH: i32 = 16 | 32 | 64 | 128;

/// # Safety
/// `m` points at a live pthread_mutex_t.
unsafe fn mutex_words<'a>(m: *mut pthread_mutex_t) -> &'a MutexWords {
    // SAFETY: MutexWords is a prefix of pthread_mutex_t (40 bytes, 8-aligned).
    unsafe { &*(m as *const MutexWords) }
}

/// Our implementation applies to this mutex.
fn mutex_ours(w: &MutexWords) -> bool {
    on() && layout().mutex && w.kind.load(Ordering::Relaxed) & KIND_PASSTHROUGH == 0
}

fn raw_lock(word: &AtomicU32, deadline: Option<Deadline>) -> c_int {
    if word
        .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
    {
        return 0;
    }
    for _ in 0..spins() {
        std::hint::spin_loop();
        if word.load(Ordering::Relaxed) == 0
            && word
                .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return 0;
        }
    }
    loop {
        if word.swap(2, Ordering::Acquire) == 0 {
            return 0;
        }
        crate::sched::waitdesc::describe(
            crate::sched::waitdesc::Cause::Mutex,
            word.as_ptr() as u64,
        );
        if sync::wait(word, 2, deadline) == WaitResult::TimedOut {
            return if word.swap(2, Ordering::Acquire) == 0 {
                0
            } else {
                libc::ETIMEDOUT
            };
        }
    }
}

fn raw_unlock(word: &AtomicU32) {
    if word.swap(0, Ordering::Release) == 2 {
        sync::wake(word, 1);
    }
}

fn mutex_lock(w: &MutexWords, deadline: Option<Deadline>) -> c_int {
    let kind = w.kind.load(Ordering::Relaxed) & KIND_MASK;
    if kind == libc::PTHREAD_MUTEX_RECURSIVE || kind == libc::PTHREAD_MUTEX_ERRORCHECK {
        let me = owner_tag();
        if w.owner.load(Ordering::Relaxed) == me {
            if kind == libc::PTHREAD_MUTEX_ERRORCHECK {
                return libc::EDEADLK;
            }
            let c = w.count.load(Ordering::Relaxed);
            if c == u32::MAX {
                return libc::EAGAIN;
            }
            w.count.store(c + 1, Ordering::Relaxed);
            return 0;
        }
        let r = raw_lock(&w.lock, deadline);
        if r == 0 {
            w.owner.store(me, Ordering::Relaxed);
            w.count.store(1, Ordering::Relaxed);
        }
        return r;
    }
    raw_lock(&w.lock, deadline)
}

fn mutex_trylock(w: &MutexWords) -> c_int {
    let kind = w.kind.load(Ordering::Relaxed) & KIND_MASK;
    let owned = kind == libc::PTHREAD_MUTEX_RECURSIVE || kind == libc::PTHREAD_MUTEX_ERRORCHECK;
    let me = if owned { owner_tag() } else { 0 };
    if kind == libc::PTHREAD_MUTEX_RECURSIVE && w.owner.load(Ordering::Relaxed) == me {
        let c = w.count.load(Ordering::Relaxed);
        if c == u32::MAX {
            return libc::EAGAIN;
        }
        w.count.store(c + 1, Ordering::Relaxed);
        return 0;
    }
    if w.lock
        .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return libc::EBUSY;
    }
    if owned {
        w.owner.store(me, Ordering::Relaxed);
        w.count.store(1, Ordering::Relaxed);
    }
    0
}

fn mutex_unlock(w: &MutexWords) -> c_int {
    let kind = w.kind.load(Ordering::Relaxed) & KIND_MASK;
    if kind == libc::PTHREAD_MUTEX_RECURSIVE || kind == libc::PTHREAD_MUTEX_ERRORCHECK {
        if w.owner.load(Ordering::Relaxed) != owner_tag() || w.lock.load(Ordering::Relaxed) == 0 {
            return libc::EPERM;
        }
        let c = w.count.load(Ordering::Relaxed);
        if kind == libc::PTHREAD_MUTEX_RECURSIVE && c > 1 {
            w.count.store(c - 1, Ordering::Relaxed);
            return 0;
        }
        w.count.store(0, Ordering::Relaxed);
        w.owner.store(0, Ordering::Relaxed);
    }
    raw_unlock(&w.lock);
    0
}

/// glibc's lock of a mutex corun does not implement (process-shared,
/// robust, priority-protocol): in a coroutine, its trylock with a back-off
/// (mod.rs), so a contended lock parks instead of blocking the worker.
unsafe fn glibc_lock(m: *mut pthread_mutex_t, deadline: Option<Deadline>) -> c_int {
    if !backs_off() {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_mutex_lock(m) };
    }
    // SAFETY: the caller's contract.
    try_with_backoff(libc::EBUSY, deadline, OnSignal::Continue, None, || unsafe {
        real::pthread_mutex_trylock(m)
    })
}

/// Whether `m` is one only glibc may take (process-shared, robust,
/// priority-protocol), or corun's implementation is off.
///
/// # Safety
/// `m` points at a live pthread_mutex_t.
pub(super) unsafe fn glibcs(m: *mut pthread_mutex_t) -> bool {
    // SAFETY: the caller's mutex.
    !mutex_ours(unsafe { mutex_words(m) })
}

/// Locks `m` by whichever implementation owns it (for condition variables).
pub(crate) unsafe fn lock_any(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's mutex.
    let w = unsafe { mutex_words(m) };
    if mutex_ours(w) {
        mutex_lock(w, None)
    } else {
        // SAFETY: the caller's mutex.
        unsafe { glibc_lock(m, None) }
    }
}

pub(crate) unsafe fn unlock_any(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's mutex.
    let w = unsafe { mutex_words(m) };
    if mutex_ours(w) {
        mutex_unlock(w)
    } else {
        // SAFETY: the caller's mutex.
        unsafe { real::pthread_mutex_unlock(m) }
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_lock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's mutex.
    let w = unsafe { mutex_words(m) };
    if !mutex_ours(w) {
        // SAFETY: the caller's contract.
        return unsafe { glibc_lock(m, None) };
    }
    mutex_lock(w, None)
}

#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_trylock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's mutex.
    let w = unsafe { mutex_words(m) };
    if !mutex_ours(w) {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_mutex_trylock(m) };
    }
    mutex_trylock(w)
}

unsafe fn mutex_clocklock(m: *mut pthread_mutex_t, clk: clockid_t, abs: *const timespec) -> c_int {
    // SAFETY: the caller's mutex.
    let w = unsafe { mutex_words(m) };
    if mutex_trylock(w) == 0 {
        return 0;
    }
    match deadline_of(clk, abs) {
        Ok(d) => mutex_lock(w, Some(d)),
        Err(e) => e,
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_timedlock(
    m: *mut pthread_mutex_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: the caller's mutex.
    if !mutex_ours(unsafe { mutex_words(m) }) {
        if backs_off() {
            return match deadline_of(libc::CLOCK_REALTIME, abs) {
                // SAFETY: the caller's contract.
                Ok(d) => unsafe { glibc_lock(m, Some(d)) },
                Err(e) => e,
            };
        }
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_mutex_timedlock(m, abs) };
    }
    // SAFETY: forwarding the caller's arguments.
    unsafe { mutex_clocklock(m, libc::CLOCK_REALTIME, abs) }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_clocklock(
    m: *mut pthread_mutex_t,
    clk: clockid_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: the caller's mutex.
    if !mutex_ours(unsafe { mutex_words(m) }) {
        if backs_off() {
            return match deadline_of(clk, abs) {
                // SAFETY: the caller's contract.
                Ok(d) => unsafe { glibc_lock(m, Some(d)) },
                Err(e) => e,
            };
        }
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_mutex_clocklock(m, clk, abs) };
    }
    // SAFETY: forwarding the caller's arguments.
    unsafe { mutex_clocklock(m, clk, abs) }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_unlock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's mutex.
    let w = unsafe { mutex_words(m) };
    if !mutex_ours(w) {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_mutex_unlock(m) };
    }
    mutex_unlock(w)
}

// Old exported aliases (compat symbols of glibc) that binaries linked long
// ago still call: the same objects must go through the same algorithm.

#[no_mangle]
pub unsafe extern "C" fn __pthread_mutex_lock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: forwarded.
    unsafe { pthread_mutex_lock(m) }
}

#[no_mangle]
pub unsafe extern "C" fn __pthread_mutex_trylock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: forwarded.
    unsafe { pthread_mutex_trylock(m) }
}

#[no_mangle]
pub unsafe extern "C" fn __pthread_mutex_unlock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: forwarded.
    unsafe { pthread_mutex_unlock(m) }
}
