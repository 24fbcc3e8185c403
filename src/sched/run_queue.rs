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
//!
//! Preempted coroutines (`preempt.rs`) wait in a second FIFO, behind
//! everything that woke, yielded or was spawned: the kernel runs a thread
//! that wakes before the ones that compute (it has used less CPU time),
//! so a handshake between two threads beside computing ones costs
//! microseconds natively. When both were one FIFO, every wake-up of a
//! thread beside 8 computing ones waited for each of them to use a slice:
//! 50 round trips of a condition-variable ping-pong took 10-12 s instead
//! of 16-72 ms, and a JVM that starts threads beside computing ones (each
//! `Thread.start` is such a handshake) took 22 s instead of 2. Once the
//! others have had the worker for `max_wait` (a slice) in a row while a
//! preempted coroutine waited, the oldest preempted one goes ahead, so
//! threads that keep waking cannot starve it. (The time a preempted one
//! waited is no measure: with several computing coroutines taking turns,
//! the oldest has always waited a slice, and woken threads would then
//! wait behind one computing run at every wake-up, as before.)

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
    /// Preempted tasks.
    preempted: VecDeque<T>,
    /// Since when (ns) the others have been taken ahead of a waiting
    /// preempted task, in a row (None: not now).
    others_since: Option<u64>,
}

impl<T> Default for RunQueue<T> {
    fn default() -> Self {
        RunQueue {
            q: VecDeque::with_capacity(256),
            preempted: VecDeque::new(),
            others_since: None,
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

    /// A preempted task: it runs after the others (`pop`).
    #[inline]
    pub fn push_preempted(&mut self, t: T) {
        self.preempted.push_back(t);
    }

    /// The next entry: the oldest of the woken, yielded and spawned ones;
    /// the oldest preempted task when nothing else is queued, or when the
    /// others have been taken ahead of it for `max_wait` in a row by
    /// `now()`. `now` is read only when both kinds wait.
    #[inline]
    pub fn pop(&mut self, now: impl FnOnce() -> u64, max_wait: u64) -> Option<Turn<T>> {
        if !self.preempted.is_empty() {
            let overtake = match (self.q.is_empty(), self.others_since) {
                (true, _) => true,
                (false, None) => {
                    self.others_since = Some(now());
                    false
                }
                (false, Some(since)) => now().saturating_sub(since) >= max_wait,
            };
            if overtake {
                self.others_since = None;
                return self.preempted.pop_front().map(Turn::Ready);
            }
        } else {
            self.others_since = None;
        }
        self.q.pop_front()
    }

    /// Whether every queued entry is a preempted task (and one is).
    #[inline]
    pub fn only_preempted(&self) -> bool {
        self.q.is_empty() && !self.preempted.is_empty()
    }

    /// Whether a task that woke, yielded or was spawned waits (preempted
    /// ones aside): what a computing coroutine is preempted early for.
    #[inline]
    pub fn has_woken(&self) -> bool {
        !self.q.is_empty()
    }

    /// The entry `i` places from the front of the woken ones (preempted
    /// tasks run after them), without taking it.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&Turn<T>> {
        self.q.get(i)
    }

    /// Entries, turns and preempted tasks included.
    pub fn len(&self) -> usize {
        self.q.len() + self.preempted.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty() && self.preempted.is_empty()
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
        let first = q.pop(|| 0, u64::MAX).unwrap();
        assert_eq!(first, Turn::Ready(0));
        q.push(0); // a yield goes to the back
        let got: Vec<_> = std::iter::from_fn(|| q.pop(|| 0, u64::MAX)).collect();
        let want: Vec<_> = [1, 2, 3, 4, 0].into_iter().map(Turn::Ready).collect();
        assert_eq!(got, want);
        assert!(q.is_empty());
    }

    #[test]
    fn preempted_tasks_wait_until_the_others_had_max_wait() {
        let mut q = RunQueue::new();
        q.push_preempted(10);
        q.push_preempted(11);
        q.push(1);
        q.push(2);
        q.push(3);
        assert!(q.has_woken());
        assert_eq!(q.len(), 5);
        // Woken ones first: the others' run in a row starts at 100...
        assert_eq!(q.pop(|| 100, 50), Some(Turn::Ready(1)));
        assert_eq!(q.pop(|| 149, 50), Some(Turn::Ready(2)));
        // ...and has lasted 50: a preempted one's turn, then the count
        // starts again.
        assert_eq!(q.pop(|| 150, 50), Some(Turn::Ready(10)));
        assert_eq!(q.pop(|| 400, 50), Some(Turn::Ready(3)));
        assert!(!q.has_woken());
        assert!(q.only_preempted());
        // Nothing else queued: the preempted one runs, the clock unread.
        assert_eq!(q.pop(|| unreachable!(), 50), Some(Turn::Ready(11)));
        assert!(q.is_empty());
        assert_eq!(q.pop(|| 0, 50), None);
    }

    #[test]
    fn a_fresh_turn_keeps_its_place() {
        let mut q = RunQueue::new();
        q.push(1);
        q.push_fresh_turn();
        q.push(2);
        assert_eq!(q.pop(|| 0, u64::MAX), Some(Turn::Ready(1)));
        assert_eq!(q.pop(|| 0, u64::MAX), Some(Turn::Fresh));
        assert_eq!(q.pop(|| 0, u64::MAX), Some(Turn::Ready(2)));
        assert_eq!(q.pop(|| 0, u64::MAX), None);
    }
}
