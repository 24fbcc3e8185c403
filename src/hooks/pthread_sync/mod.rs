//! Synchronisation that parks: `pthread_mutex_*`, `pthread_cond_*`,
//! `pthread_rwlock_*`, `pthread_barrier_*`, `pthread_once`,
//! `pthread_spin_lock` (glibc's values: 1 is free on x86_64), `sem_*`.
//!
//! # Mechanism
//!
//! A kernel thread blocked in glibc's `pthread_mutex_lock` would block its
//! whole worker, and with it the coroutine holding the lock: the worker
//! deadlocks (the bug peers such as libgo and acl had). So every operation
//! that can wait is reimplemented here on `sched::sync`, a futex whose
//! sleepers may be coroutines (they park) or native threads (they sleep in
//! the kernel). The objects stay in the program's memory, statically
//! initialised or not, and coroutines and native threads may share them.
//!
//! The algorithms are the classic futex ones, on words inside glibc's own
//! structures so that `PTHREAD_*_INITIALIZER`s and glibc's `*_init`,
//! `*_destroy` and `sem_getvalue` keep working unchanged:
//!
//! - **mutex**: glibc's `__lock` word, 0 free / 1 locked / 2 locked with
//!   sleepers (Drepper, "Futexes are tricky"): the same protocol glibc's
//!   lowlevellock speaks, so a mutex a native thread entered through glibc
//!   before the runtime started is still released correctly. Recursive and
//!   error-checking kinds (glibc's `__kind`, set by `pthread_mutex_init` or
//!   the `_NP` initialisers) keep an owner tag in `__owner` and a depth in
//!   `__count`. A short spin precedes parking.
//! - **condition variable**: a sequence word (the first word of the
//!   object); `wait` reads it, unlocks the mutex and sleeps while it is
//!   unchanged; `signal`/`broadcast` bump it and wake one/all. The
//!   condattr clock (REALTIME or MONOTONIC) is honoured for timed waits.
//!   Nothing is written to the object after a waiter wakes, so destroying
//!   it right after a broadcast is safe.
//! - **rwlock**: a state word (reader count, or all ones for a writer), a
//!   count of sleepers and a wake sequence. Readers are preferred, as with
//!   glibc's default kind; a thread that write-locks twice gets EDEADLK.
//! - **barrier**: count, arrivals and a generation word; the last to
//!   arrive is the serial thread and wakes the round. A tag in bytes glibc
//!   does not use marks barriers made here.
//! - **once**: glibc's encoding (bit 0 in progress, bit 1 done), so a once
//!   completed before the runtime started stays done.
//! - **semaphore**: glibc's layout (value in the low word, sleepers in the
//!   high word), so `sem_init`, `sem_getvalue` and `sem_destroy` are glibc's.
//!
//! Process-shared objects (PTHREAD_PROCESS_SHARED, `sem_init` with
//! pshared, named semaphores) and robust or priority-protocol mutexes stay
//! glibc's: their waiters may be in other processes, which wait in the
//! kernel. A coroutine never blocks its worker on one, though: it makes
//! glibc's *try* operation and, while that says busy, sleeps on a timer
//! with a bounded back-off (`try_with_backoff`: 20 us doubling to 1 ms),
//! so the holder (maybe parked on the same worker) runs. Process-shared
//! condition variables and barriers have no try operation: their glibc
//! wait runs on a blocking-pool helper while the coroutine parks
//! (`cond.rs`, `barrier.rs`). Where the
//! process-shared and clock bits live in glibc's structures is found once
//! at first use by initialising sample objects with glibc itself; if the
//! layout is not the one expected, that family passes through with one
//! warning rather than guessing.
//!
//! `CORUN_THREADS=native` makes every function here a passthrough.
//!
//! One file per object: `mutex.rs`, `cond.rs`, `rwlock.rs`, `barrier.rs`,
//! `once.rs` (once and spinlocks), `sem.rs`; this file holds what they
//! share (the real functions, when to interpose, glibc's layout).

mod barrier;
mod cond;
mod mutex;
mod once;
mod rwlock;
mod sem;

use cond::COND_WORDS;
pub(crate) use cond::{
    pthread_cond_broadcast, pthread_cond_signal, pthread_cond_timedwait, pthread_cond_wait,
};
pub(crate) use mutex::{lock_any, unlock_any};
pub(crate) use mutex::{
    pthread_mutex_lock, pthread_mutex_timedlock, pthread_mutex_trylock, pthread_mutex_unlock,
};
use mutex::{MutexWords, KIND_PASSTHROUGH};
pub(crate) use once::pthread_once;
pub(crate) use once::thread_ended as once_thread_ended;
use rwlock::RWLOCK_WORDS;
use sem::SemWords;

use std::ffi::{c_int, c_uint};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU8, Ordering};
use std::sync::OnceLock;

use libc::{
    clockid_t, pthread_barrier_t, pthread_barrierattr_t, pthread_cond_t, pthread_mutex_t,
    pthread_rwlock_t, sem_t, timespec,
};

use crate::config::ThreadMode;
use crate::sched::sync::{self, Deadline, WaitResult};
use crate::sched::{self, current, in_coroutine, yield_now};
use crate::sys::{raw_stderr, set_errno};

use super::pthread::abs_deadline;

mod real {
    use libc::{
        c_int, c_uint, clockid_t, pthread_barrier_t, pthread_barrierattr_t, pthread_cond_t,
        pthread_mutex_t, pthread_rwlock_t, sem_t, timespec,
    };
    crate::sys::real::real_fns! {
        fn pthread_mutex_lock(m: *mut pthread_mutex_t) -> c_int;
        fn pthread_mutex_trylock(m: *mut pthread_mutex_t) -> c_int;
        fn pthread_mutex_timedlock(m: *mut pthread_mutex_t, abs: *const timespec) -> c_int;
        fn pthread_mutex_clocklock(m: *mut pthread_mutex_t, clk: clockid_t, abs: *const timespec) -> c_int;
        fn pthread_mutex_unlock(m: *mut pthread_mutex_t) -> c_int;
        fn pthread_cond_wait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t) -> c_int;
        fn pthread_cond_timedwait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t, abs: *const timespec) -> c_int;
        fn pthread_cond_clockwait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t, clk: clockid_t, abs: *const timespec) -> c_int;
        fn pthread_cond_signal(c: *mut pthread_cond_t) -> c_int;
        fn pthread_cond_broadcast(c: *mut pthread_cond_t) -> c_int;
        fn pthread_rwlock_rdlock(l: *mut pthread_rwlock_t) -> c_int;
        fn pthread_rwlock_tryrdlock(l: *mut pthread_rwlock_t) -> c_int;
        fn pthread_rwlock_timedrdlock(l: *mut pthread_rwlock_t, abs: *const timespec) -> c_int;
        fn pthread_rwlock_clockrdlock(l: *mut pthread_rwlock_t, clk: clockid_t, abs: *const timespec) -> c_int;
        fn pthread_rwlock_wrlock(l: *mut pthread_rwlock_t) -> c_int;
        fn pthread_rwlock_trywrlock(l: *mut pthread_rwlock_t) -> c_int;
        fn pthread_rwlock_timedwrlock(l: *mut pthread_rwlock_t, abs: *const timespec) -> c_int;
        fn pthread_rwlock_clockwrlock(l: *mut pthread_rwlock_t, clk: clockid_t, abs: *const timespec) -> c_int;
        fn pthread_rwlock_unlock(l: *mut pthread_rwlock_t) -> c_int;
        fn pthread_barrier_init(b: *mut pthread_barrier_t, a: *const pthread_barrierattr_t, n: c_uint) -> c_int;
        fn pthread_barrier_wait(b: *mut pthread_barrier_t) -> c_int;
        fn pthread_barrier_destroy(b: *mut pthread_barrier_t) -> c_int;
        fn pthread_once(o: *mut c_int, f: unsafe extern "C" fn()) -> c_int;
        fn pthread_spin_lock(l: *mut c_int) -> c_int;
        fn sem_wait(s: *mut sem_t) -> c_int;
        fn sem_trywait(s: *mut sem_t) -> c_int;
        fn sem_timedwait(s: *mut sem_t, abs: *const timespec) -> c_int;
        fn sem_clockwait(s: *mut sem_t, clk: clockid_t, abs: *const timespec) -> c_int;
        fn sem_post(s: *mut sem_t) -> c_int;
    }
}

// glibc functions corun does not interpose, used by the layout probe.
extern "C" {
    fn pthread_condattr_init(a: *mut libc::pthread_condattr_t) -> c_int;
    fn pthread_condattr_setpshared(a: *mut libc::pthread_condattr_t, v: c_int) -> c_int;
    fn pthread_condattr_setclock(a: *mut libc::pthread_condattr_t, c: clockid_t) -> c_int;
    fn pthread_condattr_destroy(a: *mut libc::pthread_condattr_t) -> c_int;
    fn pthread_cond_init(c: *mut pthread_cond_t, a: *const libc::pthread_condattr_t) -> c_int;
    fn pthread_rwlockattr_init(a: *mut libc::pthread_rwlockattr_t) -> c_int;
    fn pthread_rwlockattr_setpshared(a: *mut libc::pthread_rwlockattr_t, v: c_int) -> c_int;
    fn pthread_rwlockattr_destroy(a: *mut libc::pthread_rwlockattr_t) -> c_int;
    fn pthread_rwlock_init(l: *mut pthread_rwlock_t, a: *const libc::pthread_rwlockattr_t)
        -> c_int;
    fn pthread_mutexattr_init(a: *mut libc::pthread_mutexattr_t) -> c_int;
    fn pthread_mutexattr_settype(a: *mut libc::pthread_mutexattr_t, t: c_int) -> c_int;
    fn pthread_mutexattr_setpshared(a: *mut libc::pthread_mutexattr_t, v: c_int) -> c_int;
    fn pthread_mutexattr_destroy(a: *mut libc::pthread_mutexattr_t) -> c_int;
    fn pthread_mutex_init(m: *mut pthread_mutex_t, a: *const libc::pthread_mutexattr_t) -> c_int;
    fn pthread_barrierattr_getpshared(a: *const pthread_barrierattr_t, v: *mut c_int) -> c_int;
    fn sem_init(s: *mut sem_t, pshared: c_int, value: c_uint) -> c_int;
}

// ---------------------------------------------------------------------------
// When to interpose, and glibc's layout

mod mask;
use mask::Mask;

/// Whether the pthread interposition is on. Before the runtime starts
/// (constructors) the environment decides; the runtime checks the value.
///
/// No lock and no allocation here: this runs inside `malloc` when the
/// program's allocator (jemalloc, tcmalloc) locks pthread mutexes, and a
/// `OnceLock` or `std::env::var` (which allocates) would re-enter itself.
#[inline]
fn on() -> bool {
    match sched::runtime() {
        Some(r) => r.config.threads == ThreadMode::Coroutine,
        None => !super::pthread::env_is(c"CORUN_THREADS", b"native"),
    }
}

struct Layout {
    mutex: bool,
    /// (process-shared bits, monotonic-clock bits)
    cond: Option<(Mask, Mask)>,
    rwlock: Option<Mask>,
    sem: bool,
}

fn bytes_of<T>(v: &T) -> &[u8] {
    // SAFETY: viewing a plain-old-data libc object as bytes.
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) }
}

fn probe() -> Layout {
    // SAFETY: glibc initialisers on zeroed local objects; nothing else
    // refers to them.
    unsafe {
        let mut mutex = true;
        let mut ma: libc::pthread_mutexattr_t = std::mem::zeroed();
        let mut m: pthread_mutex_t = std::mem::zeroed();
        pthread_mutexattr_init(&mut ma);
        pthread_mutexattr_settype(&mut ma, libc::PTHREAD_MUTEX_RECURSIVE);
        pthread_mutex_init(&mut m, &ma);
        mutex &= (*(&m as *const _ as *const MutexWords))
            .kind
            .load(Ordering::Relaxed)
            & 3
            == 1;
        pthread_mutexattr_settype(&mut ma, libc::PTHREAD_MUTEX_NORMAL);
        pthread_mutexattr_setpshared(&mut ma, libc::PTHREAD_PROCESS_SHARED);
        pthread_mutex_init(&mut m, &ma);
        mutex &= (*(&m as *const _ as *const MutexWords))
            .kind
            .load(Ordering::Relaxed)
            & KIND_PASSTHROUGH
            != 0;
        pthread_mutexattr_destroy(&mut ma);

        let mut ca: libc::pthread_condattr_t = std::mem::zeroed();
        let (mut c0, mut c1, mut c2): (pthread_cond_t, pthread_cond_t, pthread_cond_t) =
            (std::mem::zeroed(), std::mem::zeroed(), std::mem::zeroed());
        pthread_cond_init(&mut c0, std::ptr::null());
        pthread_condattr_init(&mut ca);
        pthread_condattr_setpshared(&mut ca, libc::PTHREAD_PROCESS_SHARED);
        pthread_cond_init(&mut c1, &ca);
        pthread_condattr_destroy(&mut ca);
        pthread_condattr_init(&mut ca);
        pthread_condattr_setclock(&mut ca, libc::CLOCK_MONOTONIC);
        pthread_cond_init(&mut c2, &ca);
        pthread_condattr_destroy(&mut ca);
        let shared = Mask::diff(bytes_of(&c0), bytes_of(&c1));
        let mono = Mask::diff(bytes_of(&c0), bytes_of(&c2));
        let cond = (!shared.is_empty()
            && !mono.is_empty()
            && shared.clear_of(0, COND_WORDS)
            && mono.clear_of(0, COND_WORDS))
        .then_some((shared, mono));

        let mut ra: libc::pthread_rwlockattr_t = std::mem::zeroed();
        let (mut r0, mut r1): (pthread_rwlock_t, pthread_rwlock_t) =
            (std::mem::zeroed(), std::mem::zeroed());
        pthread_rwlock_init(&mut r0, std::ptr::null());
        pthread_rwlockattr_init(&mut ra);
        pthread_rwlockattr_setpshared(&mut ra, libc::PTHREAD_PROCESS_SHARED);
        pthread_rwlock_init(&mut r1, &ra);
        pthread_rwlockattr_destroy(&mut ra);
        let rshared = Mask::diff(bytes_of(&r0), bytes_of(&r1));
        let rwlock = (!rshared.is_empty() && rshared.clear_of(0, RWLOCK_WORDS)).then_some(rshared);

        let mut s: sem_t = std::mem::zeroed();
        sem_init(&mut s, 0, 5);
        let w = &*(&s as *const sem_t as *const SemWords);
        let mut sem = w.value.load(Ordering::Relaxed) == 5
            && w.nwaiters.load(Ordering::Relaxed) == 0
            && w.private == 0;
        sem_init(&mut s, 1, 0);
        let w = &*(&s as *const sem_t as *const SemWords);
        sem &= w.private != 0;

        let l = Layout {
            mutex,
            cond,
            rwlock,
            sem,
        };
        if !(l.mutex && l.cond.is_some() && l.rwlock.is_some() && l.sem) {
            raw_stderr(
                b"corun: this glibc's pthread object layout is not the one corun knows; \
                  some pthread objects will block their worker when contended\n",
            );
        }
        l
    }
}

fn layout() -> &'static Layout {
    static L: OnceLock<Layout> = OnceLock::new();
    L.get_or_init(probe)
}

/// Probes the layout now, at start: a lazy first probe could be
/// interrupted by a handler that calls `sem_post`, which would wait for
/// the probe it interrupted.
pub(crate) fn warm_up() {
    layout();
}

/// The calling thread uses a lock glibc keeps by kernel tid: it must not
/// move to another worker's kernel thread (`sched::shed`).
fn kernel_bound() {
    if let Some(t) = current() {
        t.ident.kernel_bound.set(true);
    }
}

/// The caller's owner tag for recursive and error-checking mutexes and
/// rwlock writers: the kernel tid for a native thread (as glibc), a tag
/// above any tid (pid_max is at most 2^22) for a coroutine.
fn owner_tag() -> i32 {
    if let Some(t) = current() {
        return 0x4000_0000 | (t.id as i32 & 0x3FFF_FFFF);
    }
    std::thread_local! {
        static TID: std::cell::Cell<i32> = const { std::cell::Cell::new(0) };
    }
    let t = TID.get();
    if t != 0 {
        return t;
    }
    let t = crate::sys::gettid();
    TID.set(t);
    t
}

/// Whether a wait for an object only glibc may take backs off here
/// (`try_with_backoff`, or a blocking-pool helper): in a coroutine that
/// shares the process with others. The process's only coroutine (a forked
/// child that made no thread, a program that never made one) makes glibc's
/// blocking call, as natively: nothing else could run on its worker
/// meanwhile, and the back-off's timer rounds made a round trip through a
/// pair of named semaphores between two such processes 100-200 times
/// slower than natively.
fn backs_off() -> bool {
    on() && sched::parking()
}

/// The longest sleep between two attempts on a watched word: a safety net
/// (a release always wakes the watcher), cheap at this rate.
const WATCH_PAUSE_NS: u64 = 100_000_000;

/// What a signal handler that runs in a coroutine waiting in
/// `try_with_backoff` does to the wait.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum OnSignal {
    /// The wait goes on: glibc's mutex and rwlock locks retry their futex
    /// wait after EINTR.
    Continue,
    /// The wait fails with EINTR as glibc's `sem_wait` does, whose futex
    /// wait the kernel ends after any handler when it has a timeout, and
    /// after one without SA_RESTART when it has none (checked natively:
    /// c-tests/pshared_timeout.c).
    Eintr,
}

/// In a coroutine, waits for an object that only glibc may take (process
/// shared, robust, priority-protocol) without blocking the worker:
/// `attempt` is glibc's try operation, returning EBUSY (or `busy`) while
/// another thread holds the object; between attempts the coroutine sleeps
/// 20 us, doubling up to 1 ms (the holder may be a coroutine of this very
/// worker, or another process). With `watch`, a process-shared word that
/// stays 0 while the object is busy and that a release wakes in the kernel
/// (a semaphore's value, its waiter count raised by the caller), the
/// coroutine sleeps until that wake instead (`sync::shared_watch`), or
/// `WATCH_PAUSE_NS` at most. Returns the attempt's answer, ETIMEDOUT once
/// `deadline` passed, or EINTR when `on_signal` says so.
pub(super) fn try_with_backoff(
    busy: c_int,
    deadline: Option<Deadline>,
    on_signal: OnSignal,
    watch: Option<&AtomicU32>,
    mut attempt: impl FnMut() -> c_int,
) -> c_int {
    let mut pause = 20_000u64;
    let mut intr = (on_signal == OnSignal::Eintr).then(crate::sched::signals::Interruptible::begin);
    loop {
        let r = attempt();
        if r != busy {
            return r;
        }
        if let Some(i) = intr.as_mut() {
            if let Some(restart) = i.check() {
                if !restart || deadline.is_some() {
                    return libc::EINTR;
                }
                *i = crate::sched::signals::Interruptible::begin();
            }
        }
        let mut until = crate::sys::now_ns() + pause;
        if let Some(d) = deadline {
            // Asked of the deadline's own clock: a CLOCK_REALTIME one
            // that has passed converts to "now" on the monotonic clock,
            // which is never behind a `now` read before it, so comparing
            // the converted value would never time out.
            if d.passed() {
                return libc::ETIMEDOUT;
            }
            until = until.min(d.monotonic());
        }
        // One park, not `sched::sleep_until`: a handler that runs in the
        // coroutine ends the park early, and the next round looks at it
        // (sleep_until would park again at once, and spin, while the
        // handler's mark stands).
        let watched = watch.and_then(|w| {
            let mut until = crate::sys::now_ns() + WATCH_PAUSE_NS;
            if let Some(d) = deadline {
                until = until.min(d.monotonic());
            }
            crate::sched::waitdesc::describe(crate::sched::waitdesc::Cause::Sem, w.as_ptr() as u64);
            sync::shared_watch::wait(w, 0, Some(Deadline::Monotonic(until)))
        });
        if watched.is_none() {
            crate::sched::waitdesc::describe(crate::sched::waitdesc::Cause::Timer, until);
            sched::park_cancelable(|_| true, Some(until));
        }
        // A semaphore's attempt is its cancellation point, which first
        // takes back the waiter count (sem.rs); the others act here.
        if on_signal == OnSignal::Continue {
            if let Some(t) = current() {
                sched::identity::cancel_point(&t.ident);
            }
        }
        pause = (pause * 2).min(1_000_000);
    }
}

/// Rounds of spinning before parking, when another worker could release.
fn spins() -> u32 {
    if sched::runtime().is_some_and(|r| r.workers.len() > 1) {
        64
    } else {
        0
    }
}

fn deadline_of(clk: clockid_t, abs: *const timespec) -> Result<Deadline, c_int> {
    abs_deadline(clk, abs).ok_or(libc::EINVAL)
}
