//! The synchronisation objects of `include/corun.h`: `corun_mutex_t`,
//! `corun_cond_t`, `corun_sem_t`, `corun_wg_t`, on `sched::cosync`.
//!
//! They are plain words in the program's memory (static initialisers, no
//! free), shared by coroutines on any worker and native threads. Results
//! are errno values; a NULL object is EINVAL.

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

use crate::sched::cosync::{self, Cond, Error, Sem, WaitGroup};

#[repr(C)]
pub struct Mutex {
    state: AtomicU32,
}

#[repr(C)]
pub struct CondVar {
    seq: AtomicU32,
    waiters: AtomicU32,
}

#[repr(C)]
pub struct Semaphore {
    value: AtomicU32,
    waiters: AtomicU32,
}

#[repr(C)]
pub struct Wg {
    count: AtomicI32,
    gen: AtomicU32,
    waiters: AtomicU32,
}

fn errno_of(e: Error) -> c_int {
    match e {
        Error::TimedOut => libc::ETIMEDOUT,
        Error::Cancelled => libc::ECANCELED,
        Error::WouldBlock => libc::EAGAIN,
        Error::Invalid => libc::EINVAL,
    }
}

fn result(r: Result<(), Error>) -> c_int {
    r.map_or_else(errno_of, |_| 0)
}

fn after(ns: u64) -> Option<u64> {
    Some(crate::sys::now_ns().saturating_add(ns))
}

/// The object behind a pointer (None for NULL).
fn obj<'a, T>(p: *mut T) -> Option<&'a T> {
    // SAFETY: the caller passes an object of this type (its memory, the
    // C API's contract) or NULL; every field is atomic.
    unsafe { p.as_ref() }
}

// ------------------------------------------------------------------ mutex

#[no_mangle]
pub extern "C" fn corun_mutex_init(m: *mut Mutex) -> c_int {
    obj(m).map_or(libc::EINVAL, |m| {
        m.state.store(0, Ordering::SeqCst);
        0
    })
}

#[no_mangle]
pub extern "C" fn corun_mutex_lock(m: *mut Mutex) -> c_int {
    obj(m).map_or(libc::EINVAL, |m| result(cosync::mutex_lock(&m.state, None)))
}

/// What the header's inline `corun_mutex_lock` calls when the mutex was
/// not free.
#[no_mangle]
pub extern "C" fn corun_mutex_lock_slow(m: *mut Mutex) -> c_int {
    corun_mutex_lock(m)
}

#[no_mangle]
pub extern "C" fn corun_mutex_timedlock(m: *mut Mutex, ns: u64) -> c_int {
    obj(m).map_or(libc::EINVAL, |m| {
        result(cosync::mutex_lock(&m.state, after(ns)))
    })
}

#[no_mangle]
pub extern "C" fn corun_mutex_trylock(m: *mut Mutex) -> c_int {
    match obj(m) {
        Some(m) if cosync::mutex_trylock(&m.state) => 0,
        Some(_) => libc::EBUSY,
        None => libc::EINVAL,
    }
}

/// What the header's inline `corun_mutex_unlock` calls when the mutex was
/// not simply held (contended, or not locked).
#[no_mangle]
pub extern "C" fn corun_mutex_unlock_slow(m: *mut Mutex) -> c_int {
    corun_mutex_unlock(m)
}

#[no_mangle]
pub extern "C" fn corun_mutex_unlock(m: *mut Mutex) -> c_int {
    match obj(m) {
        Some(m) if m.state.load(Ordering::Relaxed) == 0 => libc::EPERM,
        Some(m) => {
            cosync::mutex_unlock(&m.state);
            0
        }
        None => libc::EINVAL,
    }
}

// -------------------------------------------------------------- condition

fn cond<'a>(c: *mut CondVar) -> Option<Cond<'a>> {
    obj(c).map(|c| Cond {
        seq: &c.seq,
        waiters: &c.waiters,
    })
}

#[no_mangle]
pub extern "C" fn corun_cond_init(c: *mut CondVar) -> c_int {
    obj(c).map_or(libc::EINVAL, |c| {
        c.seq.store(0, Ordering::SeqCst);
        c.waiters.store(0, Ordering::SeqCst);
        0
    })
}

fn cond_wait(c: *mut CondVar, m: *mut Mutex, deadline: Option<u64>) -> c_int {
    match (cond(c), obj(m)) {
        (Some(c), Some(m)) if m.state.load(Ordering::Relaxed) != 0 => {
            result(c.wait(&m.state, deadline))
        }
        (Some(_), Some(_)) => libc::EPERM,
        _ => libc::EINVAL,
    }
}

#[no_mangle]
pub extern "C" fn corun_cond_wait(c: *mut CondVar, m: *mut Mutex) -> c_int {
    cond_wait(c, m, None)
}

#[no_mangle]
pub extern "C" fn corun_cond_timedwait(c: *mut CondVar, m: *mut Mutex, ns: u64) -> c_int {
    cond_wait(c, m, after(ns))
}

#[no_mangle]
pub extern "C" fn corun_cond_signal(c: *mut CondVar) -> c_int {
    cond(c).map_or(libc::EINVAL, |c| {
        c.signal();
        0
    })
}

#[no_mangle]
pub extern "C" fn corun_cond_broadcast(c: *mut CondVar) -> c_int {
    cond(c).map_or(libc::EINVAL, |c| {
        c.broadcast();
        0
    })
}

// -------------------------------------------------------------- semaphore

fn sem<'a>(s: *mut Semaphore) -> Option<Sem<'a>> {
    obj(s).map(|s| Sem {
        value: &s.value,
        waiters: &s.waiters,
    })
}

#[no_mangle]
pub extern "C" fn corun_sem_init(s: *mut Semaphore, value: u32) -> c_int {
    obj(s).map_or(libc::EINVAL, |s| {
        s.value.store(value, Ordering::SeqCst);
        s.waiters.store(0, Ordering::SeqCst);
        0
    })
}

#[no_mangle]
pub extern "C" fn corun_sem_wait(s: *mut Semaphore) -> c_int {
    sem(s).map_or(libc::EINVAL, |s| result(s.wait(None)))
}

#[no_mangle]
pub extern "C" fn corun_sem_timedwait(s: *mut Semaphore, ns: u64) -> c_int {
    sem(s).map_or(libc::EINVAL, |s| result(s.wait(after(ns))))
}

#[no_mangle]
pub extern "C" fn corun_sem_trywait(s: *mut Semaphore) -> c_int {
    match sem(s) {
        Some(s) if s.try_wait() => 0,
        Some(_) => libc::EAGAIN,
        None => libc::EINVAL,
    }
}

#[no_mangle]
pub extern "C" fn corun_sem_post(s: *mut Semaphore) -> c_int {
    match sem(s).map(|s| s.post()) {
        Some(Ok(())) => 0,
        Some(Err(_)) => libc::EOVERFLOW,
        None => libc::EINVAL,
    }
}

/// The semaphore's value now (0 for NULL).
#[no_mangle]
pub extern "C" fn corun_sem_value(s: *mut Semaphore) -> u32 {
    obj(s).map_or(0, |s| s.value.load(Ordering::SeqCst))
}

// ------------------------------------------------------------- wait group

fn wg<'a>(w: *mut Wg) -> Option<WaitGroup<'a>> {
    obj(w).map(|w| WaitGroup {
        count: &w.count,
        gen: &w.gen,
        waiters: &w.waiters,
    })
}

#[no_mangle]
pub extern "C" fn corun_wg_init(w: *mut Wg) -> c_int {
    obj(w).map_or(libc::EINVAL, |w| {
        w.count.store(0, Ordering::SeqCst);
        w.gen.store(0, Ordering::SeqCst);
        w.waiters.store(0, Ordering::SeqCst);
        0
    })
}

#[no_mangle]
pub extern "C" fn corun_wg_add(w: *mut Wg, delta: i32) -> c_int {
    wg(w).map_or(libc::EINVAL, |w| result(w.add(delta)))
}

#[no_mangle]
pub extern "C" fn corun_wg_done(w: *mut Wg) -> c_int {
    wg(w).map_or(libc::EINVAL, |w| result(w.add(-1)))
}

#[no_mangle]
pub extern "C" fn corun_wg_wait(w: *mut Wg) -> c_int {
    wg(w).map_or(libc::EINVAL, |w| result(w.wait(None)))
}

#[no_mangle]
pub extern "C" fn corun_wg_timedwait(w: *mut Wg, ns: u64) -> c_int {
    wg(w).map_or(libc::EINVAL, |w| result(w.wait(after(ns))))
}
