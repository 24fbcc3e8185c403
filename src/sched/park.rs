//! The park API: how a coroutine waits without blocking its worker.
//!
//! Every wait has the same shape: take a park token, leave a `Waiter` where
//! the awaited event will find it (an fd's waiter list, a timer, a mutex's
//! queue), suspend, and on resumption re-check the condition. The hooks and
//! the sync objects only ever use the functions here:
//!
//! - `park_until_ready(fd, dir, snapshot, deadline)`: after an EAGAIN;
//! - `park_until_any_ready(&[(fd, dir, snapshot)], deadline)`: poll/select,
//!   one wait on several fds;
//! - `sleep_until(deadline)`, `yield_now()`;
//! - `park(register, deadline)`: the general form, for joins and locks.
//!
//! A wait says what it is on just before it parks (`waitdesc::describe`:
//! an fd, a timer, a lock's address...); `park_as` counts the park by that
//! cause (`stats`) and clears the description when the park ends
//! (docs/ARCHITECTURE.md §11).
//!
//! While the runtime manipulates its structures on behalf of a coroutine,
//! the thread's current-task pointer is cleared: a hooked libc call made
//! meanwhile (by Rust std, or a signal handler) passes straight through
//! instead of re-entering the scheduler.

use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::Arc;

use super::fdtable::{self, Dir, Snapshot};
use super::task::{Task, TaskRef};
use super::waitdesc::{describe, Cause};
use super::waiter::Waiter;
use super::worker::{current_task_ptr, current_worker, set_current, Worker};

/// Why a park ended.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Woken {
    /// Woken by the event (or spuriously: callers re-check).
    Event,
    /// The deadline passed.
    TimedOut,
    /// The condition held already: no suspension happened.
    NotParked,
    /// A signal ended the park: its handlers ran (in this coroutine, before
    /// `park` returned), or one ran just before it. The waiter may still be
    /// registered: callers that keep queues take it out.
    Signal,
}

/// Result of waiting on an fd.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum FdWait {
    Ready,
    TimedOut,
    /// The fd was closed (or replaced) while waiting.
    Closed,
    /// epoll refuses this fd (a regular file: always ready); errno given.
    NotPollable(i32),
}

/// Whether the caller runs in a coroutine (false in runtime code, in a
/// handler the kernel started, even one that interrupted a coroutine, and
/// in a process confined by seccomp: `confined.rs`).
///
/// A handler corun runs for a pending signal when its coroutine resumes
/// (`signals::run_pending`, after the park's own state is cleaned up) is
/// ordinary code of that coroutine, and waits in it park as anywhere else:
/// Boehm GC's suspend handler acknowledges a stop-the-world and then waits
/// in `sigsuspend` for the restart signal; blocking the worker there hung
/// every collection whose collector shared the worker. (`suspend` keeps
/// the handler depth out of sight of the coroutines that share this one's
/// thread-locals: main, corun_spawn tasks, CORUN_TLS=worker.)
#[inline]
pub fn in_coroutine() -> bool {
    !current_task_ptr().is_null()
        && (SIGNAL_DEPTH::get() == 0 || ASYNC_DEPTH::get() == 0 || super::fault_park::convert())
        && !super::confined::is()
}

use crate::sys::static_tls::AsyncDepth as ASYNC_DEPTH;
use crate::sys::static_tls::SignalDepth as SIGNAL_DEPTH;

pub use super::handler_depth::{
    async_signal_depth, async_signal_enter, async_signal_leave, in_async_signal_handler,
    in_place_delivery, in_place_enter, in_place_leave, in_signal_handler, signal_handler_enter,
    signal_handler_leave, signal_handler_reset,
};

/// The running task, as its own code sees it: lends `&Task` for as long as
/// the handle is held, and cannot leave the thread (`*const` makes it
/// neither Send nor Sync), so it cannot outlive the task's run on this
/// worker by being handed to another thread or kept in a static, as the
/// `&'static Task` it replaces could. A task that keeps one and ends never
/// uses it again (its frames are gone); coroutines have thread-locals of
/// their own, so another coroutine does not find it there either.
#[derive(Clone, Copy)]
pub struct Running {
    task: *const Task,
}

impl std::ops::Deref for Running {
    type Target = Task;
    #[inline]
    fn deref(&self) -> &Task {
        // SAFETY: made by `current` from the running task's pointer: the
        // scheduler holds a TaskRef to it for as long as it runs, which is
        // as long as the code holding this handle (on this thread) runs.
        unsafe { &*self.task }
    }
}

/// The running task, if any.
#[inline]
pub fn current() -> Option<Running> {
    let p = current_task_ptr();
    (!p.is_null()).then_some(Running { task: p })
}

/// A counted reference to the running task.
pub fn current_ref() -> Option<TaskRef> {
    current().map(|r| counted(&r))
}

/// A counted reference to `t`, the running task (or one the scheduler
/// otherwise holds a count of).
fn counted(t: &Task) -> TaskRef {
    let p: *const Task = t;
    // SAFETY: `p` came from Arc::as_ptr of a TaskRef the scheduler holds
    // while the task runs; adding a count and rebuilding an Arc is sound.
    unsafe {
        Arc::increment_strong_count(p);
        Arc::from_raw(p)
    }
}

/// Id of the running task (0 outside coroutines).
#[inline]
pub fn current_id() -> u64 {
    current().map_or(0, |t| t.id)
}

/// Switches back to the scheduler. errno is the worker thread's, shared by
/// every coroutine there: it is saved and restored around the switch so a
/// coroutine sees its own errno after any wait, as a thread would. Its
/// slot is found from the TLS words, at the offset the worker learnt when
/// it attached (`prefetch::TlsOffsets`): no call of `__errno_location`.
#[inline(always)]
pub(super) fn suspend(t: &Task) {
    let words = crate::sys::static_tls::words();
    // SAFETY: `words` is this thread's block: its worker word is null or
    // a leaked worker (set on a coroutine's own thread pointer too).
    let errno = match unsafe { ((*words)[1] as *const Worker).as_ref() } {
        Some(w) => w.local.tls_offsets.get().errno_at(words as usize),
        // SAFETY: __errno_location returns this thread's errno slot.
        None => unsafe { libc::__errno_location() },
    };
    suspend_with(t, words, errno);
}

/// `suspend`, given this thread's TLS words (`static_tls::words`), which
/// a yield looked up already, and this thread's errno slot. errno is kept
/// across the switch: coroutines sharing their worker's thread pointer
/// share its errno (one with its own keeps its own: saving and restoring
/// it changes nothing, and costs less than asking which). The thread
/// pointer, and so errno's slot, is the same when the coroutine resumes.
#[inline(always)]
fn suspend_with(t: &Task, words: *mut [usize; 4], errno: *mut i32) {
    // SAFETY: `errno` is this thread's slot, read before the switch and
    // written after it on the same thread pointer.
    let saved = unsafe { *errno };
    // Parked inside a handler corun runs (`in_coroutine`): a coroutine
    // that shares these thread-locals, run meanwhile, is in no handler.
    // Outside one (nearly always) the depth is 0 and stays 0 while the
    // others run (each puts its own back to 0 before it suspends, and
    // handlers leave it as they found it): no write either side.
    // SAFETY: `words` is this thread's block (`static_tls::words`), and
    // stays so across the switch (the thread pointer comes back the same).
    let depth_word = unsafe { &mut (*words)[2] };
    let depth = *depth_word;
    if depth != 0 {
        *depth_word = 0;
    }
    t.debug.save_registers();
    let y = t.yielder.get();
    // SAFETY: `yielder` was set when the coroutine started and points at its
    // root frame, alive while the coroutine is; we run inside that coroutine.
    unsafe { (*y).suspend(()) };
    if depth != 0 {
        // SAFETY: as above.
        unsafe { (*words)[2] = depth };
    }
    // SAFETY: as above.
    unsafe { *errno = saved };
}

/// Parks the running coroutine. `register` receives the waiter to store;
/// it returns false if the condition already holds (no suspension). With a
/// deadline (monotonic ns) a timer wakes the coroutine too. Must be called
/// from a coroutine.
pub fn park(register: impl FnOnce(Waiter) -> bool, deadline: Option<u64>) -> Woken {
    park_as(false, false, register, deadline)
}

/// `park` at a cancellation point (a join, a condition wait, a semaphore
/// wait; every fd wait and sleep below is one too): a due cancellation acts
/// before the park, and `pthread_cancel` wakes the park (the caller acts on
/// it after cleaning up its registration).
pub fn park_cancelable(register: impl FnOnce(Waiter) -> bool, deadline: Option<u64>) -> Woken {
    park_as(true, false, register, deadline)
}

/// `park`, at a cancellation point (`cancelable`) or not. `async_ends`:
/// the caller takes its registration back and acts on an asynchronous
/// cancellation itself (`sync::park_on`): with cancellation asynchronous,
/// `pthread_cancel` ends this park too, and a request already due ends it
/// before it parks (`Woken::NotParked`).
pub(super) fn park_as(
    cancelable: bool,
    async_ends: bool,
    register: impl FnOnce(Waiter) -> bool,
    deadline: Option<u64>,
) -> Woken {
    let r = park_described(cancelable, async_ends, register, deadline);
    // The description (`waitdesc`) lasts as long as the park, parked or not.
    if let Some(t) = current() {
        t.wait.clear();
    }
    r
}

fn park_described(
    cancelable: bool,
    async_ends: bool,
    register: impl FnOnce(Waiter) -> bool,
    deadline: Option<u64>,
) -> Woken {
    // Borrowed, not counted: the scheduler holds a count while the task
    // runs, and every park suspends inside it. Only the waiters left
    // behind hold counts of their own (two locked increments and a
    // decrement fewer per park than a counted copy here).
    let running = current().expect("park outside a coroutine");
    let task: &Task = &running;
    let token_point = task.ident.token_point.replace(false);
    // The park token first, then announce, then check: `pthread_cancel`
    // sets its request, then looks at the flag and wakes the park token it
    // finds (both SeqCst). Either it wakes this very park, or this check
    // sees the request. (Checking before taking the token lost the wake:
    // it landed on the previous park's token.)
    let token = task.begin_park();
    let interruptible = cancelable || (async_ends && task.ident.cancel_async());
    if interruptible {
        task.ident.at_cancel_point.store(true, SeqCst);
        if task.ident.cancel_due() {
            task.ident.at_cancel_point.store(false, Relaxed);
            if !cancelable {
                return Woken::NotParked;
            }
            cancel_now(task);
        }
    }
    // A token-aware park (`token::cancel_point` just before) checks the
    // token after taking its park token: a canceller sets the bit, fences,
    // then wakes the park token it sees; this side takes the token,
    // fences, then looks at the bit. Either the canceller wakes this very
    // park or the park sees the bit, returns, and its caller fails with
    // ECANCELED.
    if cancelable && token_point {
        std::sync::atomic::fence(SeqCst);
        if task.ident.token_cancelled() {
            task.ident.at_cancel_point.store(false, Relaxed);
            return Woken::NotParked;
        }
    }
    let tp: *const Task = task;
    set_current(std::ptr::null());
    let worker = current_worker().expect("coroutines run on workers");
    if !register(Waiter::Task {
        task: counted(task),
        token,
    }) {
        super::stats::not_parked(worker.index);
        set_current(tp);
        return Woken::NotParked;
    }
    let timer = deadline.map(|d| {
        // The preemption monitor learns when a timer of this worker is due.
        super::preempt::timer_added(worker.index, d);
        worker.timers().borrow_mut().insert(
            d,
            Waiter::Task {
                task: counted(task),
                token,
            },
        )
    });
    // Where a hand-over to another worker finds it (`balance.rs`).
    task.park_timer.set(timer);
    // A signal made deliverable since the registration (or a handler that
    // ran just before the park of an interruptible call) ends the park at
    // once; a later one finds the park registered and answers it.
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    let early = super::signals::must_not_sleep(task);
    if !early {
        super::stats::parked(worker.index, task.wait.parking());
        suspend(task);
    }
    set_current(std::ptr::null());
    let fired = match task.park_timer.take() {
        // Still in the heap of the worker it parked on, this one: the
        // timer is gone only if it fired.
        Some(id) => worker.timers().borrow_mut().cancel(id).is_none(),
        // Handed to another worker while woken: the old home cancelled
        // it in its own heap and left the answer (`balance.rs`).
        None => timer.is_some() && task.timer_fired.replace(false),
    };
    let woken = if fired { Woken::TimedOut } else { Woken::Event };
    set_current(tp);
    if interruptible {
        task.ident.at_cancel_point.store(false, Relaxed);
    }
    // Handlers run here, in the coroutine, after the park's own state is
    // cleaned up (a handler may leave by longjmp).
    if super::signals::run_pending(task) || early {
        return Woken::Signal;
    }
    woken
}

/// After a cancelable park whose registrations hold only a spent token
/// now (fd waiter lists, timers: wakers skip them): acts on a due
/// cancellation. Callers whose wait consumed something a cancelled waiter
/// must pass on (a condition signal) check `cancel_due` themselves.
fn cancel_point_after_park() {
    if let Some(t) = current() {
        super::identity::cancel_point(&t.ident);
    }
}

/// Acts on the running task's due cancellation; never returns (the
/// unwinding abandons the frame, which holds no count of the task).
#[cold]
fn cancel_now(_task: &Task) -> ! {
    if let Some(t) = current() {
        super::identity::cancel_point(&t.ident);
    }
    crate::sys::raw_stderr(b"corun: a cancellation with nothing to act on it\n");
    // SAFETY: abort never returns.
    unsafe { libc::abort() }
}

/// Wakes `t` if it is parked at a cancellation point, or, its cancellation
/// being asynchronous, in a wait that takes its registration back and acts
/// (`pthread_cancel`): its park ends as if its event came, and the park
/// acts on the request.
pub fn interrupt_cancelable(t: &TaskRef) {
    if !t.ident.at_cancel_point.load(SeqCst) {
        return;
    }
    if let Some(token) = t.current_park() {
        Waiter::Task {
            task: t.clone(),
            token,
        }
        .wake();
    }
    // A coroutine waiting in the program's epoll_wait as its worker's
    // sleep (`solo.rs`) is not parked: the worker's eventfd ends its wait.
    if matches!(t.state(), super::task::RUNNING | super::task::NOTIFIED) {
        super::spawn::notify_home(t.home());
    }
}

/// What `enlist` did.
pub(crate) enum Enlist {
    /// The waiter is on the fd's list.
    Waiting,
    /// The fd's readiness moved past the caller's snapshot: retry now.
    Changed,
    /// The fd was closed or replaced since the snapshot.
    Closed,
    /// epoll refuses the fd (a regular file); errno given.
    NotPollable(i32),
}

/// Puts `w` on `fd`'s waiter list for `dir`, unless the fd changed since
/// the caller's snapshot. The check is made under the waiter lock, which
/// the netpoller takes to wake waiters after moving the sequence, so an
/// edge between the snapshot and the park is never lost. The first waiter
/// of each worker registers the fd with that worker's epoll, so the
/// readiness reaches the worker the waiter runs on whatever the others are
/// doing (docs/ARCHITECTURE.md §4); stale waiters are pruned.
pub(crate) fn enlist(fd: i32, e: &fdtable::FdEntry, dir: Dir, seen: Snapshot, w: Waiter) -> Enlist {
    use std::sync::atomic::Ordering::Acquire;
    let mut g = fdtable::lock(&e.waiters);
    let gen = e.gen.load(Acquire);
    if gen != seen.gen {
        return Enlist::Closed;
    }
    if e.seq(dir).load(Acquire) != seen.seq {
        return Enlist::Changed;
    }
    let worker = current_worker().expect("coroutines run on workers");
    // Before the registration: from here on, resets take the lock.
    super::lone::note_fd_wait();
    if !g.registered_on(gen, worker.index) {
        let data = (fd as u32 as u64) | ((gen as u64) << 32);
        if let Err(err) = worker.epoll().register(fd, data) {
            return Enlist::NotPollable(err);
        }
        g.mark_registered(gen, worker.index);
        e.policy.note_file(fd, gen);
    }
    let list = g.list(dir);
    list.retain(|x| x.is_live());
    list.push(w);
    Enlist::Waiting
}

/// Parks until `fd` may be ready for `dir`, given what the caller saw
/// before its attempt that returned EAGAIN.
pub fn park_until_ready(fd: i32, dir: Dir, seen: Snapshot, deadline: Option<u64>) -> FdWait {
    let e = match fdtable::get(fd) {
        Some(e) => e,
        None => return FdWait::NotPollable(libc::EBADF),
    };
    let mut outcome = FdWait::Ready;
    let cause = match dir {
        Dir::Read => Cause::FdRead,
        Dir::Write => Cause::FdWrite,
    };
    describe(cause, fd as u64);
    let my_id = current_id();
    let mut my_token = 0;
    let fd_park = super::worker::FdPark::begin();
    let woken = park_cancelable(
        |w| {
            if let Waiter::Task { token, .. } = &w {
                my_token = *token;
            }
            match enlist(fd, e, dir, seen, w) {
                Enlist::Waiting => true,
                Enlist::Changed => false,
                Enlist::Closed => {
                    outcome = FdWait::Closed;
                    false
                }
                Enlist::NotPollable(err) => {
                    outcome = FdWait::NotPollable(err);
                    false
                }
            }
        },
        deadline,
    );
    drop(fd_park);
    cancel_point_after_park();
    if outcome != FdWait::Ready {
        return outcome;
    }
    if e.gen.load(std::sync::atomic::Ordering::Acquire) != seen.gen {
        return FdWait::Closed;
    }
    if woken == Woken::TimedOut {
        fdtable::lock(&e.waiters)
            .list(dir)
            .retain(|x| !x.is_park(my_id, my_token));
        return FdWait::TimedOut;
    }
    FdWait::Ready
}

/// Parks until any of `waits` may be ready (its readiness sequence moved
/// past the snapshot, or the fd was closed), or until `deadline`.
///
/// One clone of the waiter goes on each fd's list, registered under that
/// fd's lock with the same check `park_until_ready` makes, so an edge
/// between the caller's snapshot and the park is never lost. An fd epoll
/// refuses (a regular file: poll calls it always ready; or past the table)
/// cannot change readiness and is left out. Clones left on the other lists
/// after the wake are stale (their token is spent): wakers ignore them and
/// the next registration on that fd prunes them. Callers re-check
/// readiness themselves; `Woken::NotParked` means something changed before
/// the park.
pub fn park_until_any_ready(waits: &[(i32, Dir, Snapshot)], deadline: Option<u64>) -> Woken {
    describe(Cause::Poll, waits.first().map_or(u64::MAX, |w| w.0 as u64));
    let fd_park = super::worker::FdPark::begin();
    let woken = park_cancelable(
        |w| {
            for &(fd, dir, seen) in waits {
                let Some(e) = fdtable::get(fd) else { continue };
                match enlist(fd, e, dir, seen, w.clone()) {
                    Enlist::Waiting | Enlist::NotPollable(_) => {}
                    Enlist::Changed | Enlist::Closed => return false,
                }
            }
            true
        },
        deadline,
    );
    drop(fd_park);
    cancel_point_after_park();
    woken
}

/// Sleeps until the monotonic time `deadline` (ns).
pub fn sleep_until(deadline: u64) {
    while crate::sys::now_ns() < deadline {
        describe(Cause::Timer, deadline);
        park_cancelable(|_| true, Some(deadline));
        cancel_point_after_park();
    }
}

/// Lets every other runnable coroutine of this worker run once (a no-op
/// when there is none). A yield is not a park: no token, no wake-up, the
/// scheduler puts the task at the back of its run queue.
pub fn yield_now() {
    // The task and the worker from one look-up of this thread's words.
    let words = crate::sys::static_tls::words();
    // SAFETY: `words` is this thread's block; the task word is null or
    // the running task, the worker word null or a leaked worker.
    let (tp, wp) = unsafe { ((*words)[0] as *const Task, (*words)[1] as *const Worker) };
    if tp.is_null() || wp.is_null() {
        return;
    }
    // SAFETY: as above: the scheduler holds the task while it runs, and
    // workers are never freed.
    let (task, w) = unsafe { (&*tp, &*wp) };
    super::stats::yielded_on(w.index);
    if !w.has_other_work() {
        return;
    }
    task.yielding.set(true);
    let errno = w.local.tls_offsets.get().errno_at(words as usize);
    suspend_with(task, words, errno);
    super::signals::run_pending(task);
}

/// Ends the running coroutine from any depth (`pthread_exit`): `result` is
/// what a join returns; the scheduler abandons the frames (C frames are not
/// unwound) and recycles the stack. Outside a coroutine it aborts: callers
/// check `in_coroutine` first.
pub fn exit_current(result: usize) -> ! {
    let Some(task) = current() else {
        crate::sys::raw_stderr(b"corun: exit_current outside a coroutine\n");
        // SAFETY: abort never returns.
        unsafe { libc::abort() }
    };
    task.result.store(result, Relaxed);
    task.exiting.set(true);
    // An exit from a handler (pthread_exit in one): it never returns.
    signal_handler_reset();
    set_current(std::ptr::null());
    let y = task.yielder.get();
    // SAFETY: as in `suspend`; the scheduler sees `exiting` and never
    // resumes this coroutine again.
    unsafe { (*y).suspend(()) };
    crate::sys::raw_stderr(b"corun: an exited coroutine was resumed\n");
    // SAFETY: abort never returns.
    unsafe { libc::abort() }
}

/// The usable stack of the running coroutine: (lowest address, top).
pub fn current_stack() -> Option<(usize, usize)> {
    let t = current()?;
    // SAFETY: the running task's `coro` is only touched by its home worker,
    // which is this thread, and it is not being replaced while it runs.
    let c = unsafe { (*t.coro.get()).as_ref()? };
    let ((_, guard_hi), top) = c.bounds();
    Some((guard_hi, top))
}
