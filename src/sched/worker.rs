//! Workers: kernel threads that each run a scheduler loop.
//!
//! # Mechanism
//!
//! A worker owns a run queue, a timer heap, a stack pool and an epoll
//! instance (its netpoller). Worker 0 is the program's main thread: the
//! `__libc_start_main` hook turns `main` into the first task and drives
//! worker 0 until that task is done. Workers 1..N are started with the real
//! `pthread_create` and loop forever.
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
//! - `inbox`: tasks of this worker made runnable by other threads (a
//!   netpoller of another worker, a mutex unlocked elsewhere). The owner
//!   moves them to `run_queue`.
//!
//! Placement: a spawn goes to the least loaded worker (load = live tasks
//! homed there); ties stay local, which keeps spawn+join on one thread cheap.
//!
//! Sleeping and waking follow the announce-then-recheck protocol: an idle
//! worker sets `sleeping`, re-checks its shared queues, and only then blocks
//! in epoll; a producer pushes first and then, if it finds `sleeping` set,
//! clears it and writes the worker's eventfd. Both sides use SeqCst, so at
//! least one of them sees the other and no wake-up is lost; the eventfd is
//! written only when the worker really may sleep.
//!
//! The loop: run a task from the queues; every 61 tasks, or when there is
//! nothing to run, poll the netpoller (without blocking when work remains)
//! and fire expired timers; when idle, steal never-run tasks from the
//! others, then sleep until the next timer.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use crossbeam_deque::{Injector, Steal, Stealer, Worker as Deque};

use crate::ctx::{overflow, tls, Coroutine, Resumed, StackPool, Yielder};
use crate::sys::epoll::{Epoll, EventFd};

use super::fdtable;
use super::run_queue::RunQueue;
use super::task::{Entry, Task, TaskRef, DONE, NO_HOME};
use super::timers::Timers;
use super::waiter::Waiter;

/// epoll data of the worker's own eventfd.
const WAKE_KEY: u64 = u64::MAX;
/// Run this many tasks between netpoller checks when busy.
const POLL_EVERY: u64 = 61;
const EVENTS: usize = 256;
/// How long an idle worker watches for work before sleeping, and how often
/// it looks at its epoll meanwhile.
const SPIN_NS: u64 = 50_000;
const SPIN_POLL_NS: u64 = 5_000;
/// Never-run tasks of a worker held by one task this long may be stolen.
const STEAL_AFTER_NS: u64 = 1_000_000;
/// A worker running one task for longer than this is not given new tasks.
const BUSY_NS: u64 = 2_000_000;
/// Idle stacks released per idle moment, and the pause between batches.
const SCAVENGE_BATCH: usize = 256;
const SCAVENGE_PAUSE_NS: u64 = 5_000_000;

pub struct Worker {
    pub index: usize,
    inbox: Injector<TaskRef>,
    placed: Injector<TaskRef>,
    fresh_stealer: Stealer<TaskRef>,
    sleeping: AtomicBool,
    wake: EventFd,
    /// Live tasks homed on this worker (placement heuristic).
    pub load: AtomicUsize,
    /// Kernel thread id, once started.
    pub tid: AtomicI32,
    /// Task running now (0: in the scheduler) and since when (ns); read by
    /// the watchdog.
    pub running_id: AtomicU64,
    pub running_since: AtomicU64,
    pub running_start_addr: AtomicUsize,
    /// Tasks run (a heartbeat for the watchdog and for stats).
    pub switches: AtomicU64,
    /// The worker's thread runs (workers start on first use).
    pub started: AtomicBool,
    /// In a forked child, every worker but the forking one: it has no
    /// thread and never gets one.
    pub dead: AtomicBool,
    /// Generation of the kernel signal mask this worker's thread has
    /// (`signals.rs`, `sigmask.rs`).
    pub sig_epoch: AtomicU64,
    local: Local,
}

/// State touched only by the worker's own thread.
struct Local {
    run_queue: RefCell<RunQueue<TaskRef>>,
    fresh: Deque<TaskRef>,
    timers: RefCell<Timers<Waiter>>,
    stacks: RefCell<StackPool>,
    epoll: Cell<Epoll>,
    tick: Cell<u64>,
    /// The thread pointer of the worker's own thread (glibc's), put back
    /// after running a coroutine that has its own.
    tp: Cell<usize>,
    /// In a forked child: `epoll` and the eventfd are the parent's until
    /// `renewed` makes new ones.
    stale: Cell<bool>,
    /// Monotonic time read at the last poll: switches stamp `running_since`
    /// with it instead of reading the clock each time (a vDSO clock read
    /// was 20% of a yield round trip).
    clock: Cell<u64>,
}

// SAFETY: `local` is only used by the thread whose WORKER thread-local
// points at this worker (checked by `current_worker`, the only way in);
// every other field is thread-safe.
unsafe impl Sync for Worker {}
// SAFETY: as above; the worker is created on one thread and handed to the
// thread that drives it before any use of `local`.
unsafe impl Send for Worker {}

pub struct Runtime {
    pub workers: Vec<&'static Worker>,
    global: Injector<TaskRef>,
    pub config: crate::config::Config,
}

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// The second level of the stack pool, shared by all threads. Each worker
/// keeps up to LOCAL_STACKS idle stacks of a size for itself (no lock);
/// beyond that they go here, and a worker whose own pool is empty takes from
/// here before mapping a slab. Without it, stacks drained one way: taken
/// from the spawner's pool, returned to the pool of the worker that ran the
/// coroutine, so the spawner kept mapping slabs and the runner kept
/// releasing pages (2 madvise per cross-worker spawn+join, seen by strace).
static SHARED_STACKS: std::sync::Mutex<StackPool> = std::sync::Mutex::new(StackPool::new());
/// In a forked child whose parent held the shared pool's lock at the fork:
/// the lock can never be taken again, so map slabs directly.
static SHARED_STACKS_BROKEN: AtomicBool = AtomicBool::new(false);
/// Idle stacks of a size a worker keeps for itself.
const LOCAL_STACKS: usize = crate::ctx::stack::HOT;

/// A stack from the shared pool (or a new slab).
fn shared_stack(size: usize) -> std::io::Result<crate::ctx::GuardedStack> {
    if SHARED_STACKS_BROKEN.load(Ordering::Relaxed) {
        return crate::ctx::GuardedStack::map_slab(size)?
            .pop()
            .ok_or_else(|| std::io::Error::from_raw_os_error(libc::ENOMEM));
    }
    fdtable::lock(&SHARED_STACKS).get(size)
}

/// In a forked child: the shared pool's lock may be held by a thread that
/// does not exist there.
pub(super) fn shared_stacks_after_fork() {
    if SHARED_STACKS.try_lock().is_err() {
        SHARED_STACKS_BROKEN.store(true, Ordering::Relaxed);
    }
}

std::thread_local! {
    static WORKER: Cell<*const Worker> = const { Cell::new(std::ptr::null()) };
    static CURRENT: Cell<*const Task> = const { Cell::new(std::ptr::null()) };
}

/// The runtime, if started.
#[inline]
pub fn runtime() -> Option<&'static Runtime> {
    RUNTIME.get()
}

/// The worker driven by this thread.
#[inline]
pub fn current_worker() -> Option<&'static Worker> {
    let p = WORKER.get();
    // SAFETY: workers are leaked at creation and never freed.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// The task running on this thread, if any. Null while the runtime itself
/// runs (scheduler loop, or inside a park), so hooks reached from runtime
/// code pass straight through.
#[inline]
pub fn current_task_ptr() -> *const Task {
    CURRENT.get()
}

#[inline]
pub(super) fn set_current(t: *const Task) {
    CURRENT.set(t);
}

impl Worker {
    fn new(index: usize) -> std::io::Result<&'static Worker> {
        let fresh = Deque::new_fifo();
        let epoll = Epoll::new()?;
        let wake = EventFd::new()?;
        epoll
            .register(wake.fd(), WAKE_KEY)
            .map_err(std::io::Error::from_raw_os_error)?;
        for fd in [epoll.fd(), wake.fd()] {
            if let Some(e) = fdtable::get(fd) {
                e.runtime.store(true, Ordering::Relaxed);
            }
        }
        let w = Box::new(Worker {
            index,
            inbox: Injector::new(),
            placed: Injector::new(),
            fresh_stealer: fresh.stealer(),
            sleeping: AtomicBool::new(false),
            wake,
            load: AtomicUsize::new(0),
            tid: AtomicI32::new(0),
            running_id: AtomicU64::new(0),
            running_since: AtomicU64::new(0),
            running_start_addr: AtomicUsize::new(0),
            switches: AtomicU64::new(0),
            started: AtomicBool::new(false),
            dead: AtomicBool::new(false),
            sig_epoch: AtomicU64::new(0),
            local: Local {
                run_queue: RefCell::new(RunQueue::new()),
                fresh,
                timers: RefCell::new(Timers::new()),
                stacks: RefCell::new(StackPool::new()),
                epoll: Cell::new(epoll),
                tick: Cell::new(0),
                tp: Cell::new(0),
                stale: Cell::new(false),
                clock: Cell::new(crate::sys::now_ns()),
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

    fn has_shared_work(&self, rt: &Runtime) -> bool {
        !self.inbox.is_empty()
            || !self.placed.is_empty()
            || !rt.global.is_empty()
            || super::sigdispatch::tick_needed(&self.sig_epoch)
    }

    /// Makes this thread drive the worker (sets thread-locals).
    fn attach(&'static self) {
        WORKER.set(self);
        self.local.tp.set(tls::thread_pointer());
        self.tid.store(crate::sys::gettid(), Ordering::Relaxed);
        overflow::install_altstack();
    }

    /// The epoll instance fds are registered with by tasks of this worker.
    pub(super) fn epoll(&self) -> Epoll {
        self.renewed();
        self.local.epoll.get()
    }

    /// In a forked child, before the first use of the worker's epoll: a new
    /// epoll instance and eventfd (the inherited ones are the parent's).
    #[inline]
    fn renewed(&self) {
        if self.local.stale.get() {
            self.renew();
        }
    }

    #[cold]
    fn renew(&self) {
        let made = (|| -> std::io::Result<Epoll> {
            let epoll = Epoll::new()?;
            self.wake.renew()?;
            epoll
                .register(self.wake.fd(), WAKE_KEY)
                .map_err(std::io::Error::from_raw_os_error)?;
            Ok(epoll)
        })();
        let epoll = match made {
            Ok(e) => e,
            Err(e) => {
                crate::sys::raw_stderr(
                    format!("corun: forked child cannot rebuild its scheduler: {e}\n").as_bytes(),
                );
                // SAFETY: ending the child; its state would be shared with the parent.
                unsafe { libc::_exit(127) };
            }
        };
        for fd in [epoll.fd(), self.wake.fd()] {
            if let Some(e) = fdtable::get(fd) {
                e.runtime.store(true, Ordering::Relaxed);
            }
        }
        // The parent's epoll fd stays open in the child (closing it would
        // not affect the parent, but it is simply no longer used).
        self.local.epoll.set(epoll);
        self.local.stale.set(false);
    }

    pub(super) fn timers(&self) -> &RefCell<Timers<Waiter>> {
        &self.local.timers
    }

    pub(super) fn push_local(&self, t: TaskRef) {
        self.local.run_queue.borrow_mut().push(t);
    }

    /// Whether anything else could run here now (for a yield).
    pub fn has_other_work(&self) -> bool {
        !self.local.run_queue.borrow().is_empty()
            || !self.local.fresh.is_empty()
            || !self.inbox.is_empty()
            || !self.placed.is_empty()
    }

    fn next_task(&self, rt: &Runtime) -> Option<TaskRef> {
        let tick = self.local.tick.get().wrapping_add(1);
        self.local.tick.set(tick);
        if tick.is_multiple_of(POLL_EVERY) {
            // Fairness: shared queues and never-run tasks get a turn even
            // when the local queue never drains; so do tasks woken from
            // other threads (the blocking pool, other workers), which join
            // the back of the local queue.
            self.drain_inbox();
            if let Some(t) = steal_one(&self.placed).or_else(|| steal_one(&rt.global)) {
                return Some(t);
            }
            if let Some(t) = self.local.fresh.pop() {
                return Some(t);
            }
        }
        if let Some(t) = self.local.run_queue.borrow_mut().pop() {
            return Some(t);
        }
        if !self.inbox.is_empty() {
            self.drain_inbox();
            if let Some(t) = self.local.run_queue.borrow_mut().pop() {
                return Some(t);
            }
        }
        if let Some(t) = self.local.fresh.pop() {
            return Some(t);
        }
        steal_one(&self.placed).or_else(|| steal_one(&rt.global))
    }

    /// Moves up to 256 tasks woken from other threads to the back of the
    /// local run queue.
    fn drain_inbox(&self) {
        if self.inbox.is_empty() {
            return;
        }
        let mut rq = self.local.run_queue.borrow_mut();
        for _ in 0..256 {
            match steal_one(&self.inbox) {
                Some(t) => rq.push(t),
                None => break,
            }
        }
    }

    /// Takes one never-run task queued on this worker (any thread may).
    pub(super) fn take_never_run(&self) -> Option<TaskRef> {
        loop {
            match self.fresh_stealer.steal() {
                Steal::Success(t) => {
                    self.load.fetch_sub(1, Ordering::Relaxed);
                    return Some(t);
                }
                Steal::Retry => continue,
                Steal::Empty => break,
            }
        }
        let t = steal_one(&self.placed)?;
        self.load.fetch_sub(1, Ordering::Relaxed);
        Some(t)
    }

    /// In a forked child, on the forking thread: this worker keeps only the
    /// task that forked. Its epoll and eventfd are shared with the parent
    /// (inherited fds), so it gets new ones; every queued task and timer
    /// belongs to the parent's world and is dropped (leaked, never run: a
    /// suspended coroutine cannot be unwound), as the other threads of a
    /// forked process do not exist in the child.
    ///
    /// The new epoll and eventfd are made when first needed (`renewed`): a
    /// child whose only coroutine makes its calls as natively never waits
    /// on them, and pays none of it.
    pub(super) fn reset_after_fork(&'static self) -> std::io::Result<()> {
        self.local.stale.set(true);
        let drop_all = |t: TaskRef| std::mem::forget(t);
        while let Some(t) = self.local.run_queue.borrow_mut().pop() {
            drop_all(t);
        }
        while let Some(t) = self.local.fresh.pop() {
            drop_all(t);
        }
        while let Some(t) = steal_one(&self.inbox) {
            drop_all(t);
        }
        while let Some(t) = steal_one(&self.placed) {
            drop_all(t);
        }
        std::mem::forget(self.local.timers.replace(Timers::new()));
        self.load.store(1, Ordering::Relaxed);
        self.sleeping.store(false, Ordering::Relaxed);
        Ok(())
    }

    /// Queues a never-run task here from another thread.
    pub(super) fn place_remote(&'static self, t: TaskRef) {
        self.load.fetch_add(1, Ordering::Relaxed);
        t.set_home(self.index);
        self.placed.push(t);
        self.notify();
    }

    /// Takes a never-run task from another worker that is busy: one that
    /// has been running the same task for a while, so its queue waits. An
    /// idle or switching worker runs its own queue soon enough, and taking
    /// its tasks would undo placement.
    fn steal_from_others(&self, rt: &Runtime) -> Option<TaskRef> {
        let n = rt.workers.len();
        let now = crate::sys::now_ns();
        for k in 1..n {
            let v = rt.workers[(self.index + k) % n];
            let busy = v.running_id.load(Ordering::Relaxed) != 0
                && now.saturating_sub(v.running_since.load(Ordering::Relaxed)) > STEAL_AFTER_NS;
            if !busy {
                continue;
            }
            let t = loop {
                match v.fresh_stealer.steal() {
                    Steal::Success(t) => break Some(t),
                    Steal::Retry => continue,
                    Steal::Empty => break steal_one(&v.placed),
                }
            };
            if let Some(t) = t {
                v.load.fetch_sub(1, Ordering::Relaxed);
                self.load.fetch_add(1, Ordering::Relaxed);
                t.set_home(self.index);
                return Some(t);
            }
        }
        None
    }

    /// A stack: this worker's idle ones first, then the shared pool.
    fn get_stack(&self, size: usize) -> std::io::Result<crate::ctx::GuardedStack> {
        if let Some(s) = self.local.stacks.borrow_mut().take_idle(size) {
            return Ok(s);
        }
        shared_stack(size)
    }

    /// Gives a finished coroutine's stack back: kept here up to
    /// LOCAL_STACKS of its size, else to the shared pool.
    fn put_stack(&self, s: crate::ctx::GuardedStack) {
        {
            let mut local = self.local.stacks.borrow_mut();
            if local.idle(s.usable_size()) < LOCAL_STACKS
                || SHARED_STACKS_BROKEN.load(Ordering::Relaxed)
            {
                local.put(s);
                return;
            }
        }
        fdtable::lock(&SHARED_STACKS).put(s);
    }

    /// Runs one task until it suspends or finishes.
    fn run_task(&'static self, t: TaskRef) {
        let tp = Arc::as_ptr(&t);
        // SAFETY: only this worker touches `coro` and `stack` of a task it
        // runs (the task is out of every queue while it runs).
        let coro = unsafe { &mut *t.coro.get() };
        if coro.is_none() {
            t.set_home(self.index);
            // SAFETY: as above.
            let stack = unsafe { (*t.stack.get()).take() };
            let stack = match stack {
                Some(s) => s,
                None => match self.get_stack(t.stack_size) {
                    Ok(s) => s,
                    Err(_) => {
                        crate::sys::raw_stderr(
                            b"corun: cannot map a coroutine stack; task dropped\n",
                        );
                        self.finish(t, true);
                        return;
                    }
                },
            };
            if t.ident.own_tls.get() && t.ident.tp.get() == 0 {
                match tls::ThreadBlock::new(self.tid.load(Ordering::Relaxed)) {
                    Some(b) => {
                        t.ident.tp.set(b.tp());
                        t.ident.tls.set(Some(b));
                    }
                    None => crate::sys::raw_stderr(
                        b"corun: no TLS block could be made; this thread shares its worker's\n",
                    ),
                }
            }
            let wp: *const Worker = self;
            let (guard, top) = (stack.guard_range(), stack.top());
            *coro = Some(Coroutine::new(stack, move |y: &Yielder| {
                // SAFETY: the scheduler holds a TaskRef while the task runs,
                // and the body only runs while the task runs.
                let task = unsafe { &*tp };
                task.yielder.set(y);
                if task.ident.tp.get() != 0 {
                    // On the coroutine's own thread pointer: the runtime's
                    // thread-locals read here are this coroutine's copies,
                    // set once (it never changes worker, and its stack
                    // never moves); then libc's per-thread state.
                    WORKER.set(wp);
                    CURRENT.set(tp);
                    overflow::set_running(task.id, guard, top);
                    tls::start_thread();
                }
                // A signal made pending for it before it ran.
                super::signals::run_pending(task);
                // SAFETY: `entry` is only touched on the home worker, here.
                let entry = unsafe { (*task.entry.get()).take() };
                let r = match entry {
                    Some(Entry::C { f, arg }) => f(arg),
                    Some(Entry::Rust(f)) => f(),
                    None => std::ptr::null_mut(),
                };
                fdtable::lock(&task.join).result = r as usize;
            }));
        }
        let co = coro.as_mut().expect("coroutine just made");
        t.set_running();
        let (guard, top) = co.bounds();
        overflow::set_running(t.id, guard, top);
        self.running_id.store(t.id, Ordering::Relaxed);
        self.running_start_addr
            .store(t.start_addr, Ordering::Relaxed);
        self.running_since
            .store(self.local.clock.get(), Ordering::Relaxed);
        CURRENT.set(tp);
        let own_tp = t.ident.tp.get();
        let r = if own_tp != 0 {
            resume_as(co, own_tp, self.local.tp.get())
        } else {
            co.resume()
        };
        CURRENT.set(std::ptr::null());
        self.running_id.store(0, Ordering::Relaxed);
        overflow::clear_running();
        // Only this thread writes it: no read-modify-write needed.
        self.switches
            .store(self.switches.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        match r {
            Resumed::Suspended if t.yielding.get() => {
                t.yielding.set(false);
                t.set_runnable();
                self.push_local(t);
            }
            Resumed::Suspended if t.exiting.get() => {
                // SAFETY: pthread_exit suspended for good; its C frames own
                // nothing corun must drop (C has no destructors to run).
                unsafe { co.abandon() };
                self.finish(t, false);
            }
            Resumed::Suspended => {
                if t.finish_park() {
                    self.push_local(t);
                }
            }
            Resumed::Finished => self.finish(t, false),
        }
    }

    fn finish(&self, t: TaskRef, failed: bool) {
        super::fork::task_ended(t.id);
        t.ident.tp.set(0);
        if let Some(b) = t.ident.tls.take() {
            b.release();
        }
        super::signals::task_ended(&t);
        // SAFETY: the task no longer runs; only its home worker touches `coro`.
        if let Some(c) = unsafe { (*t.coro.get()).take() } {
            self.put_stack(c.into_stack());
        }
        t.set_done();
        self.load.fetch_sub(1, Ordering::Relaxed);
        let joiner = {
            let mut j = fdtable::lock(&t.join);
            j.done = true;
            if failed {
                j.result = 0;
            }
            j.joiner.take()
        };
        if let Some(w) = joiner {
            w.wake();
        }
    }

    /// Processes netpoller events and expired timers; blocks up to the next
    /// timer when `block` is set.
    fn poll(&'static self, rt: &Runtime, block: bool) {
        self.renewed();
        let now = crate::sys::now_ns();
        self.local.clock.set(now);
        let mut timeout = Some(0);
        if block {
            timeout = self
                .local
                .timers
                .borrow()
                .next_deadline()
                .map(|d| d.saturating_sub(now));
            // Idle: return the pages of the shared pool's idle stacks, a
            // batch at a time, coming back soon for the next batch (a worker
            // busy elsewhere holds the lock: skip this time).
            if let Ok(mut pool) = SHARED_STACKS.try_lock() {
                if pool.needs_scavenge() {
                    pool.scavenge(SCAVENGE_BATCH);
                    if pool.needs_scavenge() {
                        timeout =
                            Some(timeout.map_or(SCAVENGE_PAUSE_NS, |t| t.min(SCAVENGE_PAUSE_NS)));
                    }
                }
            }
            self.sleeping.store(true, Ordering::SeqCst);
            std::sync::atomic::fence(Ordering::SeqCst);
            if self.has_shared_work(rt) || timeout == Some(0) {
                self.sleeping.store(false, Ordering::SeqCst);
                timeout = Some(0);
            }
        }
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; EVENTS];
        let n = self.local.epoll.get().wait(&mut evs, timeout);
        if block {
            self.sleeping.store(false, Ordering::SeqCst);
            self.local.clock.set(crate::sys::now_ns());
        }
        for ev in &evs[..n] {
            let (data, events) = (ev.u64, ev.events);
            if data == WAKE_KEY {
                self.wake.drain();
                continue;
            }
            if let Some(e) = fdtable::peek(data as u32 as i32) {
                e.on_event((data >> 32) as u32, events);
            }
        }
        self.fire_timers();
    }

    fn fire_timers(&self) {
        if self.local.timers.borrow().is_empty() {
            return;
        }
        let now = crate::sys::now_ns();
        loop {
            let w = self.local.timers.borrow_mut().pop_expired(now);
            match w {
                Some(w) => w.wake(),
                None => break,
            }
        }
    }

    /// The scheduler loop; returns when `stop` says so (worker 0, when main
    /// is done) or never.
    fn run(&'static self, stop: &dyn Fn() -> bool) {
        let rt = runtime().expect("runtime started before its workers");
        loop {
            super::sigdispatch::worker_tick(&self.sig_epoch);
            if stop() {
                return;
            }
            if let Some(t) = self.next_task(rt) {
                self.run_task(t);
                if self.local.tick.get().is_multiple_of(POLL_EVERY) {
                    self.poll(rt, false);
                }
                continue;
            }
            self.poll(rt, false);
            if !self.local.run_queue.borrow().is_empty() {
                continue;
            }
            if let Some(t) = self.steal_from_others(rt) {
                self.run_task(t);
                continue;
            }
            if stop() {
                return;
            }
            if self.spin_for_work(rt) {
                continue;
            }
            self.poll(rt, true);
        }
    }

    /// Before sleeping, watch the shared queues for a few microseconds if
    /// another worker is awake: handing work to a worker asleep in
    /// epoll costs an eventfd write and a kernel wake-up (~50 us on a VM,
    /// the unpinned eventfd ping-pong baseline of `make bench`), which
    /// dominated spawn+join and join-style wake-ups across workers. Go's
    /// idle Ps spin the same way. Returns true if work arrived.
    fn spin_for_work(&'static self, rt: &Runtime) -> bool {
        // Another worker awake (running, or about to) may hand us work.
        let others_run = rt.workers.iter().any(|w| {
            w.index != self.index
                && w.started.load(Ordering::Relaxed)
                && !w.dead.load(Ordering::Relaxed)
                && !w.sleeping.load(Ordering::Relaxed)
        });
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
            for _ in 0..64 {
                if self.has_shared_work(rt) {
                    return true;
                }
                std::hint::spin_loop();
            }
            let now = crate::sys::now_ns();
            if now >= next_poll {
                // Readiness of fds registered here arrives through this
                // worker's epoll, not its queues: look there too, or the
                // spin would delay it (a pipe ping-pong across workers got
                // 20% slower before this check).
                self.poll(rt, false);
                if !self.local.run_queue.borrow().is_empty() {
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

/// Resumes `co` with its own thread pointer `tp` installed, then puts the
/// worker's (`home`) back. Kept out of line and free of TLS accesses: the
/// compiler treats the thread pointer as constant within a function, so a
/// TLS address computed here could belong to the wrong thread.
#[inline(never)]
fn resume_as(co: &mut Coroutine, tp: usize, home: usize) -> Resumed {
    // SAFETY: `tp` is the coroutine's live block; nothing below uses TLS
    // until `home`, this thread's own, is back.
    unsafe { tls::set_thread_pointer(tp) };
    let r = co.resume();
    // SAFETY: as above.
    unsafe { tls::set_thread_pointer(home) };
    r
}

/// In a forked child: the runtime keeps only the calling worker.
pub(super) fn reset_after_fork(me: &'static Worker) -> std::io::Result<()> {
    let rt = runtime().expect("a forking coroutine runs in the runtime");
    for w in &rt.workers {
        if w.index != me.index {
            w.dead.store(true, Ordering::Relaxed);
            w.started.store(true, Ordering::Relaxed);
        }
    }
    while let Some(t) = steal_one(&rt.global) {
        std::mem::forget(t);
    }
    me.reset_after_fork()
}

fn steal_one(q: &Injector<TaskRef>) -> Option<TaskRef> {
    loop {
        match q.steal() {
            Steal::Success(t) => return Some(t),
            Steal::Retry => continue,
            Steal::Empty => return None,
        }
    }
}

/// Puts a runnable task back on its home worker's queue (any thread).
pub fn schedule(t: TaskRef) {
    let home = t.home();
    if let Some(w) = current_worker() {
        if w.index == home {
            w.push_local(t);
            return;
        }
    }
    let rt = match runtime() {
        Some(rt) => rt,
        None => return,
    };
    if home == NO_HOME || home >= rt.workers.len() {
        rt.global.push(t);
        wake_one(rt);
        return;
    }
    let w = rt.workers[home];
    w.inbox.push(t);
    w.notify();
}

/// Wakes every sleeping worker (async-signal-safe: atomics and eventfd
/// writes).
pub fn notify_all() {
    if let Some(rt) = runtime() {
        for w in &rt.workers {
            w.notify();
        }
    }
}

/// Wakes worker `home` if it sleeps (any worker for a task with no home
/// yet). Async-signal-safe.
pub fn notify_home(home: usize) {
    match runtime() {
        Some(rt) if home < rt.workers.len() => rt.workers[home].notify(),
        _ => notify_all(),
    }
}

fn wake_one(rt: &Runtime) {
    for w in &rt.workers {
        if w.sleeping.load(Ordering::SeqCst) {
            w.notify();
            return;
        }
    }
}

/// Makes a new task and places it; fails (errno) when no stack can be had.
pub fn spawn(entry: Entry, stack_size: usize) -> Result<TaskRef, i32> {
    let start_addr = entry.start_addr();
    spawn_at(entry, stack_size, start_addr, false)
}

/// Spawns a thread (`pthread_create`): like `spawn`, and the task gets TLS
/// and a glibc descriptor of its own when it first runs (`ctx::tls`).
pub fn spawn_thread(entry: Entry, stack_size: usize, start_addr: usize) -> Result<TaskRef, i32> {
    spawn_at(entry, stack_size, start_addr, true)
}

/// Gives a new task its stack now, so that a spawn fails (with the errno a
/// `pthread_create` would report) when none can be had: from the spawning
/// worker's pool, or the shared one.
fn reserve_stack(t: &Task, me: Option<&Worker>) -> Result<(), i32> {
    let stack = match me {
        Some(w) => w.get_stack(t.stack_size),
        None => shared_stack(t.stack_size),
    };
    let s = stack.map_err(|e| e.raw_os_error().unwrap_or(libc::EAGAIN))?;
    // SAFETY: the task is not shared yet.
    unsafe { *t.stack.get() = Some(s) };
    Ok(())
}

/// `spawn`, naming the start routine for the watchdog (`pthread_create`
/// wraps the program's routine in a Rust entry).
fn spawn_at(
    entry: Entry,
    stack_size: usize,
    start_addr: usize,
    thread: bool,
) -> Result<TaskRef, i32> {
    let rt = runtime().ok_or(libc::EAGAIN)?;
    let t = Task::with_start_addr(entry, stack_size, start_addr);
    t.ident.own_tls.set(thread && tls::available());
    let me = current_worker();
    reserve_stack(&t, me)?;
    super::signals::task_created(&t, super::signals::inherited_mask());
    // Least loaded worker; ties go to the spawner's own. A worker held by
    // one task for longer than BUSY_NS (computing, or blocked where corun
    // cannot see) counts as full: a new task placed there would wait.
    let now = if rt.workers.len() > 1 {
        crate::sys::now_ns()
    } else {
        0
    };
    let effective = |w: &Worker| {
        let busy = w.running_id.load(Ordering::Relaxed) != 0
            && now.saturating_sub(w.running_since.load(Ordering::Relaxed)) > BUSY_NS;
        w.load.load(Ordering::Relaxed) + if busy { 1 << 20 } else { 0 }
    };
    let mut target = me;
    let mut best = me.map_or(usize::MAX, effective);
    for w in rt
        .workers
        .iter()
        .filter(|w| !w.dead.load(Ordering::Relaxed))
    {
        let l = effective(w);
        if l < best {
            best = l;
            target = Some(w);
        }
    }
    if let Some(w) = target {
        if !w.started.load(Ordering::Acquire) && ensure_started(w).is_err() {
            // No thread for it: keep the task where the spawner is.
            target = me.or(Some(rt.workers[0]));
        }
    }
    super::watchdog::ensure_started(rt);
    match target {
        Some(w) => {
            w.load.fetch_add(1, Ordering::Relaxed);
            t.set_home(w.index);
            if me.is_some_and(|m| m.index == w.index) {
                w.local.fresh.push(t.clone());
            } else {
                w.placed.push(t.clone());
                w.notify();
            }
        }
        None => {
            rt.global.push(t.clone());
            wake_one(rt);
        }
    }
    super::stats::spawned();
    Ok(t)
}

/// Spawns `main`'s task pinned to this worker (it must end on the thread
/// that drives worker 0, which returns its status to glibc).
pub fn spawn_main(entry: Entry, stack_size: usize) -> Result<TaskRef, i32> {
    let w = current_worker().ok_or(libc::EAGAIN)?;
    let t = Task::new(entry, stack_size);
    reserve_stack(&t, Some(w))?;
    super::signals::main_created(&t);
    w.load.fetch_add(1, Ordering::Relaxed);
    t.set_home(w.index);
    w.push_local(t.clone());
    Ok(t)
}

/// Starts the runtime with this thread as worker 0; workers 1.. get threads.
pub fn start(config: crate::config::Config) -> std::io::Result<&'static Runtime> {
    let mut workers = Vec::with_capacity(config.workers);
    for i in 0..config.workers {
        workers.push(Worker::new(i)?);
    }
    let rt = Runtime {
        workers,
        global: Injector::new(),
        config,
    };
    if RUNTIME.set(rt).is_err() {
        return Err(std::io::Error::from_raw_os_error(libc::EEXIST));
    }
    let rt = runtime().expect("just set");
    if rt.config.own_tls {
        tls::init();
    }
    overflow::install_handler();
    rt.workers[0].started.store(true, Ordering::Release);
    rt.workers[0].attach();
    if rt.config.stats {
        super::stats::print_at_exit();
    }
    Ok(rt)
}

/// Starts the thread of worker `w` unless it runs already. Workers start
/// on first use: a program that never has a second coroutine (every `sh`
/// or `cat` that inherits LD_PRELOAD) never pays for their threads.
pub fn ensure_started(w: &'static Worker) -> std::io::Result<()> {
    if w.dead.load(Ordering::Relaxed) {
        return Err(std::io::Error::from_raw_os_error(libc::EAGAIN));
    }
    if w.started
        .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return Ok(());
    }
    start_thread(w).inspect_err(|_| w.started.store(false, Ordering::Release))
}

fn start_thread(w: &'static Worker) -> std::io::Result<()> {
    crate::sys::spawn_native_thread(Box::new(move || {
        w.attach();
        w.run(&|| false);
    }))
}

/// Drives worker 0 on this thread until `t` is done.
pub fn run_until_done(t: &TaskRef) {
    let w = current_worker().expect("worker 0 attached");
    w.run(&|| t.state() == DONE);
}
