//! A task injector (crossbeam's multi-producer queue) that a forked child
//! can replace.
//!
//! A push into an `Injector` reserves a slot (moves the tail), then writes
//! the task, then marks the slot written; a steal of that slot spins until
//! the mark appears. A `fork` made while another worker's thread was
//! between the two leaves the child a slot that nobody will ever mark: the
//! thread that reserved it does not exist there. Draining the queue in the
//! child (`fork::keep_only`) spun for ever in `sched_yield`, with no alarm
//! yet set to end it: fork_storm hung about one run in 100 (300 forks
//! beside threads that create and wake others, so push to other workers'
//! queues).
//!
//! The child has nothing to take from these queues (they hold the parent's
//! coroutines, which are never run there), so it does not read them: each
//! is replaced by an empty one, and the old one is leaked with what it held.

use std::cell::UnsafeCell;
use std::ops::Deref;

use crossbeam_deque::Injector;

use super::task::TaskRef;

pub struct ForkInjector(UnsafeCell<Injector<TaskRef>>);

// SAFETY: shared access goes through `Deref` to the `Injector`, which is
// Sync and Send for Send tasks; the cell is written only by
// `reset_after_fork`, whose caller is the process's only thread.
unsafe impl Sync for ForkInjector {}
// SAFETY: as above.
unsafe impl Send for ForkInjector {}

impl ForkInjector {
    pub fn new() -> Self {
        Self(UnsafeCell::new(Injector::new()))
    }

    /// Replaces the queue by an empty one, leaking the old queue and the
    /// tasks in it (a half-pushed slot included) without reading them.
    ///
    /// # Safety
    /// The caller is the only thread of the process (a forked child, right
    /// after the fork) and keeps no reference to the old queue.
    pub unsafe fn reset_after_fork(&self) {
        // An empty queue (head and tail agree: no slot reserved, so none
        // half-pushed) is kept: a new one would allocate and write the
        // page holding this one, which the child would copy
        // (`sys::ForkReset`). A steal caught half-way leaves a slot
        // behind the head that nobody reads again (its block is leaked).
        // SAFETY: as below: no other thread, no reference kept.
        if unsafe { &*self.0.get() }.is_empty() {
            return;
        }
        // SAFETY: no other thread exists to use the queue meanwhile, and no
        // reference into it outlives this call (the caller's contract).
        let old = unsafe { std::ptr::replace(self.0.get(), Injector::new()) };
        std::mem::forget(old);
    }
}

impl Default for ForkInjector {
    fn default() -> Self {
        Self::new()
    }
}

impl Deref for ForkInjector {
    type Target = Injector<TaskRef>;

    fn deref(&self) -> &Injector<TaskRef> {
        // SAFETY: the cell is replaced only when no other reference can
        // exist (`reset_after_fork`).
        unsafe { &*self.0.get() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::task::Task;
    use crate::sched::worker::steal_one;

    fn task() -> TaskRef {
        Task::new(crate::sched::Entry::Rust(Box::new(std::ptr::null_mut)), 0)
    }

    #[test]
    fn reset_empties_and_the_queue_works_after() {
        let q = ForkInjector::new();
        for _ in 0..3 {
            q.push(task());
        }
        assert_eq!(q.len(), 3);
        // SAFETY: this test's thread is the only one using `q`.
        unsafe { q.reset_after_fork() };
        assert!(q.is_empty());
        assert!(steal_one(&q).is_none());
        q.push(task());
        assert!(steal_one(&q).is_some());
        assert!(steal_one(&q).is_none());
    }
}
