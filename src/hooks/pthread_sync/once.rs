//! `pthread_once` (and glibc's old `__pthread_once`) and `pthread_spin_lock`
//! (see mod.rs).

use super::*;

const ONCE_IN_PROGRESS: u32 = 1;
const ONCE_DONE: u32 = 2;

#[no_mangle]
pub unsafe extern "C" fn pthread_once(
    once: *mut c_int,
    init: Option<unsafe extern "C" fn()>,
) -> c_int {
    let Some(init) = init else {
        return libc::EINVAL;
    };
    if !on() {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_once(once, init) };
    }
    // SAFETY: pthread_once_t is an aligned int.
    let w = unsafe { &*(once as *const AtomicU32) };
    loop {
        let s = w.load(Ordering::Acquire);
        if s & ONCE_DONE != 0 {
            return 0;
        }
        if s & ONCE_IN_PROGRESS == 0 {
            if w.compare_exchange(s, ONCE_IN_PROGRESS, Ordering::Acquire, Ordering::Acquire)
                .is_ok()
            {
                // SAFETY: the program's init routine.
                unsafe { init() };
                w.store(ONCE_DONE, Ordering::Release);
                sync::wake_all(w);
                return 0;
            }
            continue;
        }
        crate::sched::waitdesc::describe(crate::sched::waitdesc::Cause::Once, w.as_ptr() as u64);
        sync::wait(w, s, None);
    }
}

/// glibc's spinlock values. x86_64's assembly initialises and unlocks with
/// 1 and takes the lock by decrementing it to 0 (natively, contenders push
/// it below 0 while they wait); the generic C version uses 0 for free and
/// 1 for held. `pthread_spin_init`, `trylock` and `unlock` stay glibc's.
#[cfg(target_arch = "x86_64")]
const SPIN_FREE: i32 = 1;
#[cfg(target_arch = "x86_64")]
const SPIN_HELD: i32 = 0;
#[cfg(not(target_arch = "x86_64"))]
const SPIN_FREE: i32 = 0;
#[cfg(not(target_arch = "x86_64"))]
const SPIN_HELD: i32 = 1;

/// Rounds of spinning and yielding before a spinner starts sleeping.
const SPIN_YIELD_ROUNDS: u32 = 16;

#[no_mangle]
pub unsafe extern "C" fn pthread_spin_lock(l: *mut c_int) -> c_int {
    if !on() || !in_coroutine() {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_spin_lock(l) };
    }
    // The holder may be a coroutine of this very worker: spin a little,
    // then let the others run. A yield only runs coroutines that are
    // runnable; a holder waiting for a timer or an fd needs the worker to
    // get back to its timers and epoll, so a spinner that keeps failing
    // sleeps, from 16 us up to 1 ms.
    // SAFETY: pthread_spinlock_t is an aligned int (see SPIN_FREE).
    let w = unsafe { &*(l as *const AtomicI32) };
    let mut round = 0u32;
    loop {
        for _ in 0..100 {
            if w.load(Ordering::Relaxed) == SPIN_FREE
                && w.compare_exchange(SPIN_FREE, SPIN_HELD, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return 0;
            }
            std::hint::spin_loop();
        }
        if round < SPIN_YIELD_ROUNDS {
            yield_now();
        } else {
            let shift = (round - SPIN_YIELD_ROUNDS).min(6);
            sched::sleep_until(crate::sys::now_ns() + (16_000 << shift));
        }
        round = round.saturating_add(1);
    }
}

#[no_mangle]
pub unsafe extern "C" fn __pthread_once(
    once: *mut c_int,
    init: Option<unsafe extern "C" fn()>,
) -> c_int {
    // SAFETY: forwarded.
    unsafe { pthread_once(once, init) }
}
