//! What a parked coroutine waits on, for `corun dump` and the park counts
//! of `CORUN_STATS` (docs/ARCHITECTURE.md §11).
//!
//! A wait says what it is just before it parks (`describe`: a cause and
//! an object, an fd, an address, a task id, a deadline); the general waits
//! underneath (the futex table, corun's channels) only fill in a cause when
//! nothing more precise was said (`describe_default`). `park_as` stamps
//! the time, counts the park by cause on its worker (`stats`), and clears
//! the description when the park ends, parked or not, so a description
//! never outlives its wait.
//!
//! Only the task itself writes its description (Relaxed stores, no
//! read-modify-write); the dump reads it from another thread and may see a
//! wait that is just ending: a snapshot, not a synchronised view.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};

use super::park::current;

/// Why a coroutine parks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Cause {
    /// Not parked (or not described yet).
    None = 0,
    /// An fd to become readable (object: the fd).
    FdRead,
    /// An fd to become writable (object: the fd).
    FdWrite,
    /// Any of several fds: poll, select (object: the first fd).
    Poll,
    /// A sleep or a timed pause (object: the deadline, monotonic ns).
    Timer,
    /// A pthread mutex (object: its address).
    Mutex,
    /// A condition variable (object: its address).
    Cond,
    /// A read-write lock (object: its address).
    RwLock,
    /// A semaphore (object: its address).
    Sem,
    /// A barrier (object: its address).
    Barrier,
    /// A `pthread_once` run by another thread (object: its address).
    Once,
    /// A futex word: `syscall(SYS_futex)`, corun's own objects (object:
    /// its address).
    Futex,
    /// A thread's end (object: its coroutine id; 0 for every thread).
    Join,
    /// A call handed to the blocking pool.
    Pool,
    /// A corun channel or select.
    Channel,
    /// A signal (sigwait, sigsuspend, pause).
    Signal,
    /// Anything else.
    Other,
}

/// Number of causes (the stats' per-cause array).
pub const CAUSES: usize = Cause::Other as usize + 1;

const ALL: [Cause; CAUSES] = [
    Cause::None,
    Cause::FdRead,
    Cause::FdWrite,
    Cause::Poll,
    Cause::Timer,
    Cause::Mutex,
    Cause::Cond,
    Cause::RwLock,
    Cause::Sem,
    Cause::Barrier,
    Cause::Once,
    Cause::Futex,
    Cause::Join,
    Cause::Pool,
    Cause::Channel,
    Cause::Signal,
    Cause::Other,
];

impl Cause {
    pub fn from_u8(v: u8) -> Cause {
        ALL.get(v as usize).copied().unwrap_or(Cause::Other)
    }

    pub fn all() -> &'static [Cause] {
        &ALL
    }

    /// The cause's name in the stats and the dump.
    pub fn name(self) -> &'static str {
        match self {
            Cause::None => "none",
            Cause::FdRead => "fd read",
            Cause::FdWrite => "fd write",
            Cause::Poll => "poll",
            Cause::Timer => "timer",
            Cause::Mutex => "mutex",
            Cause::Cond => "cond",
            Cause::RwLock => "rwlock",
            Cause::Sem => "semaphore",
            Cause::Barrier => "barrier",
            Cause::Once => "once",
            Cause::Futex => "futex",
            Cause::Join => "join",
            Cause::Pool => "blocking pool",
            Cause::Channel => "channel",
            Cause::Signal => "signal",
            Cause::Other => "other",
        }
    }
}

/// A task's current wait.
#[derive(Default)]
pub struct WaitDesc {
    cause: AtomicU8,
    object: AtomicU64,
    /// When the park began (CLOCK_MONOTONIC_COARSE, ns).
    since: AtomicU64,
}

impl WaitDesc {
    /// (cause, object, since) as last written.
    pub fn get(&self) -> (Cause, u64, u64) {
        (
            Cause::from_u8(self.cause.load(Relaxed)),
            self.object.load(Relaxed),
            self.since.load(Relaxed),
        )
    }

    /// The addresses of the cause and object words (the debugger's
    /// registry, `debugreg.rs`).
    pub(super) fn addrs(&self) -> (usize, usize) {
        (self.cause.as_ptr() as usize, self.object.as_ptr() as usize)
    }

    fn set(&self, cause: Cause, object: u64) {
        self.cause.store(cause as u8, Relaxed);
        self.object.store(object, Relaxed);
    }

    /// The park is about to suspend: stamps the time, and returns the
    /// cause (Other if the wait said nothing).
    pub(super) fn parking(&self) -> Cause {
        let mut c = Cause::from_u8(self.cause.load(Relaxed));
        if c == Cause::None {
            c = Cause::Other;
            self.cause.store(c as u8, Relaxed);
        }
        self.since.store(coarse_now_ns(), Relaxed);
        c
    }

    /// The park ended.
    pub(super) fn clear(&self) {
        self.cause.store(Cause::None as u8, Relaxed);
    }
}

/// The running coroutine is about to wait on `object` for `cause`.
#[inline]
pub fn describe(cause: Cause, object: u64) {
    if let Some(t) = current() {
        t.wait.set(cause, object);
    }
}

/// `describe`, unless the wait was described already (by the caller of a
/// general wait).
#[inline]
pub fn describe_default(cause: Cause, object: u64) {
    if let Some(t) = current() {
        if t.wait.cause.load(Relaxed) == Cause::None as u8 {
            t.wait.set(cause, object);
        }
    }
}

/// CLOCK_MONOTONIC_COARSE: a vDSO read of the last tick, no TSC (a few ns);
/// a park's start needs no better than the tick.
pub fn coarse_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    crate::sys::timespec_ns(&ts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_round_trip() {
        for (i, c) in Cause::all().iter().enumerate() {
            assert_eq!(*c as usize, i);
            assert_eq!(Cause::from_u8(i as u8), *c);
        }
        assert_eq!(Cause::from_u8(200), Cause::Other);
    }

    #[test]
    fn undescribed_park_is_other_and_clears() {
        let d = WaitDesc::default();
        assert_eq!(d.parking(), Cause::Other);
        d.clear();
        d.set(Cause::FdRead, 7);
        assert_eq!(d.parking(), Cause::FdRead);
        assert_eq!(d.get().1, 7);
        d.clear();
        assert_eq!(d.get().0, Cause::None);
    }
}
