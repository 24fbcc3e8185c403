//! corun's own locks, and the worker's mark while its thread sleeps on
//! corun's account.
//!
//! Every `std::sync::Mutex` of corun's is taken through `lock`: poison is
//! ignored (a panic aborts the process anyway), and the contended path
//! marks the worker (`OwnWait`) so that the watchdog does not take the
//! wait for a stall. The uncontended path is one `try_lock`, as `lock`'s
//! own fast path would be.

use std::sync::atomic::Ordering;
use std::sync::Mutex;

use super::worker::current_worker;
use super::worker::Worker;

/// Locks ignoring poison (a panic aborts the process anyway).
#[inline]
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.try_lock() {
        Ok(g) => g,
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => lock_contended(m),
    }
}

/// Waits for a lock another thread holds, the worker marked meanwhile as
/// sleeping on corun's own account (`OwnWait`).
#[cold]
fn lock_contended<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    let _own = OwnWait::enter();
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// While alive, the calling worker's thread may sleep in the kernel on
/// corun's own account: waiting for a lock of corun's another thread holds
/// (the holder runs, or is itself a stalled worker, reported as such), or
/// for the address space's lock in the `mmap` of a stack slab. The
/// watchdog judges a worker asleep in the kernel blocked "where corun
/// cannot see"; on a loaded machine, with the lock's holder descheduled,
/// such a sleep lasted over 100 ms and was reported (`watchdog.rs`).
pub(crate) struct OwnWait(Option<&'static Worker>);

impl OwnWait {
    #[inline]
    pub(crate) fn enter() -> Self {
        let w = current_worker();
        if let Some(w) = w {
            // Only this thread writes it (a signal handler that nests
            // restores it before the interrupted code goes on).
            let n = w.own_wait.load(Ordering::Relaxed);
            w.own_wait.store(n + 1, Ordering::Relaxed);
        }
        OwnWait(w)
    }
}

impl Drop for OwnWait {
    #[inline]
    fn drop(&mut self) {
        if let Some(w) = self.0 {
            let n = w.own_wait.load(Ordering::Relaxed);
            w.own_wait.store(n.saturating_sub(1), Ordering::Relaxed);
        }
    }
}
