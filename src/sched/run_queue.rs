//! A worker's local run queue: tasks that have run before and are ready to
//! run again, and the turns of never-run tasks. The ready ones are FIFO,
//! so a coroutine that yields goes behind everyone who was ready before
//! it. Only the owning worker touches it; tasks woken from other threads
//! arrive through the worker's inbox first (`worker.rs`).
//!
//! Never-run tasks wait in the worker's stealable deque (`fresh`), not
//! here: an idle worker may take them. A spawn, or a never-run task moved
//! to this worker, leaves a *turn* here (a count: the turn names no task),
//! and the scheduler takes the oldest never-run task when a turn comes
//! up. A turn whose task was taken elsewhere meanwhile (stolen, or by a
//! joiner) finds another never-run task or none, and is skipped.
//!
//! Woken first, bounded: when both a ready task and a turn wait, they
//! alternate, a ready task first (`pop`). A burst of never-run tasks then
//! no longer holds back the tasks that woke behind it: 100,000 sleepers
//! spawned at once, each sleeping 1 ms, all started before the first woken
//! one ran, so all 100,000 tasks and stacks were live at once and each
//! was cold in the caches by its second run; alternating, the woken ones
//! end while the others start, and the stacks and task blocks they free
//! are the ones the next starts and spawns take, still in the caches. The
//! bound keeps the turns' share: a never-run task waits at most as many
//! ready tasks as there are turns ahead of it (not the whole round of
//! ready tasks, as in one FIFO), so new connections among 10,000 busy ones
//! start at half the task rate at least. (Turns once came only every
//! `POLL_EVERY` tasks: at 10,000 busy connections the last ones sent
//! their first request seconds before it was read.) Go's scheduler runs a
//! new goroutine before the queue (`runnext`); a ready task first keeps
//! a server's request in flight ahead of a connection not yet served.
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

use super::fifo::Fifo;

/// What the queue hands out.
#[derive(Debug, PartialEq, Eq)]
pub enum Turn<T> {
    /// A task that ran before.
    Ready(T),
    /// The turn of the oldest never-run task (if any is left).
    Fresh,
}

pub struct RunQueue<T> {
    /// Tasks that woke, yielded or were queued to run as they are.
    q: Fifo<T>,
    /// Turns of never-run tasks.
    turns: usize,
    /// A ready task was taken while a turn waited: the next pick is a
    /// turn, if one still waits and a ready task does too.
    turn_owed: bool,
    /// Preempted tasks with their virtual run time, in ascending order
    /// (`push_preempted`).
    preempted: VecDeque<(u64, T)>,
    /// The virtual run time of the last preempted task taken: where a
    /// task that computes again starts counting from (`preempted_floor`).
    floor: u64,
    /// Since when (ns) the others have been taken ahead of a waiting
    /// preempted task, in a row (None: not now).
    others_since: Option<u64>,
}

impl<T> Default for RunQueue<T> {
    fn default() -> Self {
        RunQueue {
            q: Fifo::with_capacity(256),
            turns: 0,
            turn_owed: false,
            preempted: VecDeque::new(),
            floor: 0,
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
        self.q.push_back(t);
    }

    /// A never-run task was queued: its turn comes after the turns queued
    /// before it, alternating with the ready tasks (`pop`).
    #[inline]
    pub fn push_fresh_turn(&mut self) {
        self.turns += 1;
    }

    /// A preempted task whose virtual run time is now `vrun`: it runs
    /// after the others (`pop`), and among the preempted ones in order of
    /// `vrun`, after those with the same. Ordered by how long each
    /// computed, as the kernel orders threads by their run time (CFS's
    /// vruntime), the order moves as slices differ in length; a plain FIFO
    /// kept it fixed, so the same thread always ran just after a given
    /// other one (a producer's items always went to the same consumer of
    /// eight: crossbeam-deque's `no_starvation` never ended).
    #[inline]
    pub fn push_preempted(&mut self, t: T, vrun: u64) {
        let at = self.preempted.partition_point(|&(v, _)| v <= vrun);
        self.preempted.insert(at, (vrun, t));
    }

    /// The virtual run time a preempted task counts on from, if its own is
    /// lower (it slept meanwhile, or never computed before): that of the
    /// last preempted task taken, as the kernel places a thread that wakes
    /// at the queue's least run time, so that it cannot hold the worker
    /// for all it missed.
    #[inline]
    pub fn preempted_floor(&self) -> u64 {
        self.floor
    }

    fn pop_preempted(&mut self) -> Option<T> {
        let (v, t) = self.preempted.pop_front()?;
        self.floor = self.floor.max(v);
        Some(t)
    }

    /// The next entry: a ready task or a turn, alternating when both wait
    /// (`pop_woken_or_turn`); the oldest preempted task when nothing else
    /// is queued, or when the others have been taken ahead of it for
    /// `max_wait` in a row by `now()`. `now` is read only when both kinds
    /// wait. Inlined at every switch: with ready tasks alone (a yield,
    /// a server's wake-ups) it is the FIFO's pop.
    #[inline(always)]
    pub fn pop(&mut self, now: impl FnOnce() -> u64, max_wait: u64) -> Option<Turn<T>> {
        if self.preempted.is_empty() {
            self.others_since = None;
            if self.turns == 0 {
                return self.q.pop_front().map(Turn::Ready);
            }
            return self.pop_woken_or_turn();
        }
        self.pop_beside_preempted(now, max_wait)
    }

    /// Whether only ready tasks are queued (no turn, no preempted task):
    /// `pop` is then the FIFO's (`pop_ready`).
    #[inline(always)]
    pub fn only_ready(&self) -> bool {
        self.turns == 0 && self.preempted.is_empty()
    }

    /// `pop` when `only_ready`: the oldest ready task, and how many are
    /// left (all the queue holds). Answers in the registers what `pop`'s
    /// caller asked again (`Turn` in an `Option` is a tag and a pointer,
    /// tested twice; the lengths were loaded again).
    #[inline(always)]
    pub fn pop_ready(&mut self) -> Option<(T, usize)> {
        debug_assert!(self.only_ready());
        self.others_since = None;
        let t = self.q.pop_front()?;
        Some((t, self.q.len()))
    }

    /// `pop` when preempted tasks wait.
    #[inline(never)]
    fn pop_beside_preempted(
        &mut self,
        now: impl FnOnce() -> u64,
        max_wait: u64,
    ) -> Option<Turn<T>> {
        if !self.preempted.is_empty() {
            let overtake = match (self.has_woken(), self.others_since) {
                (false, _) => true,
                (true, None) => {
                    self.others_since = Some(now());
                    false
                }
                (true, Some(since)) => now().saturating_sub(since) >= max_wait,
            };
            if overtake {
                self.others_since = None;
                return self.pop_preempted().map(Turn::Ready);
            }
        } else {
            self.others_since = None;
        }
        self.pop_woken_or_turn()
    }

    /// A ready task, or a turn when none is ready or one is owed: a ready
    /// task taken while a turn waited owes the next pick to a turn.
    #[inline(always)]
    fn pop_woken_or_turn(&mut self) -> Option<Turn<T>> {
        if self.turns == 0 {
            return self.q.pop_front().map(Turn::Ready);
        }
        if !self.turn_owed || self.q.is_empty() {
            if let Some(t) = self.q.pop_front() {
                self.turn_owed = true;
                return Some(Turn::Ready(t));
            }
        }
        self.turn_owed = false;
        self.turns -= 1;
        Some(Turn::Fresh)
    }

    /// Whether every queued entry is a preempted task (and one is).
    #[inline]
    pub fn only_preempted(&self) -> bool {
        !self.has_woken() && !self.preempted.is_empty()
    }

    /// Whether a task that woke, yielded or was spawned waits (preempted
    /// ones aside): what a computing coroutine is preempted early for.
    #[inline]
    pub fn has_woken(&self) -> bool {
        !self.q.is_empty() || self.turns != 0
    }

    /// Ready tasks queued (turns and preempted tasks aside).
    #[inline]
    pub fn ready_len(&self) -> usize {
        self.q.len()
    }

    /// The newest ready task: the one that would wait longest here
    /// (`balance.rs` hands it to another worker).
    pub fn pop_ready_back(&mut self) -> Option<T> {
        self.q.pop_back()
    }

    /// The ready task `i` places from the front (turns and preempted tasks
    /// aside), without taking it: what to prefetch.
    #[inline]
    pub fn ready(&self, i: usize) -> Option<&T> {
        self.q.get(i)
    }

    /// Entries, turns and preempted tasks included.
    pub fn len(&self) -> usize {
        self.q.len() + self.turns + self.preempted.len()
    }

    /// Ready tasks first: a yield asks at every call, and with one ready
    /// the answer needs one load (`len` adds the three counts).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.q.is_empty() && self.turns == 0 && self.preempted.is_empty()
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
        q.push_preempted(10, 0);
        q.push_preempted(11, 0);
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
    fn preempted_tasks_run_in_order_of_their_run_time() {
        let mut q = RunQueue::new();
        q.push_preempted(1, 30);
        q.push_preempted(2, 10);
        q.push_preempted(3, 30);
        q.push_preempted(4, 20);
        let got: Vec<_> = std::iter::from_fn(|| q.pop(|| 0, u64::MAX)).collect();
        let want: Vec<_> = [2, 4, 1, 3].into_iter().map(Turn::Ready).collect();
        assert_eq!(got, want);
        // The last one taken had computed 30: one that computed less
        // (slept meanwhile) counts on from there.
        assert_eq!(q.preempted_floor(), 30);
    }

    fn drain(q: &mut RunQueue<i32>) -> Vec<Turn<i32>> {
        std::iter::from_fn(|| q.pop(|| 0, u64::MAX)).collect()
    }

    #[test]
    fn turns_alternate_with_ready_tasks_a_ready_one_first() {
        let mut q = RunQueue::new();
        for _ in 0..3 {
            q.push_fresh_turn();
        }
        q.push(1);
        q.push(2);
        assert_eq!(q.len(), 5);
        use Turn::{Fresh, Ready};
        // Queued behind three turns, the ready tasks still go first, one
        // turn between them; the turns left then run in a row.
        assert_eq!(drain(&mut q), [Ready(1), Fresh, Ready(2), Fresh, Fresh]);
        assert!(q.is_empty());
    }

    #[test]
    fn a_turn_waits_for_at_most_one_ready_task_per_turn_ahead() {
        // Ready tasks that keep coming (yields) cannot hold a turn back.
        let mut q = RunQueue::new();
        q.push(0);
        q.push_fresh_turn();
        q.push_fresh_turn();
        let mut ready_before_last_turn = 0;
        let mut turns = 0;
        while turns < 2 {
            match q.pop(|| 0, u64::MAX).unwrap() {
                Turn::Ready(t) => {
                    ready_before_last_turn += 1;
                    q.push(t);
                }
                Turn::Fresh => turns += 1,
            }
        }
        assert_eq!(ready_before_last_turn, 2);
        assert_eq!(q.pop(|| 0, u64::MAX), Some(Turn::Ready(0)));
    }

    #[test]
    fn a_turn_owed_is_not_kept_once_turns_run_out() {
        let mut q = RunQueue::new();
        q.push(1);
        q.push_fresh_turn();
        assert_eq!(q.pop(|| 0, u64::MAX), Some(Turn::Ready(1)));
        assert_eq!(q.pop(|| 0, u64::MAX), Some(Turn::Fresh));
        // No turn owed now: a new turn comes after a ready task again.
        q.push_fresh_turn();
        q.push(2);
        q.push(3);
        use Turn::{Fresh, Ready};
        assert_eq!(drain(&mut q), [Ready(2), Fresh, Ready(3)]);
    }

    #[test]
    fn turns_count_as_woken_against_preempted_tasks() {
        let mut q = RunQueue::new();
        q.push_preempted(10, 0);
        q.push_fresh_turn();
        assert!(q.has_woken());
        assert!(!q.only_preempted());
        assert_eq!(q.pop(|| 100, 50), Some(Turn::Fresh));
        assert!(q.only_preempted());
        assert_eq!(q.pop(|| unreachable!(), 50), Some(Turn::Ready(10)));
    }
}
