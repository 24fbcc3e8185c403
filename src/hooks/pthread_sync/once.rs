//! `pthread_once` (and glibc's old `__pthread_once`) and `pthread_spin_lock`
//! (see mod.rs).
//!
//! An init routine that does not return (a C++ exception `std::call_once`
//! lets through, `pthread_exit`, a cancellation) leaves the once to be run
//! again, as glibc's cleanup handler does: the next `call_once` retries.
//! Here the routine runs under a Rust frame with no landing pad (the
//! library is built with `panic = "abort"`), so nothing runs as the unwind
//! passes; instead each run under way is noted (`UNDER_WAY`: the word, the
//! thread, the depth of its `pthread_once` frame) and given back when it
//! is certainly abandoned: at the end of the thread that ran it, or when
//! that thread calls `pthread_once` again from a frame no deeper than the
//! one that ran the routine (that frame is gone; a call from inside the
//! routine is deeper, and waits, as natively). Before, the once stayed
//! "in progress" and every later caller waited for ever.

use std::sync::atomic::AtomicUsize;

use crate::sched::spin_lock::SpinLock;

use super::*;

const ONCE_IN_PROGRESS: u32 = 1;
const ONCE_DONE: u32 = 2;

/// A routine under way: the once word, the coroutine running it, the
/// address of a local of its `pthread_once` frame (`frame_depth`).
#[derive(Clone, Copy)]
struct UnderWay {
    word: usize,
    task: u64,
    depth: usize,
}

/// Routines under way in coroutines; one more than this many at once
/// (nested or in as many threads) are not noted, and wait as before.
const UNDER_WAY_MAX: usize = 32;
static UNDER_WAY: SpinLock<([UnderWay; UNDER_WAY_MAX], usize)> = SpinLock::new((
    [UnderWay {
        word: 0,
        task: 0,
        depth: 0,
    }; UNDER_WAY_MAX],
    0,
));

/// How many runs are noted: a thread's end looks at the table only when
/// some are (its own would be, noted by itself earlier).
static NOTED: AtomicUsize = AtomicUsize::new(0);

/// Where this call's frame is: lower addresses are deeper (the stack
/// grows down on every target corun supports).
#[inline(always)]
fn frame_depth() -> usize {
    let probe = 0u8;
    std::hint::black_box(std::ptr::addr_of!(probe) as usize)
}

/// Notes a run under way; false if the table is full.
fn note_under_way(word: usize, task: u64, depth: usize) -> bool {
    let mut g = UNDER_WAY.lock();
    let (slots, n) = &mut *g;
    if *n == UNDER_WAY_MAX {
        return false;
    }
    slots[*n] = UnderWay { word, task, depth };
    *n += 1;
    NOTED.fetch_add(1, Ordering::Relaxed);
    true
}

/// Gives back the runs of `task` that `abandoned` says are over: each once
/// word goes back to "never run" and its waiters wake (one of them runs
/// the routine again). Returns whether any was.
fn give_back(task: u64, abandoned: impl Fn(&UnderWay) -> bool, done: bool) -> bool {
    let mut freed = [0usize; UNDER_WAY_MAX];
    let mut k = 0;
    {
        let mut g = UNDER_WAY.lock();
        let (slots, n) = &mut *g;
        let mut i = 0;
        while i < *n {
            let u = slots[i];
            if u.task == task && abandoned(&u) {
                if !done {
                    freed[k] = u.word;
                    k += 1;
                }
                *n -= 1;
                slots[i] = slots[*n];
                NOTED.fetch_sub(1, Ordering::Relaxed);
            } else {
                i += 1;
            }
        }
    }
    for &word in &freed[..k] {
        // SAFETY: the word of a `pthread_once` call that ran its routine
        // here: the program's once control, which outlives its users.
        let w = unsafe { &*(word as *const AtomicU32) };
        if w.compare_exchange(ONCE_IN_PROGRESS, 0, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            sync::wake_all(w);
        }
    }
    k != 0
}

/// A coroutine thread ends (`pthread_exit`, a cancellation, or its
/// routine returned): the runs it left under way are abandoned.
pub(crate) fn thread_ended(task: u64) {
    if NOTED.load(Ordering::Relaxed) != 0 {
        give_back(task, |_| true, false);
    }
}

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
    if w.load(Ordering::Acquire) & ONCE_DONE != 0 {
        return 0;
    }
    let me = if in_coroutine() {
        sched::current_id()
    } else {
        0
    };
    let depth = frame_depth();
    loop {
        let s = w.load(Ordering::Acquire);
        if s & ONCE_DONE != 0 {
            return 0;
        }
        if s & ONCE_IN_PROGRESS == 0 {
            if w.compare_exchange(s, ONCE_IN_PROGRESS, Ordering::Acquire, Ordering::Acquire)
                .is_ok()
            {
                let word = w.as_ptr() as usize;
                let noted = me != 0 && note_under_way(word, me, depth);
                // SAFETY: the program's init routine.
                unsafe { init() };
                if noted {
                    give_back(me, |u| u.word == word && u.depth == depth, true);
                }
                w.store(ONCE_DONE, Ordering::Release);
                sync::wake_all(w);
                return 0;
            }
            continue;
        }
        // A run of ours whose frame is at or below this one is over: its
        // routine unwound (an exception the caller caught).
        if me != 0 && give_back(me, |u| u.depth <= depth, false) {
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
