//! Mutexes: `pthread_mutex_lock`, `trylock`, `timedlock`, `clocklock`,
//! `unlock`, and glibc's old `__pthread_mutex_*` aliases (see mod.rs).
//!
//! Fast path: a program with a lock per item (memcached takes about nine
//! a request) calls these far more often than it parks. Once the runtime
//! is up, whether corun's algorithm applies at all (`on()` and the probed
//! layout) is one cached byte (`FAST`), and an uncontended lock or unlock
//! of a plain mutex (no kind bits: not recursive, error-checking, robust,
//! priority-protocol or process-shared) is that byte, the kind word and
//! one atomic operation, in the exported function itself, with no call
//! and no frame; everything else goes the full way (`*_slow`). callgrind,
//! memcached: lock 64 -> 12, unlock 51 -> 12 instructions a call (glibc's
//! own: 31 and 26).

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

/// `on() && layout().mutex` once the runtime is up: 0 not known yet,
/// `FAST_YES`, `FAST_NO`. Before the runtime starts, `on()` reads the
/// environment, so nothing is cached then.
static FAST: AtomicU8 = AtomicU8::new(0);
const FAST_YES: u8 = 1;
const FAST_NO: u8 = 2;

/// Our implementation applies to this mutex.
fn mutex_ours(w: &MutexWords) -> bool {
    let applies = match FAST.load(Ordering::Relaxed) {
        FAST_YES => true,
        FAST_NO => false,
        _ => {
            let applies = on() && layout().mutex;
            if sched::runtime().is_some() {
                FAST.store(if applies { FAST_YES } else { FAST_NO }, Ordering::Relaxed);
            }
            applies
        }
    };
    let ours = applies && w.kind.load(Ordering::Relaxed) & KIND_PASSTHROUGH == 0;
    if !ours {
        super::kernel_bound();
    }
    ours
}

/// A mutex of the plain kind (`PTHREAD_MUTEX_NORMAL`/`TIMED_NP` or
/// `ADAPTIVE_NP`, nothing passed to glibc) that corun's algorithm owns:
/// its lock and unlock are the lock word alone. False whenever unsure.
#[inline(always)]
fn plain_ours(w: &MutexWords) -> bool {
    let k = w.kind.load(Ordering::Relaxed) & (KIND_PASSTHROUGH | KIND_MASK);
    FAST.load(Ordering::Relaxed) == FAST_YES && (k == 0 || k == libc::PTHREAD_MUTEX_ADAPTIVE_NP)
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
    if plain_ours(w)
        && w.lock
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    {
        return 0;
    }
    // SAFETY: the caller's mutex.
    unsafe { mutex_lock_slow(m) }
}

#[inline(never)]
unsafe fn mutex_lock_slow(m: *mut pthread_mutex_t) -> c_int {
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
    if plain_ours(w) {
        return match w
            .lock
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        {
            Ok(_) => 0,
            Err(_) => libc::EBUSY,
        };
    }
    // SAFETY: the caller's mutex.
    unsafe { mutex_trylock_slow(m) }
}

#[inline(never)]
unsafe fn mutex_trylock_slow(m: *mut pthread_mutex_t) -> c_int {
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
    if plain_ours(w) {
        if w.lock.swap(0, Ordering::Release) == 2 {
            wake_one(&w.lock);
        }
        return 0;
    }
    // SAFETY: the caller's mutex.
    unsafe { mutex_unlock_slow(m) }
}

/// `raw_unlock`'s wake, apart: the unlock's common path keeps no frame.
#[cold]
#[inline(never)]
fn wake_one(word: &AtomicU32) {
    sync::wake(word, 1);
}

#[inline(never)]
unsafe fn mutex_unlock_slow(m: *mut pthread_mutex_t) -> c_int {
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
