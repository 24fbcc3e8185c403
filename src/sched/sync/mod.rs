//! A futex that coroutines and native threads share: the parking primitive
//! under every pthread synchronisation object.
//!
//! # Mechanism
//!
//! Lock words live in the program's own memory (a `pthread_mutex_t`, a
//! `sem_t`...), so the waiter queues cannot: as in the kernel's futex and in
//! Go's `semtable`, they live in a fixed table of buckets hashed by the
//! word's address (a "parking lot"). The two operations are the futex ones:
//!
//! - `wait(word, expected, deadline)`: sleep if `*word == expected`, checked
//!   under the bucket lock, until woken or the deadline;
//! - `wake(word, n)`: wake up to `n` sleepers on `word`.
//!
//! Callers change the word first and wake second; a waiter compares under
//! the bucket lock, so a change that happens before the wake is either seen
//! by the comparison or its wake finds the waiter queued. No wake-up is lost.
//!
//! Who sleeps how:
//!
//! - a **coroutine** parks (its worker runs others) with its `Waiter` queued
//!   in the bucket. Whether it was woken or timed out is decided by queue
//!   membership under the bucket lock, exactly as the kernel decides for a
//!   futex: a wake removes the waiter from the queue and so is always
//!   consumed, even when the timer fired at the same moment. A mutex waiter
//!   that times out can therefore never swallow the wake meant for another.
//! - a **native thread** (a helper thread, a thread started before the
//!   runtime) sleeps in the kernel with a real `FUTEX_WAIT` on the same word.
//!   That is the protocol glibc's own locks speak, so an object a native
//!   thread began waiting on through glibc before the runtime started is
//!   still woken. Kernel sleepers are counted; `wake` makes the `FUTEX_WAKE`
//!   syscall only when some may exist and the lot did not satisfy it.
//!
//! Nothing here knows about libc objects: `hooks::pthread_sync` builds
//! mutexes, condition variables, rwlocks, barriers, once and semaphores on
//! these two calls, with the algorithms one builds on a futex.
//!
//! The same table serves the program's own futexes (`hooks::syscall`, for
//! `syscall(SYS_futex, ...)` from libstdc++ or Rust std): there a coroutine
//! parks here (`park_on`, with the waiter's FUTEX_WAIT_BITSET bits), every
//! wake looks here first (`wake_parked`, `requeue_parked`, `wake_two`) and
//! then makes the real kernel call for the rest, which reaches native
//! threads and other processes. A coroutine moved to another word by a
//! requeue learns its new word from a cell on its own stack (`Slot::at`),
//! so a timeout still finds its slot.
//!
//! Every wake first asks `PARKED` whether any coroutine sleeps in the table
//! at all: a waiter counts itself before it compares the word and a waker
//! reads the count after changing it (both sequentially consistent), so a
//! zero read means every future sleeper will see the new value.

mod later;
mod ops;
pub mod shared_watch;

pub use later::{run_later, wake_later};

pub use ops::{park_on_any, requeue_parked, wake_two, WAITV_MAX};

use std::sync::atomic::{fence, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::fdtable::lock;
use super::park::{current_id, in_coroutine, park, Woken};
use super::waiter::Waiter;

/// When a wait ends at the latest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deadline {
    /// CLOCK_MONOTONIC, in ns.
    Monotonic(u64),
    /// CLOCK_REALTIME, in ns since the epoch. A coroutine converts it to the
    /// monotonic clock when it starts waiting (a later jump of the wall
    /// clock is not followed); a native thread gives it to the kernel as is.
    Realtime(u64),
}

/// How a wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitResult {
    /// Woken by `wake` (or spuriously: callers re-check their condition).
    Woken,
    /// The word did not hold the expected value: no sleep happened.
    Mismatch,
    /// The deadline passed.
    TimedOut,
}

const BUCKETS: usize = 1024;

/// The bits of a waiter that every wake matches (FUTEX_BITSET_MATCH_ANY).
pub const MATCH_ANY: u32 = u32::MAX;

/// One sleeping coroutine: the word it waits on, its FUTEX_WAIT_BITSET
/// bits, and how to wake it.
struct Slot {
    addr: usize,
    bits: u32,
    /// The waiter's own record of `addr`, on its stack: a requeue writes the
    /// new word there (under both buckets' locks), so a waiter that times
    /// out knows which bucket holds its slot now.
    at: *const AtomicUsize,
    waiter: Waiter,
}

// SAFETY: `at` points into the stack of a parked coroutine that stays
// parked (its frame alive) while the slot is in the table; it is only
// written under the lock of the bucket holding the slot, and read by its
// owner under that same lock.
unsafe impl Send for Slot {}

/// The sleepers of the words that hash to one bucket, in arrival order.
///
/// Nothing is allocated or freed while a bucket is locked: the program's
/// `malloc` may itself lock pthread mutexes (jemalloc, tcmalloc do), whose
/// contended path comes back here, possibly to this very bucket.
static LOT: [crate::sys::ForkMutex<Vec<Slot>>; BUCKETS] =
    [const { crate::sys::ForkMutex::new(Vec::new()) }; BUCKETS];

/// Native threads that are, or may be about to be, in a kernel futex wait.
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
static KERNEL_SLEEPERS: AtomicUsize = AtomicUsize::new(0);

/// Coroutines that are, or may be about to be, queued in the table.
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
static PARKED: AtomicUsize = AtomicUsize::new(0);

/// Whether some coroutine may sleep in the table. A waker calls it after
/// changing the word: false means no wake-up can be owed to the table.
#[inline]
pub fn any_parked() -> bool {
    fence(Ordering::SeqCst);
    PARKED.load(Ordering::SeqCst) != 0
}

/// Wakers take sleepers out in batches of this many (their waiters are
/// woken with the lock released, and no allocation happens under it).
const BATCH: usize = 32;

/// Sleepers taken out of a bucket, to wake once it is unlocked.
struct Batch {
    w: [Option<Waiter>; BATCH],
    n: usize,
}

impl Batch {
    fn new() -> Batch {
        Batch {
            w: [const { None }; BATCH],
            n: 0,
        }
    }

    /// Moves up to `max` sleepers of `addr` matching `bits` out of `g`, in
    /// arrival order, as far as the batch has room. Returns how many. A
    /// slot whose coroutine is already woken (its timer fired, or a wake
    /// reached another of its FUTEX_WAITV slots) is left for its owner to
    /// take back, and not counted: the wake goes to someone still asleep.
    fn take(&mut self, g: &mut Vec<Slot>, addr: usize, bits: u32, max: usize) -> usize {
        let room = max.min(BATCH - self.n);
        let mut k = 0;
        for s in g
            .extract_if(.., |s| {
                s.addr == addr && s.bits & bits != 0 && s.waiter.is_live()
            })
            .take(room)
        {
            self.w[self.n] = Some(s.waiter);
            self.n += 1;
            k += 1;
        }
        k
    }

    fn full(&self) -> bool {
        self.n == BATCH
    }

    /// Wakes everyone taken (call with no bucket locked).
    fn wake(&mut self) {
        for w in self.w[..self.n].iter_mut() {
            if let Some(w) = w.take() {
                w.wake();
            }
        }
        self.n = 0;
    }
}

fn bucket(addr: usize) -> &'static Mutex<Vec<Slot>> {
    let h = (addr as u64 >> 2).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54;
    LOT[h as usize % BUCKETS].get()
}

/// Realtime clock in ns since the epoch.
pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    crate::sys::timespec_ns(&ts)
}

impl Deadline {
    /// The same instant on the monotonic clock.
    pub fn monotonic(self) -> u64 {
        match self {
            Deadline::Monotonic(d) => d,
            Deadline::Realtime(d) => {
                let (now_r, now_m) = (realtime_ns(), crate::sys::now_ns());
                now_m.saturating_add(d.saturating_sub(now_r))
            }
        }
    }

    /// Whether the deadline has passed.
    pub fn passed(self) -> bool {
        match self {
            Deadline::Monotonic(d) => crate::sys::now_ns() >= d,
            Deadline::Realtime(d) => realtime_ns() >= d,
        }
    }
}

/// Sleeps while `*word == expected`; see the module comment. With
/// cancellation asynchronous, a request ends the wait and acts here
/// (`park_on`).
pub fn wait(word: &AtomicU32, expected: u32, deadline: Option<Deadline>) -> WaitResult {
    let r = wait_then_act(word, expected, deadline);
    if let Some(t) = super::park::current() {
        super::identity::async_cancel_point(&t.ident);
    }
    r
}

/// `wait` for a caller with a count to put back first: an asynchronous
/// cancellation ends the wait (`WaitResult::Woken`) but does not act; the
/// caller acts with `identity::async_cancel_point`.
pub fn wait_then_act(word: &AtomicU32, expected: u32, deadline: Option<Deadline>) -> WaitResult {
    if deadline.is_some_and(|d| d.passed()) {
        return if word.load(Ordering::SeqCst) == expected {
            WaitResult::TimedOut
        } else {
            WaitResult::Mismatch
        };
    }
    if in_coroutine() {
        park_on_as(false, word, expected, MATCH_ANY, deadline)
    } else {
        wait_kernel(word, expected, deadline)
    }
}

/// `wait` at a cancellation point (a condition wait, a semaphore wait, a
/// join): a due cancellation acts before the wait, and ends it early; the
/// caller then puts its object right (a condition wait relocks its mutex)
/// and acts with `identity::cancel_point`. A waiter that was woken as it
/// was cancelled passes the wake on, as glibc's condition variables do, so
/// no signal is lost with it.
pub fn wait_cancelable(word: &AtomicU32, expected: u32, deadline: Option<Deadline>) -> WaitResult {
    let Some(t) = super::park::current() else {
        return wait(word, expected, deadline);
    };
    super::identity::cancel_point(&t.ident);
    if deadline.is_some_and(|d| d.passed()) || !in_coroutine() {
        return wait(word, expected, deadline);
    }
    park_on_as(true, word, expected, MATCH_ANY, deadline)
}

/// Locks bucket `b` with room for `extra` more slots, growing it (if
/// needed) with the lock released.
fn lock_with_room(b: &'static Mutex<Vec<Slot>>, extra: usize) -> MutexGuard<'static, Vec<Slot>> {
    loop {
        let g = lock(b);
        if g.capacity() - g.len() >= extra {
            return g;
        }
        let want = (g.capacity() * 2).max(g.len() + extra).max(8);
        drop(g);
        let mut fresh: Vec<Slot> = Vec::with_capacity(want);
        let mut g = lock(b);
        if g.capacity() - g.len() >= extra || g.len() > want {
            drop(g);
            drop(fresh);
            continue;
        }
        // `fresh` holds more than `g` has: moving does not allocate.
        fresh.extend(g.drain(..));
        std::mem::swap(&mut *g, &mut fresh);
        drop(g);
        // The old buffer is freed here, unlocked.
        drop(fresh);
    }
}

/// Parks the calling coroutine while `*word == expected` (checked under
/// the bucket lock) until a wake whose bits meet `bits`, or the deadline.
/// Must be called from a coroutine. Not a cancellation point, but with
/// cancellation asynchronous a request ends the wait and acts here, its
/// slot taken back (a mutex lock, a program's futex: uWSGI's reload
/// cancels threads that wait for a lock so).
pub fn park_on(
    word: &AtomicU32,
    expected: u32,
    bits: u32,
    deadline: Option<Deadline>,
) -> WaitResult {
    let r = park_on_as(false, word, expected, bits, deadline);
    if let Some(t) = super::park::current() {
        super::identity::async_cancel_point(&t.ident);
    }
    r
}

/// `park_on`, at a cancellation point or not (`park::park_cancelable`).
fn park_on_as(
    cancelable: bool,
    word: &AtomicU32,
    expected: u32,
    bits: u32,
    deadline: Option<Deadline>,
) -> WaitResult {
    let addr = word.as_ptr() as usize;
    super::waitdesc::describe_default(super::waitdesc::Cause::Futex, addr as u64);
    let at = AtomicUsize::new(addr);
    let me = current_id();
    let mut my_token = 0;
    PARKED.fetch_add(1, Ordering::SeqCst);
    let woken = super::park::park_as(
        cancelable,
        true,
        |w| {
            let mut g = lock_with_room(bucket(addr), 1);
            if word.load(Ordering::SeqCst) != expected {
                drop(g);
                return false;
            }
            if let Waiter::Task { token, .. } = &w {
                my_token = *token;
            }
            g.push(Slot {
                addr,
                bits,
                at: &at,
                waiter: w,
            });
            true
        },
        deadline.map(Deadline::monotonic),
    );
    let r = match woken {
        Woken::NotParked => WaitResult::Mismatch,
        Woken::Event => WaitResult::Woken,
        Woken::TimedOut | Woken::Signal => {
            // Still queued: nobody woke us, the timeout stands (or a signal
            // handler ran: a spurious wake-up, and the slot must not stay
            // to swallow a wake meant for another). Gone: a wake took us
            // out of the queue, and it must count as ours. A requeue
            // may have moved the slot: `at` names its word, read under the
            // lock of the bucket that held it.
            match take_slot_back(addr, &at, me, my_token) {
                Ok(()) if woken == Woken::Signal => WaitResult::Woken,
                Ok(()) => WaitResult::TimedOut,
                Err(_) => WaitResult::Woken,
            }
        }
    };
    // Ended by a cancellation that will act (at a cancellation point, or
    // anywhere when asynchronous): the slot must not outlive the frame
    // that holds `at`, nor a wake it took be lost with the thread.
    let r = match super::park::current() {
        Some(t) if (cancelable || t.ident.cancel_async()) && t.ident.cancel_due() => {
            match woken {
                Woken::Event => leave_cancelled(word, bits, &at, me, my_token),
                // The timer fired but a wake had taken the slot: pass it on.
                Woken::TimedOut if r == WaitResult::Woken => pass_on(word, bits, addr),
                _ => {}
            }
            WaitResult::Woken
        }
        _ => r,
    };
    PARKED.fetch_sub(1, Ordering::SeqCst);
    r
}

/// A waiter about to act on a cancellation takes its slot back (following
/// a requeue through `at`); if a wake took it first, the wake is passed
/// on, as glibc's condition variables do, so no waker loses it.
fn leave_cancelled(word: &AtomicU32, bits: u32, at: &AtomicUsize, me: u64, token: u64) {
    if let Err(cur) = take_slot_back(word.as_ptr() as usize, at, me, token) {
        pass_on(word, bits, cur);
    }
}

/// Removes the slot of park `token` of task `me`, queued on `addr` or
/// wherever a requeue moved it (`at` names its word, read under the lock
/// of the bucket that held it). Err(word): no slot is left, a wake took
/// it out of the queue on `word`, and that wake was ours.
fn take_slot_back(addr: usize, at: &AtomicUsize, me: u64, token: u64) -> Result<(), usize> {
    let mut cur = addr;
    loop {
        let mut g = lock(bucket(cur));
        if let Some(i) = g
            .iter()
            .position(|s| s.addr == cur && s.waiter.is_park(me, token))
        {
            let slot = g.remove(i);
            drop(g);
            drop(slot);
            return Ok(());
        }
        let next = at.load(Ordering::Acquire);
        drop(g);
        if next == cur {
            return Err(cur);
        }
        cur = next;
    }
}

/// Passes a wake a cancelled waiter took (on `cur`, `word` unless a
/// requeue moved it) to the next waiter.
fn pass_on(word: &AtomicU32, bits: u32, cur: usize) {
    if cur == word.as_ptr() as usize && bits == MATCH_ANY {
        wake(word, 1);
    } else {
        wake_parked(cur, 1, bits);
    }
}

fn wait_kernel(word: &AtomicU32, expected: u32, deadline: Option<Deadline>) -> WaitResult {
    KERNEL_SLEEPERS.fetch_add(1, Ordering::SeqCst);
    let (ts, flags) = match deadline {
        None => (None, 0),
        Some(Deadline::Monotonic(d)) => (Some(crate::sys::ns_timespec(d)), 0),
        Some(Deadline::Realtime(d)) => {
            (Some(crate::sys::ns_timespec(d)), libc::FUTEX_CLOCK_REALTIME)
        }
    };
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: FUTEX_WAIT_BITSET on a live AtomicU32 with an absolute timeout
    // (or NULL); the kernel compares the word atomically.
    let r = unsafe {
        crate::sys::real::syscall!(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG | flags,
            expected,
            tsp,
            std::ptr::null::<u32>(),
            libc::FUTEX_BITSET_MATCH_ANY,
        )
    };
    let err = crate::sys::errno();
    KERNEL_SLEEPERS.fetch_sub(1, Ordering::SeqCst);
    if r == 0 {
        return WaitResult::Woken;
    }
    match err {
        libc::ETIMEDOUT => WaitResult::TimedOut,
        libc::EAGAIN => WaitResult::Mismatch,
        _ => WaitResult::Woken,
    }
}

/// Wakes up to `n` sleepers on `word` (coroutines first, then threads
/// sleeping in the kernel). Returns the number of coroutines woken.
pub fn wake(word: &AtomicU32, n: usize) -> usize {
    let k = wake_parked(word.as_ptr() as usize, n, MATCH_ANY);
    if k < n {
        fence(Ordering::SeqCst);
        if KERNEL_SLEEPERS.load(Ordering::SeqCst) != 0 {
            let m = (n - k).min(i32::MAX as usize) as i32;
            // SAFETY: FUTEX_WAKE on a live word; no memory is written.
            unsafe {
                crate::sys::real::syscall!(
                    libc::SYS_futex,
                    word.as_ptr(),
                    libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                    m,
                )
            };
        }
    }
    k
}

/// Wakes up to `n` coroutines parked on the word at `addr` whose bits meet
/// `bits`, oldest first; returns how many. Threads in the kernel are the
/// caller's business.
pub fn wake_parked(addr: usize, n: usize, bits: u32) -> usize {
    if n == 0 || !any_parked() {
        return 0;
    }
    // Every sleeper that saw the old value is queued by now (compare and
    // queue happen under the bucket lock, after the caller changed the
    // word): take them out a batch at a time.
    let b = bucket(addr);
    let mut batch = Batch::new();
    let mut k = 0;
    loop {
        let got = batch.take(&mut lock(b), addr, bits, n - k);
        let more = batch.full();
        batch.wake();
        k += got;
        if k >= n || !more {
            return k;
        }
    }
}

/// In a forked child: the table's sleepers are the parent's coroutines,
/// which do not exist here; they are forgotten (not dropped: nothing of
/// theirs may run), and nobody sleeps any more. A bucket some other thread
/// of the parent held at the fork stays as it is (that thread is gone).
pub fn after_fork_child() {
    // No coroutine was queued at the fork: every bucket is empty, and
    // visiting them would only fault their pages in (a forked child pays
    // for what it uses).
    if PARKED.load(Ordering::SeqCst) == 0 {
        crate::sys::ForkReset::reset_to(&KERNEL_SLEEPERS, 0);
        return;
    }
    for b in LOT.iter() {
        // A bucket locked at the fork by another thread would stay locked.
        b.unlock_after_fork(Vec::new);
        if let Ok(mut g) = b.get().try_lock() {
            for s in g.drain(..) {
                std::mem::forget(s);
            }
        }
    }
    PARKED.store(0, Ordering::SeqCst);
    KERNEL_SLEEPERS.store(0, Ordering::SeqCst);
}

/// Wakes every sleeper on `word`.
pub fn wake_all(word: &AtomicU32) -> usize {
    wake(word, usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn mismatch_does_not_sleep() {
        let w = AtomicU32::new(1);
        assert_eq!(wait(&w, 0, None), WaitResult::Mismatch);
    }

    #[test]
    fn thread_timeout_monotonic_and_realtime() {
        let w = AtomicU32::new(0);
        let t0 = crate::sys::now_ns();
        let d = Deadline::Monotonic(t0 + 5_000_000);
        assert_eq!(wait(&w, 0, Some(d)), WaitResult::TimedOut);
        assert!(crate::sys::now_ns() >= t0 + 5_000_000);
        let d = Deadline::Realtime(realtime_ns() + 5_000_000);
        assert_eq!(wait(&w, 0, Some(d)), WaitResult::TimedOut);
        assert!(d.passed());
    }

    #[test]
    fn thread_wake() {
        let w = Arc::new(AtomicU32::new(0));
        let w2 = w.clone();
        let h = std::thread::spawn(move || {
            while w2.load(Ordering::SeqCst) == 0 {
                wait(&w2, 0, None);
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(10));
        w.store(1, Ordering::SeqCst);
        wake_all(&w);
        h.join().unwrap();
    }

    #[test]
    fn realtime_converts_to_monotonic() {
        let m = Deadline::Realtime(realtime_ns() + 1_000_000_000).monotonic();
        let now = crate::sys::now_ns();
        assert!(m > now + 900_000_000 && m <= now + 1_000_000_000);
    }
}
