//! Balancing: a worker whose ready threads wait behind many others hands
//! some of them to a worker that has fewer.
//!
//! Placement decides a thread's worker once, at its spawn; after its first
//! run a thread wakes on its home worker. With many threads that each
//! compute a little per wake-up, the homes' run queues drift apart: a
//! `corun dump` of MariaDB under sysbench (64 connection threads, 2
//! workers) showed 0 ready threads on one worker and 19 on the other, then
//! 21 against 4, moments later. A thread on the longer queue waits for
//! every one ahead of it at each wake-up, so transactions homed there took
//! longer: the median transaction was faster than natively (29 against
//! 49 ms), the 95th percentile twice as slow (123 against 57-72 ms). The
//! kernel evens out its CPUs' run queues every few milliseconds and places
//! a waking thread on an idle CPU; here the worker with the longer queue
//! does it, at the pass it makes every `POLL_EVERY` tasks (`run_loop.rs`).
//!
//! Each worker publishes how many ready threads its run queue holds at
//! that pass (`Worker::queued`; a sleeping worker holds none). A worker
//! that holds `MIN_GAP` and a quarter more than the least busy other
//! worker hands that one the newest of its ready threads, half the
//! difference and at most `MAX_BATCH`, and adds them to the receiver's
//! count, so that its own next pass, before the receiver's, does not hand
//! over the same gap again. After a hand-over the two differ by one at
//! most, under the margin: two workers do not pass threads to and fro
//! (each move costs the thread its warm caches). A margin of twice the
//! other's count, tried first, left 10 threads sharing one worker beside
//! 5 sharing the other, each of the 5 with twice the CPU of each of the
//! 10 (`yield_fairness`).
//!
//! Only a thread that may run on another kernel thread moves (`movable`:
//! its own TLS block, no lock glibc keeps by kernel tid, no handler
//! running...), and only one that ran before and waits in the ready FIFO;
//! never-run threads are stolen from the deque (`run_loop.rs`), preempted
//! ones shed (`shed.rs`). A thread woken from a park has not yet resumed
//! in it, and the park's state on this worker is settled by the hand-over
//! (`Worker::hand_over`). Threads that may not move go back to the queue
//! in their order.

use std::sync::atomic::Ordering::Relaxed;

use super::runtime::Runtime;
use super::shed::movable;
use super::task::TaskRef;
use super::worker::Worker;

/// A worker hands threads over only when its ready queue is longer than
/// the other's by this much and a quarter of the other's.
const MIN_GAP: usize = 2;
/// Threads handed over at one pass, at most.
const MAX_BATCH: usize = 32;
/// Passes skipped after one that found no ready thread that may move.
const SKIP_AFTER_NONE: u32 = 16;

impl Worker {
    /// The pass of every `POLL_EVERY` tasks: publishes this worker's ready
    /// count and, if another worker has far fewer, hands it some.
    #[inline(never)]
    pub(super) fn balance(&'static self, rt: &Runtime) {
        if rt.workers.len() < 2 {
            return;
        }
        let mine = self.local.run_queue.borrow().ready_len();
        self.queued.store(mine as u32, Relaxed);
        if mine < MIN_GAP {
            return;
        }
        let skip = self.local.balance_skip.get();
        if skip != 0 {
            self.local.balance_skip.set(skip - 1);
            return;
        }
        let Some((to, theirs)) = self.least_busy_other(rt) else {
            return;
        };
        if mine < theirs + MIN_GAP + theirs / 4 {
            return;
        }
        let given = self.hand_newest(to, ((mine - theirs) / 2).min(MAX_BATCH));
        if given == 0 {
            // None may move (`main`, `corun_spawn` coroutines, threads
            // sharing the worker's TLS): looking again at the next pass
            // would pop and push the same ones back every 61 tasks.
            self.local.balance_skip.set(SKIP_AFTER_NONE);
            return;
        }
        to.queued.fetch_add(given as u32, Relaxed);
        super::stats::balanced(given as u64);
        to.notify();
    }

    /// The started worker other than this one with the fewest ready
    /// threads, and that count (a sleeping worker has none).
    fn least_busy_other(&self, rt: &Runtime) -> Option<(&'static Worker, usize)> {
        let mut best: Option<(&'static Worker, usize)> = None;
        for w in rt.workers.iter() {
            if !w.live_other_than(self.index) {
                continue;
            }
            let n = if w.sleeping.load(Relaxed) {
                0
            } else {
                w.queued.load(Relaxed) as usize
            };
            if best.is_none_or(|(_, b)| n < b) {
                best = Some((w, n));
            }
        }
        best
    }

    /// Hands `to` up to `n` of the newest ready threads that may move;
    /// returns how many moved. The ones that may not go back, in order.
    fn hand_newest(&'static self, to: &'static Worker, n: usize) -> usize {
        let mut kept: [Option<TaskRef>; MAX_BATCH] = Default::default();
        let mut nkept = 0;
        let mut given = 0;
        for _ in 0..n {
            let Some(t) = self.local.run_queue.borrow_mut().pop_ready_back() else {
                break;
            };
            if !movable(&t) {
                kept[nkept] = Some(t);
                nkept += 1;
                continue;
            }
            match self.hand_over(t, to) {
                Ok(()) => given += 1,
                Err(t) => {
                    kept[nkept] = Some(t);
                    nkept += 1;
                }
            }
        }
        let mut rq = self.local.run_queue.borrow_mut();
        for t in kept[..nkept].iter_mut().rev() {
            if let Some(t) = t.take() {
                rq.push(t);
            }
        }
        given
    }
}
