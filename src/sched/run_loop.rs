//! The scheduler loop a worker runs: which task next, when to poll, when
//! to steal, when to sleep.
//!
//! Run a task from the queues, in order: the local run queue, whose ready
//! tasks are FIFO and alternate with the turns of never-run tasks (spawned
//! here, or placed here by another thread and adopted every `POLL_EVERY`
//! tasks), a ready one first (`run_queue.rs`); every `POLL_EVERY` tasks, or when there is
//! nothing to run, poll the netpoller (without blocking when work remains)
//! and fire expired timers; when idle, steal never-run tasks from the
//! others, watch the shared queues a few microseconds if another worker
//! is awake (`spin_for_work`), then sleep until the next timer
//! (docs/ARCHITECTURE.md §4).

use std::sync::atomic::Ordering;

use super::run_queue::Turn;
use super::runtime::{runtime, Runtime};
use super::task::TaskRef;
use super::worker::{steal_one, Worker};

/// Run this many tasks between netpoller checks when busy.
pub(super) const POLL_EVERY: u64 = 61;
/// How long an idle worker watches for work before sleeping, and how often
/// it looks at its epoll meanwhile.
const SPIN_NS: u64 = 50_000;
const SPIN_POLL_NS: u64 = 5_000;
/// Never-run tasks of a worker held by one task this long may be stolen.
const STEAL_AFTER_NS: u64 = 1_000_000;
/// Never-run tasks moved at most by one steal.
const STEAL_BATCH: usize = 64;

impl Worker {
    /// The scheduler loop; returns when `stop` says so (worker 0, when main
    /// is done) or never. Generic, so that `stop` is inlined rather than
    /// called through a vtable; kept out of line itself, so that the loop
    /// and its inlined steps stay one function.
    ///
    /// `stop` (main's task is done) can only become true when a task
    /// ends: it is asked after a run that ended its task, when the worker
    /// is out of work, and every POLL_EVERY tasks (main ended on another
    /// worker), not at every switch (a load of main's state word and a
    /// test of 5 instructions, 2% of a yield).
    #[inline(never)]
    pub(super) fn run(&'static self, stop: impl Fn() -> bool) {
        let rt = runtime().expect("runtime started before its workers");
        if stop() {
            return;
        }
        loop {
            super::sigdispatch::worker_tick(&self.sig_epoch);
            // Every POLL_EVERY tasks: fairness for what other threads
            // queued here (`next_task`), then the netpoller. Decided once
            // per pass (the tick only moves here).
            // A countdown: `tick % POLL_EVERY` was a multiply and a
            // subtract at every switch.
            let left = self.local.until_poll.get() - 1;
            let due = left == 0;
            self.local
                .until_poll
                .set(if due { POLL_EVERY as u32 } else { left });
            if due {
                if stop() {
                    return;
                }
                self.balance(rt);
            }
            if let Some((t, woken)) = self.next_task(rt, due) {
                if self.run_task_inline(t, woken) && stop() {
                    return;
                }
                if due {
                    self.poll(rt, false);
                }
                continue;
            }
            if stop() {
                return;
            }
            // Out of work: look at the netpoller, unless it was looked at
            // a moment ago (the spin below looks every SPIN_POLL_NS). A
            // worker whose coroutine parks to wait for another worker (a
            // join, a channel) is back here at once, and the epoll_wait
            // it made each time was on the path of the wake-up that
            // follows.
            let now = crate::sys::now_ns();
            if now.saturating_sub(self.local.clock.get()) >= SPIN_POLL_NS {
                if !self.may_steal_or_spin(rt) {
                    // Nothing to steal and nobody to spin for: the next
                    // step is the blocking poll, which returns at once if
                    // readiness is pending. A look that must not block
                    // first was a second epoll call at each idle moment:
                    // memcached's four event loops on two workers, each
                    // worker's sole CPU shared with the load, made 0.9
                    // epoll calls per request under corun, 0.4 natively.
                    self.poll(rt, true);
                    continue;
                }
                self.poll(rt, false);
                if !self.local.run_queue.borrow().is_empty() {
                    continue;
                }
            }
            if let Some(t) = self.steal_from_others(rt, now) {
                if self.run_task(t) && stop() {
                    return;
                }
                continue;
            }
            if self.spin_for_work(rt) {
                continue;
            }
            self.poll(rt, true);
        }
    }

    /// The next task to run, and whether a task that woke, yielded or was
    /// spawned still waits behind it (`Worker::woken_waiting`). `due`: the
    /// pass of every POLL_EVERY tasks.
    #[inline(always)]
    fn next_task(&self, rt: &Runtime, due: bool) -> Option<(TaskRef, bool)> {
        if due {
            // Fairness: tasks woken from other threads (the blocking pool,
            // other workers) join the back of the local queue, and so do
            // the turns of never-run tasks other threads placed here; the
            // global queue gets a turn even when the local one never
            // drains.
            self.drain_inbox();
            self.adopt_placed();
            if let Some(t) = self.pop_global(rt) {
                return Some((t, self.local.run_queue.borrow().has_woken()));
            }
        }
        if let Some(t) = self.pop_run_queue(true) {
            return Some(t);
        }
        if self.has_remote() {
            self.drain_inbox();
            if let Some(t) = self.pop_run_queue(false) {
                return Some(t);
            }
        }
        let t = self.pop_fresh().or_else(|| self.pop_placed(rt))?;
        Some((t, self.local.run_queue.borrow().has_woken()))
    }

    /// The next entry of the local run queue: a task that ran before, or
    /// the oldest never-run task when a fresh turn comes up (turns whose
    /// task was taken elsewhere are skipped: `run_queue.rs`), with what
    /// `next_task` returns. One borrow of the queue answers the rest of
    /// the switch too: whether only preempted tasks wait (then what woke
    /// on other threads, or was placed here, goes ahead of them: `first`),
    /// whether woken ones still wait, and what to prefetch. Inlined: it
    /// runs at every switch (each borrow is a flag test and two stores,
    /// the call ~15 instructions of a yield's ~280).
    #[inline(always)]
    fn pop_run_queue(&self, first: bool) -> Option<(TaskRef, bool)> {
        let mut rq = self.local.run_queue.borrow_mut();
        if rq.only_ready() {
            // Ready tasks alone (a yield, a server's wake-ups): the FIFO.
            let (t, left) = rq.pop_ready()?;
            self.prefetch_next_of(&rq, left);
            return Some((t, left != 0));
        }
        if first && rq.only_preempted() {
            drop(rq);
            self.drain_inbox();
            self.adopt_placed();
            rq = self.local.run_queue.borrow_mut();
        }
        loop {
            match rq.pop(crate::sys::now_ns, super::preempt::slice_ns())? {
                Turn::Ready(t) => {
                    self.prefetch_next(&rq);
                    return Some((t, rq.has_woken()));
                }
                Turn::Fresh => {
                    if let Some(t) = self.pop_fresh() {
                        self.prefetch_next(&rq);
                        return Some((t, rq.has_woken()));
                    }
                }
            }
        }
    }

    /// Moves the never-run tasks other threads placed here (up to 256) to
    /// the local deque, each with its turn: they wait one round of the
    /// ready tasks, and stay stealable.
    fn adopt_placed(&self) {
        for _ in 0..256 {
            match steal_one(&self.placed) {
                Some(t) => self.push_fresh(t),
                None => break,
            }
        }
    }

    /// A never-run task from the global queue (spawned by a native
    /// thread), skipping stale entries.
    fn pop_global(&self, rt: &Runtime) -> Option<TaskRef> {
        while let Some(t) = steal_one(&rt.global) {
            if t.take(self.index) {
                return Some(t);
            }
        }
        None
    }

    /// A never-run task spawned here, skipping stale entries (tasks a
    /// joiner took to run itself: `Task::take`).
    fn pop_fresh(&self) -> Option<TaskRef> {
        while let Some(t) = self.local.fresh.pop() {
            if t.take(self.index) {
                return Some(t);
            }
        }
        None
    }

    /// A never-run task placed here by another thread, or from the global
    /// queue, skipping stale entries.
    fn pop_placed(&self, rt: &Runtime) -> Option<TaskRef> {
        while let Some(t) = steal_one(&self.placed).or_else(|| steal_one(&rt.global)) {
            if t.take(self.index) {
                return Some(t);
            }
        }
        None
    }

    /// Moves up to 256 tasks woken from other threads to the back of the
    /// local run queue.
    fn drain_inbox(&self) {
        if !self.has_remote() {
            return;
        }
        let mut rq = self.local.run_queue.borrow_mut();
        for _ in 0..256 {
            match self.take_remote() {
                Some(t) => rq.push(t),
                None => break,
            }
        }
    }

    /// Whether, out of work, this worker might steal (another worker has
    /// never-run tasks queued) or spin (`spin_for_work`: another worker
    /// runs on another CPU): then a look at its epoll that must not block
    /// comes first, its own readiness before others' work.
    fn may_steal_or_spin(&self, rt: &Runtime) -> bool {
        rt.workers
            .iter()
            .any(|v| v.index != self.index && v.fresh_stealer.len() + v.placed.len() != 0)
            || self.others_on_cpu(rt, self.note_cpu())
    }

    /// Takes never-run tasks from another worker whose queue waits: one
    /// that has been running the same task for a while, or one with a
    /// backlog (two or more never-run tasks queued). Half of them (at most
    /// STEAL_BATCH) move here, so that both work through the backlog: 100,000
    /// coroutines spawned by a busy main all went to the other worker
    /// (`spawn.rs`: a busy worker is full), which ran them one by one
    /// while this one idled. One queued task of a switching worker is left
    /// to it: it runs it soon enough, and taking it would undo placement.
    fn steal_from_others(&'static self, rt: &Runtime, now: u64) -> Option<TaskRef> {
        let n = rt.workers.len();
        for k in 1..n {
            let v = rt.workers.at((self.index + k) % n);
            let queued = v.fresh_stealer.len() + v.placed.len();
            if queued == 0 {
                continue;
            }
            let busy = v.running_id.load(Ordering::Relaxed) != 0
                && now.saturating_sub(v.running_since.load(Ordering::Relaxed)) > STEAL_AFTER_NS;
            if !busy && queued < 2 {
                continue;
            }
            // Level the two workers' live tasks, not only the backlog: a
            // thread stays on the worker that first ran it, and a thief
            // that took half of each backlog of a burst of connections
            // (a main accepting them holds its worker) homed most of them
            // for good. One task at least: an idle thief runs something.
            let level = v.load.get().saturating_sub(self.load.get()) / 2;
            v.move_never_run(self, (queued / 2).min(level).clamp(1, STEAL_BATCH));
            if let Some(t) = self.pop_placed(rt) {
                return Some(t);
            }
        }
        None
    }

    /// Whether another worker's thread may be running now, so that it can
    /// hand this one work soon: it neither announced its sleep nor is
    /// still blocked in it, and was last seen on another CPU than `my_cpu`
    /// (this thread's, where it cannot be running now). A worker woken by
    /// an eventfd write stays `napping` until its thread is back on a CPU,
    /// and one the kernel preempted on this CPU waits for it: spinning for
    /// either only takes the CPU it needs. With the two workers of a futex
    /// ping-pong on one CPU (or on two CPUs shared with other programs),
    /// each hand-off woke or preempted the other worker onto the waker's
    /// CPU, where it waited for the waker to spin its 50 us out: 195 us of
    /// CPU per round trip against 1.7 us natively.
    fn others_on_cpu(&self, rt: &Runtime, my_cpu: i32) -> bool {
        rt.workers.iter().any(|w| {
            w.index != self.index
                && w.started.load(Ordering::Relaxed)
                && !w.dead.load(Ordering::Relaxed)
                && !w.sleeping.load(Ordering::Relaxed)
                && !w.napping.load(Ordering::Relaxed)
                && (my_cpu < 0 || w.cpu.load(Ordering::Relaxed) != my_cpu)
        })
    }

    /// Before sleeping, watch the shared queues for a few microseconds if
    /// another worker is awake: handing work to a worker asleep in
    /// epoll costs an eventfd write and a kernel wake-up (~50 us on a VM,
    /// the unpinned eventfd ping-pong baseline of `make bench`), which
    /// dominated spawn+join and join-style wake-ups across workers. Go's
    /// idle Ps spin the same way. Returns true if work arrived.
    fn spin_for_work(&'static self, rt: &Runtime) -> bool {
        let others_run = self.others_on_cpu(rt, self.note_cpu());
        let timer_soon = self
            .local
            .timers
            .borrow()
            .next_deadline()
            .is_some_and(|d| d <= self.local.clock.get() + SPIN_NS);
        if !others_run || timer_soon {
            return false;
        }
        let start = crate::sys::now_ns();
        let mut next_poll = start + SPIN_POLL_NS;
        loop {
            // One look per pause: a pause is ~25 ns on this machine's
            // Xeon (140 cycles on Skylake-SP), so looking every 64 of them
            // added up to 1.6 us to each hand-off between two workers
            // (a cross-worker channel ping-pong has two per round trip).
            // The clock is read every 16 looks.
            for _ in 0..16 {
                if self.has_shared_work(rt) {
                    return true;
                }
                std::hint::spin_loop();
            }
            let now = crate::sys::now_ns();
            if !self.others_on_cpu(rt, self.note_cpu()) {
                // The workers that could hand us work went to sleep, or
                // were woken and wait for a CPU: spinning on would keep
                // this one from them.
                return false;
            }
            if now >= next_poll {
                // Readiness of fds registered here arrives through this
                // worker's epoll, not its queues: look there too, or the
                // spin would delay it (a pipe ping-pong across workers got
                // 20% slower before this check).
                self.poll(rt, false);
                if !self.local.run_queue.borrow().is_empty() {
                    return true;
                }
                // A backlog on another worker (a busy spawner's queue).
                if let Some(t) = self.steal_from_others(rt, now) {
                    // Taken already (`Task::take`): the run queue, whose
                    // entries run as they are.
                    self.push_local(t);
                    return true;
                }
                next_poll = now + SPIN_POLL_NS;
            }
            if now - start > SPIN_NS {
                return false;
            }
        }
    }
}
