//! A worker's local run queue: tasks that have run before and are ready to
//! run again, and the turns of never-run tasks. FIFO, so a coroutine that
//! yields goes behind everyone who was ready before it. Only the owning
//! worker touches it; tasks woken from other threads arrive through the
//! worker's inbox first (`worker.rs`).
//!
//! Never-run tasks wait in the worker's stealable deque (`fresh`), not
//! here: an idle worker may take them. A spawn, or a never-run task moved
//! to this worker, leaves a *turn* here, and the scheduler takes the
//! oldest never-run task when it reaches it: a new connection's coroutine
//! waits one round of the ready tasks, as a thread would be scheduled,
//! instead of a turn every `POLL_EVERY` tasks. At 10,000 busy connections
//! that rule started new ones at 1/61 of the task rate, so the last ones
//! sent their first request seconds before it was read. A turn whose task
//! was taken elsewhere meanwhile (stolen, or by a joiner) finds another
//! never-run task or none, and is skipped.

use std::collections::VecDeque;

/// What the queue hands out.
#[derive(Debug, PartialEq, Eq)]
pub enum Turn<T> {
    /// A task that ran before.
    Ready(T),
    /// The turn of the oldest never-run task (if any is left).
    Fresh,
}

pub struct RunQueue<T> {
    q: VecDeque<Turn<T>>,
}

impl<T> Default for RunQueue<T> {
    fn default() -> Self {
        RunQueue {
            q: VecDeque::with_capacity(256),
        }
    }
}

impl<T> RunQueue<T> {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn push(&mut self, t: T) {
        self.q.push_back(Turn::Ready(t));
    }

    /// A never-run task was queued: its turn comes after what is ready now.
    #[inline]
    pub fn push_fresh_turn(&mut self) {
        self.q.push_back(Turn::Fresh);
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Turn<T>> {
        self.q.pop_front()
    }

    /// Moves the `k` newest entries ahead of the others, in their order:
    /// tasks a preempted coroutine's worker just woke run before the
    /// coroutines that were preempted (`preempt.rs`), as the kernel runs a
    /// thread that wakes before the ones that compute.
    pub fn promote_newest(&mut self, k: usize) {
        let k = k.min(self.q.len());
        self.q.rotate_right(k);
    }

    /// The entry `i` places from the front, without taking it.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&Turn<T>> {
        self.q.get(i)
    }

    /// Entries, turns included.
    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_order() {
        let mut q = RunQueue::new();
        for i in 0..5 {
            q.push(i);
        }
        assert_eq!(q.len(), 5);
        let first = q.pop().unwrap();
        assert_eq!(first, Turn::Ready(0));
        q.push(0); // a yield goes to the back
        let got: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        let want: Vec<_> = [1, 2, 3, 4, 0].into_iter().map(Turn::Ready).collect();
        assert_eq!(got, want);
        assert!(q.is_empty());
    }

    #[test]
    fn promoted_entries_come_first_in_their_order() {
        let mut q = RunQueue::new();
        for i in 0..5 {
            q.push(i);
        }
        q.promote_newest(2);
        let got: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        let want: Vec<_> = [3, 4, 0, 1, 2].into_iter().map(Turn::Ready).collect();
        assert_eq!(got, want);
        q.push(7);
        q.promote_newest(5);
        assert_eq!(q.pop(), Some(Turn::Ready(7)));
    }

    #[test]
    fn a_fresh_turn_keeps_its_place() {
        let mut q = RunQueue::new();
        q.push(1);
        q.push_fresh_turn();
        q.push(2);
        assert_eq!(q.pop(), Some(Turn::Ready(1)));
        assert_eq!(q.pop(), Some(Turn::Fresh));
        assert_eq!(q.pop(), Some(Turn::Ready(2)));
        assert_eq!(q.pop(), None);
    }
}
