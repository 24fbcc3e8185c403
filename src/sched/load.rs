//! A worker's load: the live tasks homed on it (placement, `alone`, the
//! preemption monitor, the watchdog), kept as two counters by who writes
//! them.
//!
//! The worker's own thread adds a task it spawns locally and removes each
//! task that ends there: a fork-join loop did both on every spawn+join,
//! and as one `AtomicUsize` each was a locked read-modify-write (two of
//! the 31 locked instructions of a spawn+join, ~8 ns each on this
//! machine's Xeon, where they were most of the wall time: perf placed the
//! samples just after the locked instructions). The owner's changes are
//! now a load and a store of `own`, which only its thread writes; other
//! threads (a spawn placing a task here, a join or a thief taking one
//! away, a shed) keep their read-modify-writes, on `remote`.
//!
//! The load is the sum of the two, read with two Relaxed loads: as
//! before, a reader on another thread may see a count a change or two
//! old, and now also the two halves at slightly different moments; the
//! sum is taken as signed and floored at 0, so a task counted away on one
//! half before it is seen arriving on the other reads as 0, not as 2^64.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

#[derive(Default)]
pub struct Load {
    /// Written by the worker's own thread only (wrapping).
    own: AtomicUsize,
    /// Written by the other threads, with read-modify-writes (wrapping).
    remote: AtomicUsize,
}

impl Load {
    /// The live tasks homed on the worker.
    #[inline]
    pub fn get(&self) -> usize {
        let sum = self
            .own
            .load(Relaxed)
            .wrapping_add(self.remote.load(Relaxed));
        (sum as isize).max(0) as usize
    }

    /// `n` more, from the worker's own thread: no other thread writes
    /// `own`, so a plain load and store lose nothing.
    #[inline]
    pub(super) fn add_own(&self, n: usize) {
        self.own
            .store(self.own.load(Relaxed).wrapping_add(n), Relaxed);
    }

    /// `n` fewer, from the worker's own thread.
    #[inline]
    pub(super) fn sub_own(&self, n: usize) {
        self.own
            .store(self.own.load(Relaxed).wrapping_sub(n), Relaxed);
    }

    /// `n` more, from any thread.
    pub(super) fn add(&self, n: usize) {
        self.remote.fetch_add(n, Relaxed);
    }

    /// `n` fewer, from any thread.
    pub(super) fn sub(&self, n: usize) {
        self.remote.fetch_sub(n, Relaxed);
    }

    /// Sets the count (a forked child's only worker, on its only thread).
    pub(super) fn reset(&self, n: usize) {
        self.remote.store(0, Relaxed);
        self.own.store(n, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_and_remote_changes_add_up() {
        let l = Load::default();
        l.add_own(2);
        l.sub(1); // a joiner took one away
        assert_eq!(l.get(), 1);
        l.add(3);
        l.sub_own(2);
        assert_eq!(l.get(), 2);
        l.reset(1);
        assert_eq!(l.get(), 1);
    }

    #[test]
    fn a_task_seen_leaving_before_arriving_reads_as_none() {
        let l = Load::default();
        l.sub(1);
        assert_eq!(l.get(), 0);
        l.add_own(1);
        assert_eq!(l.get(), 0);
    }
}
