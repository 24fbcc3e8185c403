//! The blocking pool: calls that cannot be made non-blocking run on helper
//! threads while the coroutine parks (the analogue of Go's syscall hand-off).
//!
//! Regular-file I/O that misses the page cache, `open` and `stat` by path
//! that miss the dentry cache (`hooks::cached` answers the rest inline),
//! `fsync`, and name resolution (`getaddrinfo`...) block in the kernel or in
//! libc with no readiness to wait for. Made on a worker, they would hold every
//! coroutine of that worker. `run_blocking(f)` queues `f` (FIFO) for a pool
//! of at most `CORUN_BLOCKING_THREADS` native threads, started on demand with
//! the real `pthread_create`, and parks the calling coroutine until a helper
//! has run it. Hooks run on helper threads as passthroughs (no coroutine
//! there), so `f` makes the real blocking call.
//!
//! When the caller is the process's only live coroutine (a program that
//! never made a thread, a forked child serving one connection) nothing
//! could run on its worker meanwhile: `f` runs inline, as natively, and no
//! helper thread is ever started for it.
//!
//! A hand-off costs what two wake-ups cost and nothing more: each idle
//! helper sleeps on a futex word of its own (`ThreadParker`), listed in
//! the pool's state, so queueing a job wakes exactly one sleeping helper
//! (one FUTEX_WAKE) and none when every helper is busy (a busy helper takes
//! the next job before it sleeps); the helper that finishes a job wakes
//! the coroutine through its worker's queue (an eventfd write only if that
//! worker sleeps). A job is counted (`jobs()`, CORUN_STATS).
//!
//! Growing when every helper is stuck: a helper can block for a long time
//! (a slow DNS server) or for ever on something only another queued job
//! would release (opening a FIFO whose writer's `open` waits behind it).
//! So the waiting coroutine wakes every `GRACE` and, if its job has not
//! started and the pool finished nothing meanwhile, starts one more helper
//! beyond `CORUN_BLOCKING_THREADS`, up to `HARD_MAX`; helpers beyond the
//! configured number retire after `IDLE_RETIRE_NS` without work. Only when
//! no helper can be started does it withdraw the job (a compare-and-swap
//! decides between it and a helper) and make the call inline on its
//! worker, as it would without corun: before, 16 slow lookups made every
//! further one run inline and freeze its worker's other coroutines.
//!
//! `f` may borrow from the caller's stack: the caller does not return before
//! the job is done or withdrawn before it started.
//!
//! A job holds the caller's signals off until it is done, but for calls a
//! signal ends natively (`run_blocking_interruptible`,
//! `run_blocking_restartable`): a signal cuts them short (`pool_kick.rs`).

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::fdtable::lock;
use super::waiter::{ThreadParker, Waiter};
use super::{in_coroutine, park, runtime};

const QUEUED: u8 = 0;
const RUNNING: u8 = 1;
const DONE: u8 = 2;
const WITHDRAWN: u8 = 3;

/// How long a queued job waits before checking that the pool progresses.
const GRACE_NS: u64 = 50_000_000;
/// Helpers the pool may grow to when every one is stuck.
const HARD_MAX: usize = 1024;
/// A helper beyond the configured number retires after this long idle.
const IDLE_RETIRE_NS: u64 = 10_000_000_000;

type Func = Box<dyn FnOnce() + Send + 'static>;

struct Job {
    state: AtomicU8,
    func: UnsafeCell<Option<Func>>,
    waiter: Mutex<Option<Waiter>>,
    /// A job a signal may cut short (`pool_kick.rs`).
    kick: Option<Arc<super::pool_kick::KickCell>>,
}

// SAFETY: `func` is taken exactly once, by whoever wins the QUEUED ->
// RUNNING/WITHDRAWN compare-and-swap; everything else is atomic or locked.
unsafe impl Sync for Job {}
// SAFETY: as above; the closure itself is Send.
unsafe impl Send for Job {}

impl Job {
    /// Takes the function if `to` wins the race for a queued job.
    fn claim(&self, to: u8) -> Option<Func> {
        self.state
            .compare_exchange(QUEUED, to, Ordering::AcqRel, Ordering::Acquire)
            .ok()?;
        // SAFETY: the compare-and-swap above made us the only taker.
        unsafe { (*self.func.get()).take() }
    }
}

/// What the pool's lock protects.
struct State {
    queue: VecDeque<Arc<Job>>,
    /// Helpers asleep, each on its own parker; a new job wakes one.
    idle: Vec<Arc<ThreadParker>>,
}

struct Pool {
    state: Mutex<State>,
    threads: AtomicUsize,
    completed: AtomicU64,
    /// Jobs handed to the pool (not those run inline).
    jobs: AtomicU64,
}

static POOL: Pool = Pool {
    state: Mutex::new(State {
        queue: VecDeque::new(),
        idle: Vec::new(),
    }),
    threads: AtomicUsize::new(0),
    completed: AtomicU64::new(0),
    jobs: AtomicU64::new(0),
};

fn max_threads() -> usize {
    runtime().map_or(16, |r| r.config.blocking_threads)
}

/// In a forked child: the helpers do not exist there. Queued jobs belong to
/// the parent's coroutines and are dropped, and so are the parkers of the
/// parent's idle helpers. If a helper held the pool's lock at the fork, the
/// lock can never be taken again: the pool is then off in this process and
/// calls run inline.
pub fn reset_after_fork() {
    if POOL.jobs.load(Ordering::Relaxed) == 0 {
        return; // never used: nothing to forget (and no page to copy)
    }
    match POOL.state.try_lock() {
        Ok(mut st) => {
            for j in st.queue.drain(..) {
                std::mem::forget(j);
            }
            for p in st.idle.drain(..) {
                std::mem::forget(p);
            }
        }
        Err(_) => BROKEN.store(true, Ordering::Relaxed),
    }
    POOL.threads.store(0, Ordering::Relaxed);
}

static BROKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Helper threads started so far.
pub fn threads() -> usize {
    POOL.threads.load(Ordering::Relaxed)
}

/// Jobs handed to helper threads so far.
pub fn jobs() -> u64 {
    POOL.jobs.load(Ordering::Relaxed)
}

/// Calls that could have gone to the pool, answered inline from the
/// kernel's caches (`hooks::cached`).
static INLINE: AtomicU64 = AtomicU64::new(0);

/// Counts one call answered inline from the caches.
#[inline]
pub fn note_inline() {
    INLINE.fetch_add(1, Ordering::Relaxed);
}

/// Calls answered inline from the caches so far.
pub fn inline_answers() -> u64 {
    INLINE.load(Ordering::Relaxed)
}

fn helper_main() {
    let me = ThreadParker::new();
    // Asked once: kickable jobs name the helper that runs them.
    let tid = crate::sys::gettid();
    loop {
        if super::confined::is() {
            // The process confined itself (`confined.rs`): no helper may
            // outlive its program's threads.
            POOL.threads.fetch_sub(1, Ordering::AcqRel);
            return;
        }
        let job = {
            let mut st = lock(&POOL.state);
            match st.queue.pop_front() {
                Some(j) => Some(j),
                None => {
                    st.idle.push(me.clone());
                    None
                }
            }
        };
        let Some(job) = job else {
            // Whoever takes our parker off the idle list unparks it. A
            // helper beyond the configured number retires when idle long.
            let extra = POOL.threads.load(Ordering::Acquire) > max_threads();
            let deadline = extra.then(|| crate::sys::now_ns() + IDLE_RETIRE_NS);
            if !me.park(deadline) && retire(&me) {
                super::confined::unregister_helper();
                return;
            }
            continue;
        };
        if let Some(k) = &job.kick {
            // Before the claim: a kick sent once the job runs finds us.
            k.tid.store(tid, Ordering::SeqCst);
        }
        if let Some(f) = job.claim(RUNNING) {
            if let Some(k) = &job.kick {
                // The call is made here, not inline by its coroutine.
                k.on_helper.store(true, Ordering::SeqCst);
            }
            f();
            POOL.completed.fetch_add(1, Ordering::Release);
            let w = {
                let mut g = lock(&job.waiter);
                job.state.store(DONE, Ordering::Release);
                g.take()
            };
            if let Some(w) = w {
                w.wake();
            }
        }
    }
}

/// The process confined itself: every idle helper wakes and leaves (a busy
/// one leaves after its job), so that no thread of corun's keeps the
/// process, and its fds, alive once the program's threads are gone.
pub fn retire_all() {
    let idle: Vec<_> = match POOL.state.lock() {
        Ok(mut st) => st.idle.drain(..).collect(),
        Err(_) => return,
    };
    for p in idle {
        p.unpark();
    }
}

/// An idle helper past its time leaves, unless a job already took it off
/// the idle list (then it has been or will be unparked: it stays).
fn retire(me: &Arc<ThreadParker>) -> bool {
    let mut st = lock(&POOL.state);
    let Some(i) = st.idle.iter().position(|p| Arc::ptr_eq(p, me)) else {
        return false;
    };
    if POOL.threads.load(Ordering::Acquire) <= max_threads() {
        return false;
    }
    st.idle.swap_remove(i);
    POOL.threads.fetch_sub(1, Ordering::AcqRel);
    true
}

/// One more helper beyond the configured number (every one is stuck), up
/// to HARD_MAX; false if none could be started.
fn grow() -> bool {
    let n = POOL.threads.fetch_add(1, Ordering::AcqRel);
    if n >= HARD_MAX || !start_helper() {
        POOL.threads.fetch_sub(1, Ordering::AcqRel);
        return false;
    }
    true
}

fn start_helper() -> bool {
    super::confined::spawn_helper(Box::new(|| {
        crate::sys::block_all_signals();
        helper_main();
    }))
    .is_ok()
}

/// Runs `f` (a libc call) on a helper thread while the calling coroutine
/// parks, and returns its result with the errno it left, set on the
/// calling thread; outside a coroutine (or if no helper can start) runs it
/// inline.
pub fn run_blocking<'a, R: Send + 'a>(f: impl FnOnce() -> R + Send + 'a) -> R {
    if !in_coroutine() || BROKEN.load(Ordering::Relaxed) || super::alone() {
        return f();
    }
    run_on_pool(f, None).expect("a job that cannot be kicked runs")
}

/// `run_blocking` for one system call that a signal interrupts natively (a
/// socket wait): a signal that becomes deliverable to the calling coroutine
/// cuts the call short (`pool_kick.rs`), which then fails with EINTR as
/// natively; the coroutine's handlers have run when this returns. Returns
/// the call's result, errno set.
pub fn run_blocking_interruptible<'a>(call: impl FnOnce() -> isize + Send + 'a) -> isize {
    if !in_coroutine() || BROKEN.load(Ordering::Relaxed) || super::alone() {
        return call();
    }
    if !super::pool_kick::available() {
        return run_on_pool(call, None).expect("a job that cannot be kicked runs");
    }
    let cell = Arc::new(super::pool_kick::KickCell::default());
    let c = cell.clone();
    match run_on_pool(move || super::pool_kick::window(&c, call), Some(cell)) {
        Some(r) => r,
        None => {
            // Withdrawn before a helper took it: the call was never made.
            crate::sys::set_errno(libc::EINTR);
            -1
        }
    }
}

/// What signal(7) says a blocking call does when a handler interrupts it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum OnHandler {
    /// Restarted if every handler that ran had SA_RESTART, else EINTR
    /// (file locks, `open` of a FIFO, a tty write).
    RestartIfSaRestart,
    /// Always EINTR (System V IPC, `io_getevents`).
    Eintr,
}

/// `run_blocking_interruptible` for a call with signal(7)'s rule `rule`:
/// `call(again)` is the system call (`again`: a restart, the call already
/// waited once); a signal deliverable to the caller cuts it short, its
/// handlers run, and the call then fails with EINTR or is made again as
/// the rule says. A call that completed as the signal came returns its
/// result (a lock taken, a message received is never dropped). A cut after
/// which no handler ran (another thread took the signal, or it turned out
/// ignored) is made again, as natively the wait would have gone on. A call
/// made inline (no coroutine, the process's only one) is the real call:
/// the kernel applies the rule itself.
pub fn run_blocking_restartable<'a>(
    rule: OnHandler,
    mut call: impl FnMut(bool) -> isize + Send + 'a,
) -> isize {
    if !in_coroutine() || BROKEN.load(Ordering::Relaxed) || super::alone() {
        return call(false);
    }
    let mut again = false;
    loop {
        let intr = super::signals::Interruptible::begin();
        let r = run_blocking_interruptible(|| call(again));
        if r >= 0 || crate::sys::errno() != libc::EINTR {
            return r;
        }
        match intr.check() {
            Some(true) if rule == OnHandler::RestartIfSaRestart => {}
            Some(_) => {
                crate::sys::set_errno(libc::EINTR);
                return -1;
            }
            None => {}
        }
        again = true;
    }
}

/// The pool's side of `run_blocking`: None only when `kick` is given and a
/// signal withdrew the job before it ran.
fn run_on_pool<'a, R: Send + 'a>(
    f: impl FnOnce() -> R + Send + 'a,
    kick: Option<Arc<super::pool_kick::KickCell>>,
) -> Option<R> {
    use super::pool_kick::{rekick_after, KICKABLE, KICKED, NONE};
    let mut out: Option<(R, i32)> = None;
    let out_ptr = SendPtr(&mut out as *mut Option<(R, i32)>);
    let body: Box<dyn FnOnce() + Send + 'a> = Box::new(move || {
        let p = out_ptr;
        let r = f();
        // SAFETY: `out` outlives the job (see the function's protocol).
        unsafe { *p.0 = Some((r, crate::sys::errno())) };
    });
    // SAFETY: erasing the lifetime is sound because this function does not
    // return before the closure has run to completion (DONE) or has been
    // withdrawn unrun, and it is dropped in either case before we return.
    let body: Func = unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + 'a>, Func>(body) };
    let job = Arc::new(Job {
        state: AtomicU8::new(QUEUED),
        func: UnsafeCell::new(Some(body)),
        waiter: Mutex::new(None),
        kick: kick.clone(),
    });
    POOL.jobs.fetch_add(1, Ordering::Relaxed);
    let (sleeper, start) = {
        let mut st = lock(&POOL.state);
        st.queue.push_back(job.clone());
        match st.idle.pop() {
            Some(p) => (Some(p), false),
            None => {
                // Every helper is busy: one more, up to the limit (the
                // count is taken under the lock, so it is exact).
                let more = POOL.threads.load(Ordering::Acquire) < max_threads();
                if more {
                    POOL.threads.fetch_add(1, Ordering::AcqRel);
                }
                (None, more)
            }
        }
    };
    if let Some(p) = sleeper {
        p.unpark();
    }
    if start && !start_helper() {
        POOL.threads.fetch_sub(1, Ordering::AcqRel);
    }
    if POOL.threads.load(Ordering::Acquire) == 0 {
        if let Some(f) = job.claim(WITHDRAWN) {
            f();
        }
    }
    let mut seen_completed = POOL.completed.load(Ordering::Acquire);
    // The helper uses this coroutine's frames (`out`, the caller's
    // buffers) until the job is done: a signal handler must not run now
    // (it could leave by longjmp). Handlers run when the call returns, as
    // after a disk read, which signals do not interrupt either. A kickable
    // job lets a signal wake the wait, which then cuts the call short
    // (`pool_kick.rs`), and still runs no handler before its end.
    let me = super::park::current_ref();
    if let Some(t) = &me {
        t.ident.sig.uninterruptible.store(true, Ordering::Relaxed);
        if kick.is_some() {
            t.ident.sig.pool_kick.store(KICKABLE, Ordering::SeqCst);
        }
    }
    let mut rekick_at: Option<u64> = None;
    let mut kicks = 0u32;
    loop {
        if job.state.load(Ordering::Acquire) == WITHDRAWN {
            break;
        }
        if let (Some(cell), Some(t)) = (&kick, &me) {
            let kickable = t.ident.sig.pool_kick.load(Ordering::SeqCst) == KICKABLE;
            let due = rekick_at.is_some_and(|at| crate::sys::now_ns() >= at);
            if (kickable && super::signals::deliverable(t) != 0) || due {
                if kicks == 0 {
                    super::pool_kick::note_cut();
                }
                t.ident.sig.pool_kick.store(KICKED, Ordering::SeqCst);
                if job.claim(WITHDRAWN).is_some() {
                    break; // not started: never made
                }
                let g = lock(&job.waiter);
                rekick_at = (job.state.load(Ordering::Acquire) == RUNNING
                    && super::pool_kick::kick(cell))
                .then(|| crate::sys::now_ns() + rekick_after(kicks));
                kicks += 1;
                drop(g);
            }
        }
        let queued = job.state.load(Ordering::Acquire) == QUEUED;
        let grace = queued.then(|| crate::sys::now_ns() + GRACE_NS);
        let deadline = match (grace, rekick_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        super::waitdesc::describe(super::waitdesc::Cause::Pool, 0);
        park(
            |w| {
                let mut g = lock(&job.waiter);
                if job.state.load(Ordering::Acquire) == DONE {
                    return false;
                }
                *g = Some(w);
                true
            },
            deadline,
        );
        match job.state.load(Ordering::Acquire) {
            DONE => break,
            QUEUED => {
                let done_now = POOL.completed.load(Ordering::Acquire);
                if done_now == seen_completed && !grow() {
                    // The pool made no progress for a whole grace period
                    // and cannot grow: make the call here rather than risk
                    // waiting for ever.
                    if let Some(f) = job.claim(WITHDRAWN) {
                        f();
                        break;
                    }
                }
                seen_completed = done_now;
            }
            _ => {}
        }
    }
    if let Some(t) = &me {
        t.ident.sig.pool_kick.store(NONE, Ordering::SeqCst);
        t.ident.sig.uninterruptible.store(false, Ordering::Relaxed);
        super::signals::run_pending(t);
    }
    let (r, e) = out?;
    crate::sys::set_errno(e);
    Some(r)
}

/// A raw pointer that may cross to a helper thread: the coroutine that owns
/// what it points at stays parked until the job is done with it (the
/// protocol of `run_blocking`), so it is used by one thread at a time.
pub struct SendPtr<T>(pub *mut T);
impl<T> Clone for SendPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SendPtr<T> {}
// SAFETY: see the type's comment.
unsafe impl<T> Send for SendPtr<T> {}

impl<T> SendPtr<T> {
    /// The pointer (a method, so a closure captures the whole wrapper).
    pub fn get(self) -> *mut T {
        self.0
    }
}
