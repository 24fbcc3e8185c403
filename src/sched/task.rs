//! A task: one coroutine as the scheduler sees it.
//!
//! A task is shared (`Arc`) between its home worker, which alone runs it,
//! and whoever may wake it from any thread (a netpoller of another worker, a
//! mutex unlock on a native thread, a timer). Waking is made exact by a
//! *park sequence*: every park takes a fresh sequence number (its token),
//! and the task's state word packs `seq << 3 | state`. A wake carries the
//! token of the park it answers and only acts if that park is still current,
//! so a stale timer or an fd event for an earlier wait never wakes a later
//! one.
//!
//! The park/wake race is resolved without locks:
//!
//! ```text
//!   task:  begin_park() -> token t   (state RUNNING, seq t)
//!          register (fd waiter, timer, mutex queue...) with t
//!          suspend -> scheduler: CAS RUNNING(t) -> PARKED(t)
//!                               or sees NOTIFIED(t): requeue at once
//!   waker: unpark(t): PARKED(t)  -> RUNNABLE(t), push on the home queue
//!                     RUNNING(t) -> NOTIFIED(t) (not suspended yet)
//!                     anything else, or another seq: nothing to do
//! ```

use std::cell::{Cell, UnsafeCell};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::ctx::{Coroutine, GuardedStack, Yielder};

use super::debugreg::DebugRecord;
use super::identity::Identity;
use super::prefetch::Hints;
use super::spin_lock::SpinLock;
use super::timers::TimerId;
use super::waitdesc::WaitDesc;
use super::waiter::Waiter;

pub type TaskRef = Arc<Task>;

/// Never ran: may be stolen by another worker.
pub const NEW: u64 = 0;
/// In a run queue.
pub const RUNNABLE: u64 = 1;
/// On a worker's CPU (or suspending).
pub const RUNNING: u64 = 2;
/// Suspended, waiting for a wake with its token.
pub const PARKED: u64 = 3;
/// Woken while still RUNNING: the scheduler requeues it after the switch.
pub const NOTIFIED: u64 = 4;
/// Finished.
pub const DONE: u64 = 5;

const STATE_MASK: u64 = 7;

/// Home worker of a task that has not run yet.
pub const NO_HOME: usize = usize::MAX;

/// `Task::claim` of a never-run task taken to be run.
const TAKEN: usize = usize::MAX;

/// What a task runs.
pub enum Entry {
    /// A C start routine, as `pthread_create` and `corun_spawn` take.
    C {
        f: extern "C" fn(*mut c_void) -> *mut c_void,
        arg: *mut c_void,
    },
    /// A Rust closure returning the task's result.
    Rust(Box<dyn FnOnce() -> *mut c_void>),
}

impl Entry {
    /// The C start routine's address, for the watchdog (0 for Rust code).
    pub fn start_addr(&self) -> usize {
        match self {
            Entry::C { f, .. } => *f as usize,
            Entry::Rust(_) => 0,
        }
    }
}

/// Completion and joining.
#[derive(Default)]
pub struct JoinState {
    pub done: bool,
    pub result: usize,
    pub joiner: Option<Waiter>,
    /// Joined or detached: nobody may join again.
    pub claimed: bool,
}

/// Per-task hooks for layers above the scheduler (thread-specific data,
/// pthread identity). The scheduler only stores and drops it.
pub type TaskExtension = Box<dyn std::any::Any>;

pub struct Task {
    pub id: u64,
    state: AtomicU64,
    home: AtomicUsize,
    /// Who may run a never-run task (see `take_for`): 0 whoever dequeues
    /// it from the queue of its home, `w + 1` worker `w` (it was moved
    /// there), TAKEN someone took it to run (every other queue entry of
    /// it is stale).
    claim: AtomicUsize,
    pub stack_size: usize,
    /// The stack the program gave (`pthread_attr_setstack`): its lowest
    /// address and top, as the program gave them; None on a corun stack.
    pub program_stack: Option<(usize, usize)>,
    pub(super) entry: UnsafeCell<Option<Entry>>,
    /// The stack reserved at spawn (so a spawn can fail with EAGAIN, as
    /// pthread_create does), until the first run turns it into `coro`.
    pub(super) stack: UnsafeCell<Option<GuardedStack>>,
    pub(super) coro: UnsafeCell<Option<Coroutine>>,
    pub(super) yielder: Cell<*const Yielder>,
    /// Set by a task that must not return normally (pthread_exit): the
    /// scheduler abandons its frames instead of resuming it again.
    pub(super) exiting: Cell<bool>,
    /// Suspended by a yield: the scheduler requeues it at the back.
    pub(super) yielding: Cell<bool>,
    /// The yield is a preemption: the task waits behind the others
    /// (`run_queue.rs`).
    pub(super) preempted: Cell<bool>,
    /// How long it computed until preempted, added up (ns; the order of
    /// preempted tasks: `Worker::push_preempted`).
    pub(super) vruntime: Cell<u64>,
    /// Parked on an fd and counted in its worker's `fd_parks` (`FdPark`),
    /// until the park ends or a hand-over uncounts it (`balance.rs`).
    pub(super) fd_parked: Cell<bool>,
    /// The timer of the park it is suspended in, in its home's heap: the
    /// park takes it back when it resumes, or a hand-over to another
    /// worker cancels it there and leaves the answer in `timer_fired`
    /// (the heap is its worker's own: `balance.rs`).
    pub(super) park_timer: Cell<Option<TimerId>>,
    pub(super) timer_fired: Cell<bool>,
    /// When a wake-up queued it (ns, shifted left by one, the low bit set
    /// if the waker was another thread): kept only with the statistics on
    /// (`wake_latency.rs`).
    pub(super) woken_at: AtomicU64,
    /// What the start routine returned (or `pthread_exit` gave), stored by
    /// the task itself before it ends: `finish` copies it into `join`, and
    /// a joiner that sees the task DONE (its state is published with
    /// Release after this store) reads it here without the lock.
    pub(super) result: AtomicUsize,
    pub join: SpinLock<JoinState>,
    /// Data owned by the hooks layer (pthread keys, name...): touched only
    /// by the task itself, on its home worker.
    pub ext: UnsafeCell<Option<TaskExtension>>,
    /// Name of the start routine, for the watchdog (address of `f`).
    pub start_addr: usize,
    /// The start routine's argument, set by `pthread_create` after the
    /// spawn: language runtimes keep the thread's callable there
    /// (`startname.rs`).
    pub start_arg: AtomicUsize,
    /// What the task waits on while parked (`waitdesc.rs`).
    pub wait: WaitDesc,
    /// What makes it a thread: thread pointer, signal mask and pending
    /// signals, cancellation state (`identity.rs`).
    pub ident: Identity,
    /// Its entry in the debugger's registry, with the registers it saved
    /// at its last suspension (`debugreg.rs`).
    pub debug: DebugRecord,
    /// Addresses the scheduler prefetches before it runs the task again
    /// (`prefetch.rs`): its last I/O buffers, its DTV.
    pub(super) hints: Hints,
}

// SAFETY: the fields that are not thread-safe (`entry`, `coro`, `yielder`,
// `exiting`, `yielding`, `ext`, `fd_parked`, `park_timer`...) are only
// touched by the task's home worker thread: before
// the first run by whoever holds it in a queue (exclusively), afterwards by
// the home worker only. The home changes only by `shed.rs` (a preempted
// task) and `balance.rs` (a ready one), on the old home
// while the task is out of every queue, and the new one gets it through its
// inbox (a release and an acquire) (docs/ARCHITECTURE.md §5.2). Everything
// other threads use is atomic or behind a Mutex.
unsafe impl Send for Task {}
// SAFETY: as above.
unsafe impl Sync for Task {}

/// The next id no thread has taken. A worker's thread takes `ID_BLOCK` at
/// a time and hands them out itself (`Local::ids`): one shared atomic add
/// per spawn was a locked instruction (~8 ns) of each spawn+join, on a
/// line every spawning worker wrote. Ids stay unique, not in order.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
const ID_BLOCK: u64 = 64;

/// Tasks created, counted only while the stats or a dump may print it
/// (`stats::counts_live`, fixed at start): `NEXT_ID` runs ahead by the
/// workers' unused blocks.
static CREATED: AtomicU64 = AtomicU64::new(0);

/// Tasks created so far (0 unless the stats or a dump may print it).
pub fn created() -> u64 {
    CREATED.load(Ordering::Relaxed)
}

/// A new task id: from the calling worker's block (`ids`: the next id
/// and the end of its block, used by that worker's thread only), or, on
/// a thread that is no worker, from `NEXT_ID` directly.
fn next_id() -> u64 {
    if super::stats::counts_live() {
        CREATED.fetch_add(1, Ordering::Relaxed);
    }
    let Some(w) = super::worker::current_worker() else {
        return NEXT_ID.fetch_add(1, Ordering::Relaxed);
    };
    let ids = &w.local.ids;
    let (next, end) = ids.get();
    if next < end {
        ids.set((next + 1, end));
        return next;
    }
    let first = NEXT_ID.fetch_add(ID_BLOCK, Ordering::Relaxed);
    ids.set((first + 1, first + ID_BLOCK));
    first
}

/// Tasks whose record was freed (the last count dropped), counted only
/// while the stats or a dump may print it (`stats::counts_live`), like the
/// peak: a shared atomic add at every end was a locked instruction (~8 ns)
/// of each spawn+join, and a line the workers took from each other.
static FREED: AtomicU64 = AtomicU64::new(0);

/// Task records still held: live coroutines, and ended ones a count (a
/// joiner's handle, a waiter left in a list) still holds (only when the
/// stats or a dump may print it).
pub fn records_held() -> u64 {
    created().saturating_sub(FREED.load(Ordering::Relaxed))
}

impl Task {
    pub fn new(entry: Entry, stack_size: usize) -> TaskRef {
        let start_addr = entry.start_addr();
        Task::with_start_addr(entry, stack_size, start_addr, None)
    }

    /// A task whose start routine, for the watchdog, is `start_addr` (a
    /// Rust entry that wraps a C start routine, as `pthread_create` makes).
    /// `program_stack`: the program's own stack for it (lowest address,
    /// top), if it gave one.
    pub fn with_start_addr(
        entry: Entry,
        stack_size: usize,
        start_addr: usize,
        program_stack: Option<(usize, usize)>,
    ) -> TaskRef {
        let id = next_id();
        Arc::new(Task {
            id,
            state: AtomicU64::new(NEW),
            home: AtomicUsize::new(NO_HOME),
            claim: AtomicUsize::new(0),
            stack_size,
            program_stack,
            entry: UnsafeCell::new(Some(entry)),
            stack: UnsafeCell::new(None),
            coro: UnsafeCell::new(None),
            yielder: Cell::new(std::ptr::null()),
            exiting: Cell::new(false),
            yielding: Cell::new(false),
            preempted: Cell::new(false),
            vruntime: Cell::new(0),
            fd_parked: Cell::new(false),
            park_timer: Cell::new(None),
            timer_fired: Cell::new(false),
            woken_at: AtomicU64::new(0),
            result: AtomicUsize::new(0),
            join: SpinLock::new(JoinState::default()),
            ext: UnsafeCell::new(None),
            start_addr,
            start_arg: AtomicUsize::new(0),
            wait: WaitDesc::default(),
            ident: Identity::default(),
            debug: DebugRecord::new(id, start_addr),
            hints: Hints::default(),
        })
    }

    /// The whole state word: the park sequence and the state (the dump
    /// compares two reads to know the task stayed suspended in between).
    pub fn state_word(&self) -> u64 {
        self.state.load(Ordering::Acquire)
    }

    /// The size of the heap block an `Arc<Task>` takes: the two counts,
    /// then the task (the layout `Arc` computes).
    pub(super) fn block_size() -> usize {
        std::alloc::Layout::new::<[usize; 2]>()
            .extend(std::alloc::Layout::new::<Task>())
            .map_or(0, |(l, _)| l.pad_to_align().size())
    }

    /// The task whose `debug` field `r` is (a registry walk: `sigdispatch`).
    pub(super) fn of_record(r: *const DebugRecord) -> *const Task {
        r.cast::<u8>()
            .wrapping_sub(std::mem::offset_of!(Task, debug))
            .cast::<Task>()
    }

    /// Puts the task's record in the debugger's list `list` (`debugreg`).
    pub(super) fn debug_link(&self, list: usize) {
        let (cause, object) = self.wait.addrs();
        self.debug
            .link(list, self.state.as_ptr() as usize, cause, object);
    }

    #[inline]
    pub fn state(&self) -> u64 {
        self.state.load(Ordering::Acquire) & STATE_MASK
    }

    #[inline]
    pub fn home(&self) -> usize {
        self.home.load(Ordering::Acquire)
    }

    pub(super) fn set_home(&self, w: usize) {
        self.home.store(w, Ordering::Release);
    }

    /// Takes the never-run task to run it: called by worker `holder` that
    /// dequeued it from one of its never-run queues, or by a joiner that
    /// takes it from the queue of `holder`, its home (`spawn::take_for_join`).
    /// False if someone else took or moved it: a task can be in two queues
    /// at once (a joiner took it from another worker's queue), and the
    /// entry left behind is stale.
    #[inline]
    pub(super) fn take(&self, holder: usize) -> bool {
        self.claim_from(holder.wrapping_add(1), TAKEN) || self.claim_from(0, TAKEN)
    }

    /// Moves the never-run task's right to run from worker `from` (whose
    /// queue it was taken from) to worker `to`; false if it was taken.
    pub(super) fn reserve(&self, from: usize, to: usize) -> bool {
        let to = to.wrapping_add(1);
        self.claim_from(from.wrapping_add(1), to) || self.claim_from(0, to)
    }

    #[inline]
    fn claim_from(&self, cur: usize, to: usize) -> bool {
        self.claim.load(Ordering::Relaxed) == cur
            && self
                .claim
                .compare_exchange(cur, to, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    }

    /// The scheduler is about to run the task.
    #[inline]
    pub(super) fn set_running(&self) {
        let w = self.state.load(Ordering::Acquire);
        self.state
            .store((w & !STATE_MASK) | RUNNING, Ordering::Release);
    }

    /// A yielding task goes back to a run queue.
    pub(super) fn set_runnable(&self) {
        let w = self.state.load(Ordering::Acquire);
        self.state
            .store((w & !STATE_MASK) | RUNNABLE, Ordering::Release);
    }

    pub(super) fn set_done(&self) {
        let w = self.state.load(Ordering::Acquire);
        self.state
            .store((w & !STATE_MASK) | DONE, Ordering::Release);
    }

    /// Starts a park: returns the token wakers must present.
    ///
    /// A plain store, not a compare-and-swap loop (a locked instruction of
    /// every park): only the running task itself moves the sequence, so
    /// the one read here gives it exactly; what a waker may change
    /// meanwhile is the state of the *previous* park's sequence (RUNNING to
    /// NOTIFIED), which the loop overwrote just the same, and a waker's
    /// compare-and-swap after this store fails on the new sequence. Release:
    /// a waker finds the waiter through a registration made after this
    /// store (a lock, a Release store), and so sees the new token.
    #[inline]
    pub fn begin_park(&self) -> u64 {
        let seq = (self.state.load(Ordering::Relaxed) >> 3) + 1;
        self.state.store((seq << 3) | RUNNING, Ordering::Release);
        seq
    }

    /// After the task suspended: PARKED, or true if it was already woken and
    /// must be requeued.
    #[inline]
    pub(super) fn finish_park(&self) -> bool {
        let mut w = self.state.load(Ordering::Acquire);
        loop {
            let next = match w & STATE_MASK {
                RUNNING => (w & !STATE_MASK) | PARKED,
                NOTIFIED => {
                    self.state
                        .store((w & !STATE_MASK) | RUNNABLE, Ordering::Release);
                    return true;
                }
                s => unreachable!("task suspended in state {s}"),
            };
            match self
                .state
                .compare_exchange_weak(w, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return false,
                Err(cur) => w = cur,
            }
        }
    }

    /// Answers the park with `token`. Returns true if the caller must put
    /// the task on its home run queue.
    #[inline]
    pub fn try_unpark(&self, token: u64) -> bool {
        let mut w = self.state.load(Ordering::Acquire);
        loop {
            if w >> 3 != token {
                return false;
            }
            let next = match w & STATE_MASK {
                PARKED => (w & !STATE_MASK) | RUNNABLE,
                RUNNING => (w & !STATE_MASK) | NOTIFIED,
                _ => return false,
            };
            match self
                .state
                .compare_exchange_weak(w, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return next & STATE_MASK == RUNNABLE,
                Err(cur) => w = cur,
            }
        }
    }

    /// The token of the park in progress, if the task is parking or parked.
    pub fn current_park(&self) -> Option<u64> {
        let w = self.state.load(Ordering::Acquire);
        matches!(w & STATE_MASK, RUNNING | PARKED).then_some(w >> 3)
    }

    /// Answers whatever park is current (a signal must be delivered to
    /// the task): `try_unpark` with the present token. A task that runs
    /// is only marked (its next park returns at once, or nothing happens).
    /// Returns true if the caller must put the task on its home run queue.
    pub fn unpark_current(&self) -> bool {
        let w = self.state.load(Ordering::SeqCst);
        match w & STATE_MASK {
            PARKED | RUNNING => self.try_unpark(w >> 3),
            _ => false,
        }
    }

    /// Whether a park with `token` is still waiting.
    #[inline]
    pub fn park_is_current(&self, token: u64) -> bool {
        let w = self.state.load(Ordering::Acquire);
        w >> 3 == token && matches!(w & STATE_MASK, RUNNING | PARKED)
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        if super::stats::counts_live() {
            FREED.fetch_add(1, Ordering::Relaxed);
        }
        // A coroutine suspended inside C frames cannot be unwound (corosensei
        // would force an unwind through them, which aborts). A task dropped
        // while suspended (nothing could ever wake it) leaks its stack instead.
        if let Some(c) = self.coro.get_mut().take() {
            std::mem::forget(c);
        }
    }
}

/// A task of a C entry that returns at once, for unit tests here and in
/// other modules (`capi::handles`).
#[cfg(test)]
pub(crate) fn test_task() -> TaskRef {
    extern "C" fn nop(_: *mut c_void) -> *mut c_void {
        std::ptr::null_mut()
    }
    Task::new(
        Entry::C {
            f: nop,
            arg: std::ptr::null_mut(),
        },
        65536,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> TaskRef {
        test_task()
    }

    #[test]
    fn wake_after_suspend_requeues() {
        let t = task();
        t.set_running();
        let tok = t.begin_park();
        assert!(!t.finish_park());
        assert_eq!(t.state(), PARKED);
        assert!(t.try_unpark(tok));
        assert_eq!(t.state(), RUNNABLE);
        assert!(!t.try_unpark(tok), "a second wake is a no-op");
    }

    #[test]
    fn wake_before_suspend_is_not_lost() {
        let t = task();
        t.set_running();
        let tok = t.begin_park();
        assert!(!t.try_unpark(tok), "still running: only marked");
        assert_eq!(t.state(), NOTIFIED);
        assert!(t.finish_park(), "the scheduler requeues it");
        assert_eq!(t.state(), RUNNABLE);
    }

    #[test]
    fn a_never_run_task_is_taken_once() {
        let t = task();
        assert!(t.take(1), "whoever holds it first takes it");
        assert!(!t.take(1), "a second entry of it is stale");
        assert!(!t.take(0));
        assert!(!t.reserve(1, 2), "a taken task cannot be moved");
    }

    #[test]
    fn a_moved_task_is_taken_by_its_new_holder_only() {
        let t = task();
        assert!(t.reserve(0, 2), "moved from worker 0 to 2");
        assert!(!t.take(0), "the old holder's entry is stale");
        assert!(!t.reserve(0, 1));
        assert!(t.reserve(2, 1), "moved on from 2 to 1");
        assert!(!t.take(2));
        assert!(t.take(1));
    }

    #[test]
    fn stale_token_is_ignored() {
        let t = task();
        t.set_running();
        let old = t.begin_park();
        t.set_running();
        let new = t.begin_park();
        assert_ne!(old, new);
        assert!(!t.finish_park());
        assert!(!t.try_unpark(old));
        assert_eq!(t.state(), PARKED);
        assert!(t.park_is_current(new));
        assert!(!t.park_is_current(old));
        assert!(t.try_unpark(new));
    }
}
