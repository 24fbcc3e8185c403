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

/// One sleeping coroutine: the word it waits on, and how to wake it.
struct Slot {
    addr: usize,
    waiter: Waiter,
}

/// The sleepers of the words that hash to one bucket, in arrival order.
///
/// Nothing is allocated or freed while a bucket is locked: the program's
/// `malloc` may itself lock pthread mutexes (jemalloc, tcmalloc do), whose
/// contended path comes back here, possibly to this very bucket.
static LOT: [Mutex<Vec<Slot>>; BUCKETS] = [const { Mutex::new(Vec::new()) }; BUCKETS];

/// Native threads that are, or may be about to be, in a kernel futex wait.
static KERNEL_SLEEPERS: AtomicUsize = AtomicUsize::new(0);

fn bucket(addr: usize) -> &'static Mutex<Vec<Slot>> {
    let h = (addr as u64 >> 2).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54;
    &LOT[h as usize % BUCKETS]
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

/// Sleeps while `*word == expected`; see the module comment.
pub fn wait(word: &AtomicU32, expected: u32, deadline: Option<Deadline>) -> WaitResult {
    if deadline.is_some_and(|d| d.passed()) {
        return if word.load(Ordering::SeqCst) == expected {
            WaitResult::TimedOut
        } else {
            WaitResult::Mismatch
        };
    }
    if in_coroutine() {
        wait_coroutine(word, expected, deadline)
    } else {
        wait_kernel(word, expected, deadline)
    }
}

/// Locks bucket `b` with room for one more slot, growing it (if needed)
/// with the lock released.
fn lock_with_room(b: &'static Mutex<Vec<Slot>>) -> MutexGuard<'static, Vec<Slot>> {
    loop {
        let g = lock(b);
        if g.len() < g.capacity() {
            return g;
        }
        let want = (g.capacity() * 2).max(8);
        drop(g);
        let mut fresh: Vec<Slot> = Vec::with_capacity(want);
        let mut g = lock(b);
        if g.len() < g.capacity() {
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

fn wait_coroutine(word: &AtomicU32, expected: u32, deadline: Option<Deadline>) -> WaitResult {
    let addr = word.as_ptr() as usize;
    let b = bucket(addr);
    let me = current_id();
    let mut my_token = 0;
    let woken = park(
        |w| {
            let mut g = lock_with_room(b);
            if word.load(Ordering::SeqCst) != expected {
                drop(g);
                return false;
            }
            if let Waiter::Task { token, .. } = &w {
                my_token = *token;
            }
            g.push(Slot { addr, waiter: w });
            true
        },
        deadline.map(Deadline::monotonic),
    );
    match woken {
        Woken::NotParked => WaitResult::Mismatch,
        Woken::Event => WaitResult::Woken,
        Woken::TimedOut | Woken::Signal => {
            // Still queued: nobody woke us, the timeout stands (or a signal
            // handler ran: a spurious wake-up, and the slot must not stay
            // to swallow a wake meant for another). Gone: a wake took us
            // out of the queue, and it must count as ours.
            let mut g = lock(b);
            let Some(i) = g
                .iter()
                .position(|s| s.addr == addr && s.waiter.is_park(me, my_token))
            else {
                return WaitResult::Woken;
            };
            let slot = g.remove(i);
            drop(g);
            drop(slot);
            if woken == Woken::Signal {
                WaitResult::Woken
            } else {
                WaitResult::TimedOut
            }
        }
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
        libc::syscall(
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
    let addr = word.as_ptr() as usize;
    let b = bucket(addr);
    let mut k = 0;
    if n == 1 {
        let slot = {
            let mut g = lock(b);
            g.iter().position(|s| s.addr == addr).map(|i| g.remove(i))
        };
        if let Some(s) = slot {
            s.waiter.wake();
            k = 1;
        }
    } else {
        // Every sleeper that saw the old value is queued by now (compare and
        // queue happen under the bucket lock, after the caller changed the
        // word): count them, make room unlocked, take them out.
        let count = lock(b).iter().filter(|s| s.addr == addr).count();
        if count != 0 {
            let room = count.min(n);
            let mut out: Vec<Waiter> = Vec::with_capacity(room);
            {
                let mut g = lock(b);
                out.extend(
                    g.extract_if(.., |s| s.addr == addr)
                        .take(room)
                        .map(|s| s.waiter),
                );
            }
            k = out.len();
            for w in out {
                w.wake();
            }
        }
    }
    if k < n {
        fence(Ordering::SeqCst);
        if KERNEL_SLEEPERS.load(Ordering::SeqCst) != 0 {
            let m = (n - k).min(i32::MAX as usize) as i32;
            // SAFETY: FUTEX_WAKE on a live word; no memory is written.
            unsafe {
                libc::syscall(
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

/// Wakes every sleeper on `word`.
pub fn wake_all(word: &AtomicU32) -> usize {
    wake(word, usize::MAX)
}

/// Words to wake, posted from signal handlers (0: free slot).
static LATER: [AtomicUsize; 256] = [const { AtomicUsize::new(0) }; 256];

/// `wake` for a signal handler (`sem_post` is async-signal-safe): the
/// handler may have interrupted this very thread holding a bucket lock, so
/// it only notes the word in a fixed table (no lock, no allocation) and a
/// worker wakes every sleeper on it at its next pass (sleepers re-check
/// their word, so waking all of them is never wrong). Falls back to
/// `wake_all` when the table is full of other words.
pub fn wake_later(word: &AtomicU32) {
    let a = word.as_ptr() as usize;
    let mut placed = false;
    for s in &LATER {
        let cur = s.load(Ordering::Acquire);
        if cur == a
            || (cur == 0
                && s.compare_exchange(0, a, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok())
        {
            placed = true;
            break;
        }
    }
    if placed {
        super::sigdispatch::request_work();
    } else {
        wake_all(word);
    }
}

/// Makes the wake-ups noted by `wake_later` (a worker, normal context).
pub fn run_later() {
    for s in &LATER {
        if s.load(Ordering::Relaxed) == 0 {
            continue;
        }
        let a = s.swap(0, Ordering::AcqRel);
        if a != 0 {
            // SAFETY: the address of an AtomicU32 a program's sem_post
            // named: a semaphore in use is alive (destroying one that a
            // handler still posts is undefined natively too).
            wake_all(unsafe { &*(a as *const AtomicU32) });
        }
    }
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
