//! A worker: one kernel thread's share of the scheduler, and what the rest
//! of the runtime may ask of it.
//!
//! A worker owns a run queue, a timer heap, a stack pool and an epoll
//! instance (its netpoller, `netpoller.rs`). Worker 0 is the program's main
//! thread: the `__libc_start_main` hook turns `main` into the first task and
//! drives worker 0 until that task is done. Workers 1..N are started with
//! the real `pthread_create` (`runtime.rs`) and loop forever (`run_loop.rs`).
//!
//! Tasks come in three kinds of queue:
//!
//! - `fresh` (a crossbeam work-stealing deque, owner pushes/pops, others
//!   steal) and `placed` (an injector other threads push to): tasks that have
//!   **never run**. Any worker may take them: moving a task that has no
//!   frames yet is safe.
//! - `run_queue`: tasks that ran before and are runnable again. They are
//!   pinned to this worker for life, because C code may keep the address of
//!   errno or other thread-local data across a call (docs/ARCHITECTURE.md §5.2).
//!   A never-run task queued in `fresh` has its turn in it too.
//! - `inbox`: tasks of this worker made runnable by other threads (a
//!   netpoller of another worker, a mutex unlocked elsewhere). The owner
//!   moves them to `run_queue`. The first such task waits in `handoff`, a
//!   single slot, and only the next ones in the injector: a wake-up across
//!   workers (a channel ping-pong, a join) then moves one cache line from
//!   the waker to the worker that watches it, not the injector's tail,
//!   block and slot (`push_remote`, `take_remote`).
//!
//! Sleeping and waking follow the announce-then-recheck protocol: an idle
//! worker sets `sleeping`, re-checks its shared queues, and only then blocks
//! in epoll; a producer pushes first and then, if it finds `sleeping` set,
//! clears it and writes the worker's eventfd (`notify`). Both sides use
//! SeqCst, so at least one of them sees the other and no wake-up is lost;
//! the eventfd is written only when the worker really may sleep.
//!
//! This file holds the worker's state and the thread-locals that name the
//! running worker and task; the loop, the netpoller, placement and the
//! stack pool each have a file of their own (docs/ARCHITECTURE.md §4).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
use std::sync::Arc;

use crossbeam_deque::{Injector, Stealer, Worker as Deque};

use crate::ctx::{overflow, tls, StackPool};
use crate::sys::block_cache::BlockCache;
use crate::sys::epoll::{Epoll, EventFd};

use super::fdtable;
use super::fork_injector::ForkInjector;
use super::prefetch::TlsOffsets;
use super::run_queue::RunQueue;
use super::runtime::Runtime;
use super::task::{Task, TaskRef};
use super::timers::Timers;
use super::waiter::Waiter;

/// A zero-sized field that starts the next field on a fresh pair of cache
/// lines (`Worker`: Intel's adjacent-line prefetcher moves lines in pairs).
#[derive(Default)]
#[repr(align(128))]
pub(super) struct LineBreak;

/// The fields come in groups by who writes them, each group on lines of
/// its own (`repr(C)` keeps the order): the other workers read this
/// worker's `sleeping`, `load` and queues at every hand-off and spawn, and
/// this worker writes `running_id`, `running_since` and `switches` at every
/// switch and its `Local` all the time. Laid out by the compiler, `load`
/// and `handoff` shared a line with the switch fields, and `sleeping`,
/// `started`, `dead` one with `Local`'s last fields: each spawn on one
/// worker that looked at another (`wake_thief`), each wake-up sent there,
/// missed on a line that worker had just written.
#[repr(C)]
pub struct Worker {
    // Read by all, written once (at start, or a fork).
    pub index: usize,
    pub(super) fresh_stealer: Stealer<TaskRef>,
    pub(super) wake: EventFd,
    /// The epoll instance `netpoller::open_for_start` made for a worker
    /// whose thread is not running yet, -1 once the thread has it.
    pub(super) unstarted_epoll: AtomicI32,
    /// The worker's epoll fd once its thread set it up (-1 before), for
    /// the preemption monitor to look whether readiness waits there
    /// (`preempt_monitor::waits_beside_idle`); written by the worker.
    pub(super) epoll_fd: AtomicI32,
    /// Kernel thread id, once started.
    pub tid: AtomicI32,
    /// The worker's thread runs (workers start on first use).
    pub started: AtomicBool,
    /// In a forked child, every worker but the forking one: it has no
    /// thread and never gets one.
    pub dead: AtomicBool,
    _shared: LineBreak,
    // Written by other threads (and by this worker).
    /// One task woken from another thread (`Arc::into_raw`, null: empty),
    /// ahead of `inbox`.
    handoff: AtomicPtr<Task>,
    /// Live tasks homed on this worker (placement heuristic).
    pub load: super::load::Load,
    pub(super) sleeping: AtomicBool,
    /// Ready tasks in the local run queue at the worker's last pass (every
    /// `POLL_EVERY` tasks), plus those other workers handed it since
    /// (`balance.rs`).
    pub(super) queued: AtomicU32,
    /// The worker's thread is (or is about to be) blocked in the kernel in
    /// its sleep: set by the worker just before the blocking wait, cleared
    /// by the worker when the wait returns. Unlike `sleeping`, which a
    /// producer clears when it writes the eventfd, it stays set until the
    /// woken thread really runs again: a worker that spins for work
    /// (`run_loop.rs`) looks at it to tell a worker that can hand it work
    /// soon from one that first needs a CPU from the kernel.
    pub(super) napping: AtomicBool,
    /// The CPU the worker's thread was last seen on (`sched_getcpu`, -1:
    /// not yet): stored when it wakes from its sleep, at each poll and
    /// while it spins. A spinning worker on that same CPU knows this one is
    /// not running now (`run_loop.rs`, `others_on_cpu`).
    pub(super) cpu: AtomicI32,
    // Two injectors, each with its head and tail on lines of their own.
    pub(super) inbox: ForkInjector,
    pub(super) placed: ForkInjector,
    _own: LineBreak,
    // Written by this worker at every switch; read by the watchdog and by
    // placement.
    /// Task running now (0: in the scheduler) and since when (ns); read by
    /// the watchdog.
    pub running_id: AtomicU64,
    pub running_since: AtomicU64,
    pub running_start_addr: AtomicUsize,
    /// A task that woke, yielded or was spawned waits in the local run
    /// queue (preempted ones aside): stored when a run starts and at each
    /// local push, read by the preemption monitor, which then preempts a
    /// computing run after a granularity, not a slice (`preempt.rs`).
    pub woken_waiting: AtomicBool,
    /// Tasks run (a heartbeat for the watchdog and for stats).
    pub switches: AtomicU64,
    /// The worker's thread may sleep in the kernel for corun itself (a
    /// contended lock of corun's own, the mapping of a stack slab), nested
    /// count: the watchdog does not take that sleep for a stall (`OwnWait`).
    pub own_wait: AtomicU32,
    /// Generation of the kernel signal mask this worker's thread has
    /// (`signals.rs`, `sigmask.rs`).
    pub sig_epoch: AtomicU64,
    _local: LineBreak,
    pub(super) local: Local,
}

/// State touched only by the worker's own thread.
pub(super) struct Local {
    pub(super) run_queue: RefCell<RunQueue<TaskRef>>,
    pub(super) fresh: Deque<TaskRef>,
    pub(super) timers: RefCell<Timers<Waiter>>,
    pub(super) stacks: RefCell<StackPool>,
    pub(super) epoll: Cell<Epoll>,
    /// Tasks to run before the next netpoller check when busy (counts
    /// down from `POLL_EVERY`: `run_loop.rs`).
    pub(super) until_poll: Cell<u32>,
    /// Fork-join affinity: up when a coroutine here joins a task that has
    /// not run yet, down at each spawn (`spawn.rs`).
    pub(super) fork_join: Cell<u32>,
    /// The `switches` count at the last spawn made while the spawner held
    /// this worker past BUSY_NS (`spawn.rs`): a second such spawn in the
    /// same hold is a burst.
    pub(super) busy_spawn_at: Cell<u64>,
    /// The thread pointer of the worker's own thread (glibc's), put back
    /// after running a coroutine that has its own.
    pub(super) tp: Cell<usize>,
    /// In a forked child: `epoll` and the eventfd are the parent's until
    /// `renewed` makes new ones.
    pub(super) stale: Cell<bool>,
    /// Monotonic time read at the last poll: switches stamp `running_since`
    /// with it instead of reading the clock each time (a vDSO clock read
    /// was 20% of a yield round trip).
    pub(super) clock: Cell<u64>,
    /// The worker thread's own `CURRENT` and overflow record, found once
    /// (`attach`): in a shared library each thread-local access is a call
    /// to `__tls_get_addr`, and every switch writes both twice (two calls,
    /// 22 instructions of a 320-instruction yield).
    pub(super) current_slot: Cell<*const Cell<*const Task>>,
    /// A program fd was registered with this worker's epoll (ever: an
    /// fd is only deregistered by its close): until then a poll that
    /// must not block has no readiness to find, and skips the syscall
    /// (`netpoller.rs`).
    pub(super) watches_fds: Cell<bool>,
    /// Tasks of this worker parked on fds now (`FdPark`): readiness only
    /// this worker's epoll sees, so its running coroutine may not block
    /// in an epoll set of its own meanwhile (`solo.rs`).
    pub(super) fd_parks: Cell<u32>,
    /// Balancing passes to skip: the last one found no ready thread that
    /// may move (`balance.rs`).
    pub(super) balance_skip: Cell<u32>,
    pub(super) overflow_slot: Cell<*const Cell<*const overflow::Running>>,
    /// Task ids this worker's spawns take: the next one and the end of
    /// the block it took from `NEXT_ID` (`task.rs`).
    pub(super) ids: Cell<(u64, u64)>,
    /// Free heap blocks of the tasks' size (`sys::block_cache`).
    pub(super) blocks: BlockCache,
    /// Where thread-locals sit relative to a thread pointer, for
    /// prefetching a coroutine's (`prefetch.rs`).
    pub(super) tls_offsets: Cell<TlsOffsets>,
    /// Where the running coroutine's calls that do not wait began
    /// (`slice.rs`).
    pub(super) slice_mark: Cell<super::slice::Mark>,
}

// SAFETY: a worker's `Local` is only used by the thread that drives the
// worker (whose WORKER thread-local points at it: `current_worker`, the
// way in for code outside the loop, and the loop itself, which runs on
// that thread), after `attach`. The promise is made for `Local` alone:
// `Worker` is Sync because its other fields are (atomics, queues made for
// sharing), so a field added outside `Local` that is not thread-safe fails
// to compile instead of riding on a blanket `unsafe impl Sync for Worker`.
unsafe impl Sync for Local {}

/// The task running on this thread.
pub(super) use crate::sys::static_tls::Current as CURRENT;
/// The worker driven by this thread (initial-exec TLS: `sys::static_tls`).
pub(super) use crate::sys::static_tls::WorkerWord as WORKER;

/// A coroutine of this thread's worker is parked on fds while this lives
/// (`park.rs`, `chan_select.rs`): counted in the worker's `fd_parks`, and
/// marked so in the task (`Task::fd_parked`). A task changes worker only
/// while suspended: preempted (`shed.rs`, in no park), or woken and not
/// yet resumed (`balance.rs`), when the old home uncounts it and clears
/// the mark, so that the drop, run on the new worker, leaves both counts
/// alone: each count moves on its own worker's thread. A handler that
/// leaves the park by `longjmp` skips the drop: the count stays high and
/// the worker's loop only loses its solo waits, never a wake-up.
pub(super) struct FdPark(Option<(&'static Worker, *const Task)>);

impl FdPark {
    pub(super) fn begin() -> Self {
        let (w, t) = (current_worker(), current_task_ptr());
        match w {
            Some(w) if !t.is_null() => {
                w.local.fd_parks.set(w.local.fd_parks.get() + 1);
                // SAFETY: the running task, held by the scheduler while it
                // runs; its home-only fields are this thread's.
                unsafe { (*t).fd_parked.set(true) };
                FdPark(Some((w, t)))
            }
            _ => FdPark(None),
        }
    }
}

impl Drop for FdPark {
    fn drop(&mut self) {
        if let Some((w, t)) = self.0 {
            // SAFETY: the task that began the park, running again (the
            // park is over), on whichever worker now holds it.
            if unsafe { (*t).fd_parked.replace(false) } {
                w.local
                    .fd_parks
                    .set(w.local.fd_parks.get().saturating_sub(1));
            }
        }
    }
}

/// The worker driven by this thread.
#[inline]
pub fn current_worker() -> Option<&'static Worker> {
    let p = WORKER::get() as *const Worker;
    // SAFETY: workers are leaked at creation and never freed.
    (!p.is_null()).then(|| unsafe { &*p })
}

impl Worker {
    /// Sets the running task of the worker's thread (`CURRENT`) from the
    /// scheduler, through the slot `attach` found.
    #[inline]
    pub(super) fn set_current_task(&self, t: *const Task) {
        let slot = self.local.current_slot.get();
        debug_assert!(!slot.is_null(), "a worker runs tasks once attached");
        // SAFETY: `slot` is this thread's own `CURRENT` (`Local` is only
        // used by the thread that attached), and threads that drive
        // workers live as long as the process (a forked child keeps the
        // forking thread, with its thread-locals at the same addresses).
        unsafe { (*slot).set(t) };
    }

    /// The worker thread's overflow record (`ctx::overflow`).
    #[inline]
    pub(super) fn overflow_record(&self) -> &Cell<*const overflow::Running> {
        let slot = self.local.overflow_slot.get();
        debug_assert!(!slot.is_null(), "a worker runs tasks once attached");
        // SAFETY: as in `set_current_task`.
        unsafe { &*slot }
    }
}

/// The block cache of the worker this thread drives (null: none), for
/// the heap (`sys::block_cache`). A coroutine with a TLS block of its own
/// finds its worker too: it sets its copy of `WORKER` when it starts.
pub(super) fn worker_block_cache() -> *const BlockCache {
    current_worker().map_or(std::ptr::null(), |w| &w.local.blocks as *const BlockCache)
}

/// The task running on this thread, if any. Null while the runtime itself
/// runs (scheduler loop, or inside a park), so hooks reached from runtime
/// code pass straight through.
#[inline]
pub fn current_task_ptr() -> *const Task {
    CURRENT::get() as *const Task
}

#[inline]
pub(super) fn set_current(t: *const Task) {
    CURRENT::set(t as usize);
}

impl Worker {
    pub(super) fn new(index: usize) -> std::io::Result<&'static Worker> {
        let fresh = Deque::new_fifo();
        // The epoll instance and eventfd are opened when the worker's
        // thread starts (`runtime::start` for worker 0, `ensure_started`
        // for the others): two fds each, which on a machine of 64 CPUs
        // were 128 fds in every process, most of them never used.
        let (wake, epoll) = (EventFd::unopened(), Epoll::unopened());
        let w = Box::new(Worker {
            index,
            inbox: ForkInjector::new(),
            handoff: AtomicPtr::new(std::ptr::null_mut()),
            placed: ForkInjector::new(),
            fresh_stealer: fresh.stealer(),
            sleeping: AtomicBool::new(false),
            napping: AtomicBool::new(false),
            queued: AtomicU32::new(0),
            cpu: AtomicI32::new(-1),
            wake,
            unstarted_epoll: AtomicI32::new(-1),
            epoll_fd: AtomicI32::new(-1),
            load: super::load::Load::default(),
            tid: AtomicI32::new(0),
            running_id: AtomicU64::new(0),
            own_wait: AtomicU32::new(0),
            running_since: AtomicU64::new(0),
            running_start_addr: AtomicUsize::new(0),
            woken_waiting: AtomicBool::new(false),
            switches: AtomicU64::new(0),
            started: AtomicBool::new(false),
            dead: AtomicBool::new(false),
            sig_epoch: AtomicU64::new(0),
            _shared: LineBreak,
            _own: LineBreak,
            _local: LineBreak,
            local: Local {
                run_queue: RefCell::new(RunQueue::new()),
                fresh,
                timers: RefCell::new(Timers::new()),
                stacks: RefCell::new(StackPool::new()),
                epoll: Cell::new(epoll),
                until_poll: Cell::new(super::run_loop::POLL_EVERY as u32),
                fork_join: Cell::new(0),
                busy_spawn_at: Cell::new(u64::MAX),
                tp: Cell::new(0),
                stale: Cell::new(false),
                clock: Cell::new(crate::sys::now_ns()),
                current_slot: Cell::new(std::ptr::null()),
                tls_offsets: Cell::new(TlsOffsets::default()),
                watches_fds: Cell::new(false),
                fd_parks: Cell::new(0),
                balance_skip: Cell::new(0),
                overflow_slot: Cell::new(std::ptr::null()),
                ids: Cell::new((0, 0)),
                blocks: BlockCache::new(),
                slice_mark: Cell::new(super::slice::NONE),
            },
        });
        Ok(Box::leak(w))
    }

    /// Wakes the worker if it sleeps (or is about to).
    #[inline]
    pub fn notify(&self) {
        // Pairs with the fence in `poll`: the push before this call and the
        // worker's `sleeping` store cannot both be missed.
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) && self.sleeping.swap(false, Ordering::SeqCst) {
            self.wake.signal();
        }
    }

    pub(super) fn has_shared_work(&self, rt: &Runtime) -> bool {
        self.has_remote()
            || !self.placed.is_empty()
            || !rt.global.is_empty()
            || super::sigdispatch::tick_needed(&self.sig_epoch)
    }

    /// Makes this thread drive the worker (sets thread-locals).
    pub(super) fn attach(&'static self) {
        // First, before any thread-local: the spawn that started this
        // thread waits for it (`proc_view::worker_started`).
        self.tid.store(crate::sys::gettid(), Ordering::Release);
        WORKER::set(self as *const Worker as usize);
        self.local
            .current_slot
            .set(CURRENT::addr() as *const Cell<*const Task>);
        self.local.overflow_slot.set(overflow::running_slot());
        self.local.tp.set(tls::thread_pointer());
        self.local.tls_offsets.set(TlsOffsets::of_this_thread(
            self.local.tp.get(),
            self.local.current_slot.get() as usize,
        ));
        crate::ctx::setxid::note_worker_thread(self.index);
        overflow::install_altstack();
        super::worker_stack::note(self.index);
    }

    /// Notes the CPU this thread runs on now, for spinning workers
    /// (`cpu`). glibc answers from the thread's rseq area (a load) on the
    /// worker's own thread pointer, from the kernel on a coroutine's.
    #[inline]
    pub(super) fn note_cpu(&self) -> i32 {
        // SAFETY: sched_getcpu takes no argument and touches no memory of
        // ours.
        let cpu = unsafe { libc::sched_getcpu() };
        self.cpu.store(cpu, Ordering::Relaxed);
        cpu
    }

    pub(super) fn timers(&self) -> &RefCell<Timers<Waiter>> {
        &self.local.timers
    }

    pub(super) fn push_local(&self, t: TaskRef) {
        self.local.run_queue.borrow_mut().push(t);
        self.woken_waiting.store(true, Ordering::Relaxed);
    }

    /// Queues a task this worker's monitor preempted: behind the others,
    /// for a slice at most, and behind the preempted ones that computed
    /// less (`run_queue.rs`). Called just after the task's run, while
    /// `running_since` still holds its start (the clock of the last poll:
    /// a run is counted from up to one poll before it began).
    pub(super) fn push_preempted(&self, t: TaskRef) {
        let ran = crate::sys::now_ns().saturating_sub(self.running_since.load(Ordering::Relaxed));
        let mut q = self.local.run_queue.borrow_mut();
        let vrun = t.vruntime.get().max(q.preempted_floor()) + ran;
        t.vruntime.set(vrun);
        q.push_preempted(t, vrun);
    }

    /// Queues a task of this worker made runnable by another thread (any
    /// thread; the caller then calls `notify`): in the hand-off slot if it
    /// is free, else in the inbox.
    pub(super) fn push_remote(&self, t: TaskRef) {
        let p = Arc::into_raw(t) as *mut Task;
        match self.handoff.compare_exchange(
            std::ptr::null_mut(),
            p,
            Ordering::SeqCst,
            Ordering::Relaxed,
        ) {
            Ok(_) => {}
            // SAFETY: `p` came from `Arc::into_raw` just above and was not
            // stored: this takes its count back.
            Err(_) => self.inbox.push(unsafe { Arc::from_raw(p) }),
        }
    }

    /// Whether a task woken from another thread waits here.
    #[inline]
    pub(super) fn has_remote(&self) -> bool {
        !self.handoff.load(Ordering::SeqCst).is_null() || !self.inbox.is_empty()
    }

    /// In a forked child: forgets the parent's task in the hand-off slot
    /// (leaked, never run, as every queued task of the parent's world).
    /// The slot is written by one compare-exchange, so a fork in the middle
    /// of a push leaves it whole or empty.
    pub(super) fn forget_handoff_after_fork(&self) {
        crate::sys::ForkReset::reset_to(&self.handoff, std::ptr::null_mut());
    }

    /// A task woken from another thread: the hand-off slot first, then the
    /// inbox (any thread may call it; the owner, or a forked child's reset).
    pub(super) fn take_remote(&self) -> Option<TaskRef> {
        if !self.handoff.load(Ordering::Relaxed).is_null() {
            let p = self.handoff.swap(std::ptr::null_mut(), Ordering::SeqCst);
            if !p.is_null() {
                // SAFETY: a non-null slot holds a count given up by
                // `Arc::into_raw` in `push_remote`; the swap took it.
                return Some(unsafe { Arc::from_raw(p) });
            }
        }
        steal_one(&self.inbox)
    }

    /// Queues a never-run task here, stealable, with its turn in the run
    /// queue (`run_queue.rs`). Only the worker's own thread.
    pub(super) fn push_fresh(&self, t: TaskRef) {
        self.local.fresh.push(t);
        self.local.run_queue.borrow_mut().push_fresh_turn();
        self.woken_waiting.store(true, Ordering::Relaxed);
    }

    /// A worker other than `me`, started and alive, asleep in its poll for
    /// lack of work: where a thread may be moved (`shed.rs`, and the
    /// monitor's `waits_beside_idle`). SeqCst on `sleeping`, as the sleeper
    /// announces it (`netpoller.rs`).
    pub(super) fn idle_other_than(&self, me: usize) -> bool {
        self.live_other_than(me)
            && self.sleeping.load(Ordering::SeqCst)
            && self.running_id.load(Ordering::Relaxed) == 0
    }

    /// A worker other than `me` that runs and may be given threads (not a
    /// forked child's dead one): `idle_other_than`, `balance.rs`.
    pub(super) fn live_other_than(&self, me: usize) -> bool {
        self.index != me
            && self.started.load(Ordering::Acquire)
            && !self.dead.load(Ordering::Relaxed)
    }

    /// Whether anything else could run here now (for a yield).
    pub fn has_other_work(&self) -> bool {
        !self.local.run_queue.borrow().is_empty()
            || !self.local.fresh.is_empty()
            || self.has_remote()
            || !self.placed.is_empty()
    }

    /// Moves up to `max` never-run tasks queued here to worker `to`'s
    /// queue (any thread may); returns how many moved (0: none left). The
    /// two workers' load counts and `to`'s wake-up are settled once for the
    /// batch: per task they were two read-modify-writes of lines both
    /// workers write and a SeqCst fence, a sixth of a thief's CPU when
    /// 100,000 new coroutines waited on a busy spawner (perf, 2 workers).
    /// The tasks are dequeued first, up to `MOVE_CHUNK` at a time, and
    /// their lines asked for at once (`prefetch_task`): claiming each
    /// waited for its own miss before.
    pub(super) fn move_never_run(&'static self, to: &'static Worker, max: usize) -> usize {
        // Counted on `to` before its tasks can run (and end) there, so its
        // count never drops below what it runs; the excess goes after.
        to.load.add(max);
        let mut moved = 0;
        let mut chunk: [Option<TaskRef>; MOVE_CHUNK] = [const { None }; MOVE_CHUNK];
        'more: while moved < max {
            let want = (max - moved).min(MOVE_CHUNK);
            let mut got = 0;
            while got < want {
                let t = match self.fresh_stealer.steal() {
                    crossbeam_deque::Steal::Success(t) => t,
                    crossbeam_deque::Steal::Retry => continue,
                    crossbeam_deque::Steal::Empty => match steal_one(&self.placed) {
                        Some(t) => t,
                        None => break,
                    },
                };
                super::prefetch::prefetch_task(&t);
                chunk[got] = Some(t);
                got += 1;
            }
            for t in chunk[..got].iter_mut().filter_map(Option::take) {
                // A stale entry (a joiner took the task) is dropped.
                if t.reserve(self.index, to.index) {
                    t.set_home(to.index);
                    to.placed.push(t);
                    moved += 1;
                }
            }
            if got < want {
                break 'more; // the queues ran dry
            }
        }
        to.load.sub(max - moved);
        if moved > 0 {
            self.load.sub(moved);
            to.notify();
        }
        moved
    }
}

/// Never-run tasks dequeued by `move_never_run` before it claims them.
const MOVE_CHUNK: usize = 16;

/// One task from an injector, retrying while it says so.
pub(super) fn steal_one(q: &Injector<TaskRef>) -> Option<TaskRef> {
    loop {
        match q.steal() {
            crossbeam_deque::Steal::Success(t) => return Some(t),
            crossbeam_deque::Steal::Retry => continue,
            crossbeam_deque::Steal::Empty => return None,
        }
    }
}

/// Marks corun's own fds so the program cannot close them.
pub(super) fn mark_runtime_fds(fds: &[i32]) {
    for &fd in fds {
        if let Some(e) = fdtable::get(fd) {
            fdtable::mark_runtime(fd, e);
        }
    }
}
