//! Synchronisation that parks: `pthread_mutex_*`, `pthread_cond_*`,
//! `pthread_rwlock_*`, `pthread_barrier_*`, `pthread_once`,
//! `pthread_spin_lock`, `sem_*`.
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
//! pshared, named semaphores) and robust or priority-protocol mutexes pass
//! through to glibc: their waiters may be in other processes. Where the
//! process-shared and clock bits live in glibc's structures is found once
//! at first use by initialising sample objects with glibc itself; if the
//! layout is not the one expected, that family passes through with one
//! warning rather than guessing.
//!
//! `CORUN_THREADS=native` makes every function here a passthrough.

use std::ffi::{c_int, c_uint};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
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

/// Bytes that differ between two initialisations of an object.
#[derive(Clone, Copy)]
struct Mask {
    bytes: [u8; 64],
    len: usize,
}

impl Mask {
    fn diff(a: &[u8], b: &[u8]) -> Mask {
        let mut m = Mask {
            bytes: [0; 64],
            len: a.len().min(64),
        };
        for i in 0..m.len {
            m.bytes[i] = a[i] ^ b[i];
        }
        m
    }

    fn is_empty(&self) -> bool {
        self.bytes[..self.len].iter().all(|&b| b == 0)
    }

    /// No difference in bytes `lo..hi` (the words corun uses).
    fn clear_of(&self, lo: usize, hi: usize) -> bool {
        self.bytes[lo..hi.min(self.len)].iter().all(|&b| b == 0)
    }

    /// Whether `obj` has any bit of the mask set.
    ///
    /// # Safety
    /// `obj` points at `len` readable bytes.
    unsafe fn hit(&self, obj: *const u8) -> bool {
        (0..self.len).any(|i| {
            // SAFETY: i < len, within the object by the contract.
            self.bytes[i] != 0
                && unsafe { std::ptr::read_volatile(obj.add(i)) } & self.bytes[i] != 0
        })
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

// ---------------------------------------------------------------------------
// Mutex

/// The head of glibc's `struct __pthread_mutex_s` (same on every 64-bit
/// Linux glibc).
#[repr(C)]
struct MutexWords {
    lock: AtomicU32,
    count: AtomicU32,
    owner: AtomicI32,
    nusers: AtomicU32,
    kind: AtomicI32,
}

const KIND_MASK: i32 = 3;
/// Robust (16), priority inherit (32) or protect (64), process-shared (128).
const KIND_PASSTHROUGH: i32 = 16 | 32 | 64 | 128;

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

/// Locks `m` by whichever implementation owns it (for condition variables).
unsafe fn lock_any(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's mutex.
    let w = unsafe { mutex_words(m) };
    if mutex_ours(w) {
        mutex_lock(w, None)
    } else {
        // SAFETY: the caller's mutex.
        unsafe { real::pthread_mutex_lock(m) }
    }
}

unsafe fn unlock_any(m: *mut pthread_mutex_t) -> c_int {
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
        return unsafe { real::pthread_mutex_lock(m) };
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

// ---------------------------------------------------------------------------
// Condition variables

/// Bytes of the object corun uses: the sequence word.
const COND_WORDS: usize = 4;

/// # Safety
/// `c` points at a live pthread_cond_t.
unsafe fn cond_seq<'a>(c: *mut pthread_cond_t) -> &'a AtomicU32 {
    // SAFETY: the first 4 bytes of the (8-aligned) object.
    unsafe { &*(c as *const AtomicU32) }
}

/// The cond's (shared, monotonic) flags, or None if corun does not handle
/// it (passthrough).
unsafe fn cond_ours(c: *mut pthread_cond_t) -> Option<bool> {
    if !on() {
        return None;
    }
    let (shared, mono) = layout().cond.as_ref()?;
    // SAFETY: the caller's object, 48 readable bytes.
    unsafe {
        if shared.hit(c as *const u8) {
            return None;
        }
        Some(mono.hit(c as *const u8))
    }
}

unsafe fn cond_wait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    deadline: Option<Deadline>,
) -> c_int {
    // SAFETY: the caller's cond.
    let seq = unsafe { cond_seq(c) };
    let s = seq.load(Ordering::SeqCst);
    // SAFETY: the caller's mutex.
    let r = unsafe { unlock_any(m) };
    if r != 0 {
        return r;
    }
    let w = sync::wait(seq, s, deadline);
    // SAFETY: the caller's mutex.
    unsafe { lock_any(m) };
    if w == WaitResult::TimedOut {
        libc::ETIMEDOUT
    } else {
        0
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_cond_wait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
) -> c_int {
    // SAFETY: the caller's objects.
    unsafe {
        match cond_ours(c) {
            Some(_) => cond_wait(c, m, None),
            None => real::pthread_cond_wait(c, m),
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_cond_timedwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: the caller's objects.
    unsafe {
        match cond_ours(c) {
            Some(mono) => {
                let clk = if mono {
                    libc::CLOCK_MONOTONIC
                } else {
                    libc::CLOCK_REALTIME
                };
                match deadline_of(clk, abs) {
                    Ok(d) => cond_wait(c, m, Some(d)),
                    Err(e) => e,
                }
            }
            None => real::pthread_cond_timedwait(c, m, abs),
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_cond_clockwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    clk: clockid_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: the caller's objects.
    unsafe {
        match cond_ours(c) {
            Some(_) => match deadline_of(clk, abs) {
                Ok(d) => cond_wait(c, m, Some(d)),
                Err(e) => e,
            },
            None => real::pthread_cond_clockwait(c, m, clk, abs),
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: the caller's cond.
    unsafe {
        if cond_ours(c).is_none() {
            return real::pthread_cond_signal(c);
        }
        let seq = cond_seq(c);
        seq.fetch_add(1, Ordering::SeqCst);
        sync::wake(seq, 1);
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: the caller's cond.
    unsafe {
        if cond_ours(c).is_none() {
            return real::pthread_cond_broadcast(c);
        }
        let seq = cond_seq(c);
        seq.fetch_add(1, Ordering::SeqCst);
        sync::wake_all(seq);
    }
    0
}

// ---------------------------------------------------------------------------
// Read-write locks

/// Bytes of the object corun uses.
const RWLOCK_WORDS: usize = 16;
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
        ok = sync::wait(&w.seq, q, deadline) != WaitResult::TimedOut;
    }
    w.sleepers.fetch_sub(1, Ordering::SeqCst);
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

#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_rdlock(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's rwlock.
    match unsafe { rw_ours(l) } {
        Some(w) => rdlock(w, false, None),
        // SAFETY: the caller's contract.
        None => unsafe { real::pthread_rwlock_rdlock(l) },
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
            .unwrap_or_else(|| real::pthread_rwlock_clockrdlock(l, clk, abs))
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_wrlock(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's rwlock.
    match unsafe { rw_ours(l) } {
        Some(w) => wrlock(w, false, None),
        // SAFETY: the caller's contract.
        None => unsafe { real::pthread_rwlock_wrlock(l) },
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

// ---------------------------------------------------------------------------
// Barriers

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
            unsafe { libc::syscall(libc::SYS_sched_yield) };
        }
    }
    w.tag.store(0, Ordering::Release);
    0
}

// ---------------------------------------------------------------------------
// Once

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
        sync::wait(w, s, None);
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_spin_lock(l: *mut c_int) -> c_int {
    if !on() || !in_coroutine() {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_spin_lock(l) };
    }
    // The holder may be a coroutine of this very worker: spin a little,
    // then let the others run.
    // SAFETY: pthread_spinlock_t is an aligned int (0 free, nonzero held).
    let w = unsafe { &*(l as *const AtomicI32) };
    loop {
        for _ in 0..100 {
            if w.load(Ordering::Relaxed) == 0
                && w.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return 0;
            }
            std::hint::spin_loop();
        }
        yield_now();
    }
}

// ---------------------------------------------------------------------------
// Semaphores

/// glibc's `struct new_sem` on 64-bit little-endian: `data` = value |
/// nwaiters << 32, then `private`, which holds glibc's LLL_SHARED (nonzero)
/// for a process-shared semaphore and 0 for a private one.
#[repr(C)]
struct SemWords {
    value: AtomicU32,
    nwaiters: AtomicU32,
    private: i32,
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
                if !restart {
                    return libc::EINTR;
                }
                *i = crate::sched::signals::Interruptible::begin();
            }
        }
        w.nwaiters.fetch_add(1, Ordering::SeqCst);
        let r = sync::wait(&w.value, 0, deadline);
        w.nwaiters.fetch_sub(1, Ordering::SeqCst);
        if r == WaitResult::TimedOut {
            return libc::ETIMEDOUT;
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn sem_wait(s: *mut sem_t) -> c_int {
    // SAFETY: the caller's semaphore.
    match unsafe { sem_ours(s) } {
        Some(w) => sem_result(sem_down(w, false, None)),
        // SAFETY: the caller's contract.
        None => unsafe { real::sem_wait(s) },
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
        // SAFETY: the caller's contract.
        None => unsafe { real::sem_timedwait(s, abs) },
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
        // SAFETY: the caller's contract.
        None => unsafe { real::sem_clockwait(s, clk, abs) },
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

#[no_mangle]
pub unsafe extern "C" fn __pthread_once(
    once: *mut c_int,
    init: Option<unsafe extern "C" fn()>,
) -> c_int {
    // SAFETY: forwarded.
    unsafe { pthread_once(once, init) }
}
