//! `SpinLock`: a lock for corun's few critical sections that are a handful
//! of loads and stores, taken and let go on the hot path of every
//! spawn+join (a task's join state: `Task::join`).
//!
//! A `std::sync::Mutex` lets go with a swap (it must learn whether a
//! waiter sleeps on the futex): a locked instruction, ~8 ns on this
//! machine's Xeon, paid twice per spawn+join (the joiner's registration
//! and the task's end). Nobody sleeps on this lock, so letting go is a
//! plain Release store; taking it is one compare-and-swap, as before.
//!
//! Contention is rare and short: the holder runs a few stores and never
//! parks, blocks or calls out while holding it. A taker that finds it
//! held spins a little, then gives its CPU back to the kernel
//! (`sched_yield`, raw: the hook would yield the coroutine, and the
//! holder may be another worker's thread the kernel preempted), marked
//! as corun's own wait for the watchdog (`OwnWait`), as a contended
//! `own_lock::lock` is.
//!
//! Like the `Mutex` it replaces, it is not for a signal handler (a handler
//! that interrupted the holder on its thread would spin for ever), and a
//! forked child finds it as the forking thread saw it (`force_unlock`
//! takes it back from a parent's thread). The signal registry's shards
//! (`sigdispatch.rs`), a hand-written spin lock of the same kind before,
//! are one too.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

use super::own_lock::OwnWait;

/// Spins before the first `sched_yield`.
const SPINS: u32 = 64;

pub struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a guard, and one guard exists
// at a time (the flag's Acquire/Release pair orders the accesses).
unsafe impl<T: Send> Sync for SpinLock<T> {}
// SAFETY: as above; moving the lock moves the value.
unsafe impl<T: Send> Send for SpinLock<T> {}

impl<T> SpinLock<T> {
    pub const fn new(value: T) -> Self {
        SpinLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    #[inline]
    pub fn lock(&self) -> SpinGuard<'_, T> {
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        SpinGuard { lock: self }
    }

    /// Lets go of the lock whoever holds it.
    ///
    /// # Safety
    /// No guard of it may be alive: for a forked child, whose only thread
    /// holds none, when the holder was one of the parent's other threads.
    pub unsafe fn force_unlock(&self) {
        // Only if held: a store to a free lock would copy its page in a
        // forked child all the same.
        crate::sys::ForkReset::reset_to(&self.locked, false);
    }

    #[cold]
    fn lock_contended(&self) {
        let mut spins = 0;
        let mut own = None;
        loop {
            while self.locked.load(Ordering::Relaxed) {
                if spins < SPINS {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    own.get_or_insert_with(OwnWait::enter);
                    // SAFETY: sched_yield takes no argument and touches no
                    // memory of ours.
                    unsafe { libc::syscall(libc::SYS_sched_yield) };
                }
            }
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
}

pub struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard is the only one (the flag is ours).
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above, and `&mut self` keeps the reference unique.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // Nobody sleeps on the lock: nothing to learn from a swap.
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn threads_that_share_it_lose_no_update() {
        let l = Arc::new(SpinLock::new(0u64));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for _ in 0..100_000 {
                        *l.lock() += 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*l.lock(), 400_000);
    }
}
