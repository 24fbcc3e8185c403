//! Barriers: `pthread_barrier_init`, `wait`, `destroy` (see mod.rs).
//!
//! A process-shared barrier (or one glibc made before corun's
//! interposition was on) stays glibc's: its other threads may be in other
//! processes. glibc has no "try" for a barrier wait (arriving is part of
//! the wait), so in a coroutine the whole wait is glibc's, made on a
//! blocking-pool helper while the coroutine parks.

use super::*;

/// Tag in bytes 28..32 (glibc's barrier uses the first 20 of its 32).
const BARRIER_TAG: u32 = 0xC0B0_BA55;

#[repr(C)]
struct BarrierWords {
    count: AtomicU32,
    arrived: AtomicU32,
    generation: AtomicU32,
    /// Threads inside `wait` (destroy waits for them to leave).
    inside: AtomicU32,
    _glibc: [u32; 3],
    tag: AtomicU32,
}

/// # Safety
/// `b` points at a pthread_barrier_t (32 bytes, 8-aligned).
unsafe fn barrier_words<'a>(b: *mut pthread_barrier_t) -> &'a BarrierWords {
    // SAFETY: BarrierWords is 32 bytes, the size of pthread_barrier_t.
    unsafe { &*(b as *const BarrierWords) }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_barrier_init(
    b: *mut pthread_barrier_t,
    attr: *const pthread_barrierattr_t,
    count: c_uint,
) -> c_int {
    let mut shared: c_int = libc::PTHREAD_PROCESS_PRIVATE;
    if !attr.is_null() {
        // SAFETY: an initialised attribute object (caller's contract).
        unsafe { pthread_barrierattr_getpshared(attr, &mut shared) };
    }
    // SAFETY: the caller's barrier.
    let w = unsafe { barrier_words(b) };
    if !on() || shared != libc::PTHREAD_PROCESS_PRIVATE {
        // SAFETY: the caller's contract.
        let r = unsafe { real::pthread_barrier_init(b, attr, count) };
        w.tag.store(0, Ordering::Relaxed);
        return r;
    }
    if count == 0 || count > i32::MAX as u32 {
        return libc::EINVAL;
    }
    w.count.store(count, Ordering::Relaxed);
    w.arrived.store(0, Ordering::Relaxed);
    w.generation.store(0, Ordering::Relaxed);
    w.inside.store(0, Ordering::Relaxed);
    w.tag.store(BARRIER_TAG, Ordering::Release);
    0
}

#[no_mangle]
pub unsafe extern "C" fn pthread_barrier_wait(b: *mut pthread_barrier_t) -> c_int {
    // SAFETY: the caller's barrier.
    let w = unsafe { barrier_words(b) };
    if w.tag.load(Ordering::Acquire) != BARRIER_TAG {
        if on() && in_coroutine() {
            let bp = b as usize;
            // SAFETY: the caller's contract; the caller stays parked (and
            // its barrier alive) until the helper's wait returns.
            return crate::sched::blocking::run_blocking(move || unsafe {
                real::pthread_barrier_wait(bp as *mut pthread_barrier_t)
            });
        }
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_barrier_wait(b) };
    }
    w.inside.fetch_add(1, Ordering::AcqRel);
    let g = w.generation.load(Ordering::Acquire);
    let n = w.arrived.fetch_add(1, Ordering::AcqRel) + 1;
    let r = if n == w.count.load(Ordering::Relaxed) {
        w.arrived.store(0, Ordering::Relaxed);
        w.generation.fetch_add(1, Ordering::Release);
        sync::wake_all(&w.generation);
        libc::PTHREAD_BARRIER_SERIAL_THREAD
    } else {
        while w.generation.load(Ordering::Acquire) == g {
            crate::sched::waitdesc::describe(
                crate::sched::waitdesc::Cause::Barrier,
                w.generation.as_ptr() as u64,
            );
            sync::wait(&w.generation, g, None);
        }
        0
    };
    w.inside.fetch_sub(1, Ordering::AcqRel);
    r
}

#[no_mangle]
pub unsafe extern "C" fn pthread_barrier_destroy(b: *mut pthread_barrier_t) -> c_int {
    // SAFETY: the caller's barrier.
    let w = unsafe { barrier_words(b) };
    if w.tag.load(Ordering::Acquire) != BARRIER_TAG {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_barrier_destroy(b) };
    }
    if w.arrived.load(Ordering::Acquire) != 0 {
        return libc::EBUSY;
    }
    // Woken threads may still be reading the generation: let them leave.
    while w.inside.load(Ordering::Acquire) != 0 {
        if in_coroutine() {
            yield_now();
        } else {
            // SAFETY: the raw syscall (sched_yield is interposed).
            unsafe { crate::sys::real::syscall!(libc::SYS_sched_yield) };
        }
    }
    w.tag.store(0, Ordering::Release);
    0
}
