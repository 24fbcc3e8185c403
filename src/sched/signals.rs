//! Signals for threads that are coroutines: who takes a signal, and how a
//! parked coroutine is interrupted.
//!
//! # The model
//!
//! Each coroutine has its own mask and pending set (`ident.sigmask`,
//! `ident.pending`). The workers' kernel mask lets through every signal
//! some coroutine may take (`sigmask.rs`), and corun's trampoline
//! (`hooks/sigdeliver.rs`) runs for each signal the program handles. There,
//! as the kernel picks a thread:
//!
//! - a fault, or a signal sent to the running thread itself (`raise`,
//!   `tgkill`; SIGPIPE), belongs to the coroutine that runs: its handler
//!   runs at once if the coroutine does not block it, else it stays pending
//!   for that coroutine;
//! - a signal sent to the process goes to `main` if `main` does not block
//!   it (Linux offers it to the thread group leader first), else to the
//!   running coroutine if it does not block it (the handler runs at once,
//!   in place, as it always did), else to any coroutine that does not
//!   block it, found later by a worker (`dispatch`); until one is found
//!   the process keeps it (`PROC_PENDING`), as the kernel keeps a signal
//!   every thread blocks;
//! - `pthread_kill`/`pthread_sigqueue` name a coroutine: pending there.
//!
//! A signal made pending for a coroutine that does not block it must reach
//! that coroutine. If it is parked, its park is answered (as an fd event
//! would be); when it resumes, the park itself runs the handlers, in the
//! coroutine's own context and stack (`run_pending`, through the runner the
//! hooks register), and the hook that parked decides, from the counters a
//! handler bumps (`Interruptible`), whether to fail with EINTR or go on
//! waiting (SA_RESTART). If it runs on another worker, that worker gets a
//! "kick": the same signal sent to its thread with a marker value, on which
//! the trampoline runs the coroutine's pending handlers in place.
//!
//! # From a signal handler
//!
//! The trampoline may interrupt anything, the scheduler included, so what
//! it does never locks or allocates (Go's `sigqueue.go` is the model): it
//! sets bits, keeps the siginfo in a fixed table (`siginfo.rs`), sets
//! `WORK` and writes the eventfd of the worker that should act. Waking a
//! parked task (which pushes on run queues) happens later, in a worker's
//! loop (`sigdispatch.rs`: `worker_tick` -> `dispatch`), with the normal
//! wake path. Callers
//! in normal context (`pthread_kill` from a coroutine) wake directly.
//!
//! # Races
//!
//! A park checks for a deliverable signal after it registered and before
//! it suspends (`must_not_sleep`), with a SeqCst fence; a sender marks the
//! pending bit first and then answers the park. One of the two sees the
//! other. A handler that runs in place just before a park (between the
//! attempt of an interruptible call and its park) is noticed the same way:
//! the call "arms" its baseline in the task, and a park does not suspend
//! once the handler counter moved past it.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use super::park::{current, in_signal_handler};
use super::runtime::runtime;
use super::sigdispatch::{interrupt, register, unregister};
use super::siginfo::{self, Info};
use super::sigmask::{self, bit, UNBLOCKABLE};
use super::task::{Task, TaskRef, DONE, NOTIFIED, RUNNING};
use super::worker::current_worker;

/// `si_value` of a kick (with SI_QUEUE and our own pid).
pub const KICK_VALUE: u64 = 0x636f_7275_6e4b_4943;
/// `si_value` of a held kick: one a worker sends itself from a nested
/// handler, blocked until the outer handler returns (`sigdeliver::hold`).
pub const HELD_VALUE: u64 = 0x636f_7275_6e48_4c44;

/// Whether a SI_QUEUE value is one of corun's markers (a kick, held or
/// not), never the program's signal.
pub fn is_marker_value(v: u64) -> bool {
    v == KICK_VALUE || v == HELD_VALUE
}

/// `ident.sig.armed`: an interruptible call is under way.
const ARMED: u64 = 1 << 63;

/// Signals sent to the process that no coroutine took yet.
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
pub(super) static PROC_PENDING: AtomicU64 = AtomicU64::new(0);
/// A worker should dispatch (set from handlers).
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
pub(super) static WORK: AtomicBool = AtomicBool::new(false);
/// Some task other than main may need a wake-up: scan the registry.
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
pub(super) static SCAN: AtomicBool = AtomicBool::new(false);
/// Only one worker dispatches at a time.
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
pub(super) static DISPATCHING: AtomicBool = AtomicBool::new(false);
/// `main`'s task (a counted reference leaked for the process' life).
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
pub(super) static MAIN: AtomicPtr<Task> = AtomicPtr::new(std::ptr::null_mut());
/// Runs the program's handlers of the running task's deliverable signals
/// (registered by the hooks layer, which knows the handlers).
static RUNNER: AtomicUsize = AtomicUsize::new(0);

/// The handler runner's type.
pub type Runner = fn(&Task);

/// Registers the function that runs a task's deliverable handlers.
pub fn set_runner(f: Runner) {
    RUNNER.store(f as usize, Ordering::Release);
}

// ---------------------------------------------------------------------------
// Task life

fn main_task() -> Option<&'static Task> {
    let p = MAIN.load(Ordering::Acquire);
    // SAFETY: MAIN holds a leaked counted reference: never freed.
    (!p.is_null()).then(|| unsafe { &*p })
}

pub(super) fn main_ref() -> Option<TaskRef> {
    let p = MAIN.load(Ordering::Acquire);
    if p.is_null() {
        return None;
    }
    // SAFETY: a leaked counted reference (see MAIN): adding a count and
    // rebuilding an Arc from it is sound.
    unsafe {
        Arc::increment_strong_count(p);
        Some(Arc::from_raw(p))
    }
}

fn is_main(t: &Task) -> bool {
    std::ptr::eq(MAIN.load(Ordering::Relaxed), t)
}

#[inline]
pub(super) fn open(t: &Task, sig: i32) -> bool {
    t.ident.sigmask.load(Ordering::SeqCst) & bit(sig) == 0
}

/// The mask a new thread inherits: its creator's.
pub fn inherited_mask() -> u64 {
    match current() {
        Some(t) => t.ident.sigmask.load(Ordering::Relaxed),
        None => sigmask::thread_mask(),
    }
}

/// A task was made with mask `mask`.
pub fn task_created(t: &TaskRef, mask: u64) {
    let m = mask & !UNBLOCKABLE;
    t.ident.sigmask.store(m, Ordering::Relaxed);
    t.ident.sig.counted.store(m, Ordering::Relaxed);
    register(t);
    if sigmask::count_in(m) {
        mask_changed();
    }
    if PROC_PENDING.load(Ordering::SeqCst) & !m != 0 {
        WORK.store(true, Ordering::SeqCst);
    }
}

/// `main`'s task was made (with this thread's mask).
pub fn main_created(t: &TaskRef) {
    task_created(t, sigmask::thread_mask());
    MAIN.store(Arc::into_raw(t.clone()) as *mut Task, Ordering::Release);
}

/// A task ended: its mask no longer counts; its pending signals go with it.
pub fn task_ended(t: &Task) {
    if unregister(t) && sigmask::count_out(t.ident.sig.counted.load(Ordering::SeqCst)) {
        mask_changed();
    }
    if t.ident.pending.load(Ordering::SeqCst) != 0 && t.ident.pending.swap(0, Ordering::SeqCst) != 0
    {
        siginfo::forget(t.id);
    }
}

/// In a forked child, on the forking thread: `me` is the only thread, the
/// new main; no signal is pending (as after fork).
pub fn after_fork(me: &TaskRef) {
    use crate::sys::ForkReset;
    super::sigdispatch::forget_all_after_fork();
    me.ident.sig.registered.store(false, Ordering::Relaxed);
    sigmask::reset();
    PROC_PENDING.reset_to(0);
    WORK.reset_to(false);
    SCAN.reset_to(false);
    DISPATCHING.reset_to(false);
    me.ident.pending.store(0, Ordering::SeqCst);
    siginfo::clear();
    let m = me.ident.sig.counted.load(Ordering::Relaxed);
    register(me);
    sigmask::count_in(m);
    MAIN.store(Arc::into_raw(me.clone()) as *mut Task, Ordering::Release);
    sigmask::set_thread_mask(sigmask::kernel_mask());
    if let Some(w) = current_worker() {
        w.sig_epoch.store(sigmask::epoch(), Ordering::Relaxed);
    }
}

// ---------------------------------------------------------------------------
// Masks

/// Sets `t`'s mask, as `sigprocmask` does (counted: it decides the
/// workers' mask). Returns the old one. Only `t` itself calls this.
pub fn set_mask(t: &Task, new: u64) -> u64 {
    let new = new & !UNBLOCKABLE;
    let old = t.ident.sigmask.swap(new, Ordering::SeqCst);
    let counted = t.ident.sig.counted.swap(new, Ordering::SeqCst);
    if t.ident.sig.registered.load(Ordering::Relaxed) && sigmask::count_change(counted, new) {
        mask_changed();
    }
    old
}

/// The mask a handler runs with (for its duration: not counted).
pub fn set_handler_mask(t: &Task, m: u64) {
    t.ident.sigmask.store(m & !UNBLOCKABLE, Ordering::SeqCst);
}

/// Back from a handler: the mask `saved` again.
pub fn restore_mask(t: &Task, saved: u64) {
    if t.ident.sig.counted.load(Ordering::SeqCst) != saved {
        set_mask(t, saved);
    } else {
        t.ident.sigmask.store(saved, Ordering::SeqCst);
    }
}

/// The workers' mask changed: wake sleeping workers so they apply it.
/// Async-signal-safe.
fn mask_changed() {
    super::spawn::notify_all();
}

/// Applies the workers' mask to this worker thread now, inside a signal
/// handler too (async-signal-safe): a handler that unblocks a signal gets
/// it, as natively. A child forked in a handler never returns from it
/// (PostgreSQL 15 forks its walwriter and autovacuum launcher in its
/// SIGCHLD handler, whose sa_mask blocks everything; the child then
/// unblocks SIGTERM and must get it at a fast shutdown: a fork in a
/// handler is the kernel's plain fork, `hooks/process.rs`). When the handler
/// returns, the mask is right again: sigreturn installs the workers' mask
/// if it changed meanwhile (`sigdeliver::in_place`), and a handler a
/// coroutine ran is followed by `sync_here`.
pub fn sync_in_handler() {
    if let Some(w) = current_worker() {
        // Whatever the epoch says: the kernel put the handler's mask on
        // the thread, which no epoch counts.
        sigmask::set_thread_mask(sigmask::kernel_mask());
        w.sig_epoch.store(sigmask::epoch(), Ordering::Relaxed);
    }
}

/// Applies the workers' mask to this thread now, if it is a worker and not
/// in a signal handler: a signal just unblocked and pending in the kernel
/// is then delivered before the caller goes on.
pub fn sync_here() {
    if in_signal_handler() {
        return;
    }
    if let Some(w) = current_worker() {
        sigmask::apply_here(&w.sig_epoch);
    }
}

// ---------------------------------------------------------------------------
// Pending signals of a task

/// Signals `t` could take now: its own pending ones and the process' that
/// it does not block.
#[inline]
pub fn deliverable(t: &Task) -> u64 {
    (t.ident.pending.load(Ordering::SeqCst) | PROC_PENDING.load(Ordering::SeqCst))
        & !t.ident.sigmask.load(Ordering::SeqCst)
}

/// Takes the lowest signal of `set` pending for `t` (its own first, then
/// the process'), with its siginfo.
pub fn take_in(t: &Task, set: u64) -> Option<(i32, Info)> {
    loop {
        let own = t.ident.pending.load(Ordering::SeqCst) & set;
        let proc = PROC_PENDING.load(Ordering::SeqCst) & set;
        let avail = own | proc;
        if avail == 0 {
            return None;
        }
        let sig = avail.trailing_zeros() as i32 + 1;
        let b = bit(sig);
        if own & b != 0 && t.ident.pending.fetch_and(!b, Ordering::SeqCst) & b != 0 {
            let info = siginfo::take(t.id, sig).unwrap_or_else(|| siginfo::bare(sig));
            return Some((sig, info));
        }
        if proc & b != 0 && PROC_PENDING.fetch_and(!b, Ordering::SeqCst) & b != 0 {
            let info = siginfo::take(0, sig).unwrap_or_else(|| siginfo::bare(sig));
            return Some((sig, info));
        }
    }
}

/// Takes the lowest signal `t` could take now.
pub fn take_deliverable(t: &Task) -> Option<(i32, Info)> {
    take_in(t, !t.ident.sigmask.load(Ordering::SeqCst))
}

/// Signals pending for `t` or the process (for `sigpending`).
pub fn pending_for(t: &Task) -> u64 {
    t.ident.pending.load(Ordering::SeqCst) | PROC_PENDING.load(Ordering::SeqCst)
}

/// Runs the handlers of `t`'s deliverable signals now, in its context (`t`
/// runs on this thread). True if a handler ran.
pub fn run_pending(t: &Task) -> bool {
    if t.ident.sig.uninterruptible.load(Ordering::Relaxed) || deliverable(t) == 0 {
        return false;
    }
    let f = RUNNER.load(Ordering::Acquire);
    if f == 0 {
        return false;
    }
    // SAFETY: RUNNER only ever holds a `Runner` (set_runner).
    let f: Runner = unsafe { std::mem::transmute::<usize, Runner>(f) };
    let before = t.ident.sig.handled.load(Ordering::Relaxed);
    f(t);
    t.ident.sig.handled.load(Ordering::Relaxed) != before
}

/// How many handlers of the program's the running coroutine has run so
/// far (None outside a coroutine): two reads around a system call tell
/// whether one ran during it.
#[inline]
pub fn handlers_run() -> Option<u32> {
    current().map(|t| t.ident.sig.handled.load(Ordering::Relaxed))
}

/// Whether a park of `t` must not suspend now: a signal to deliver, one a
/// sigwait waits for, or a handler ran since the interruptible call began.
#[inline]
pub fn must_not_sleep(t: &Task) -> bool {
    let s = &t.ident.sig;
    if s.uninterruptible.load(Ordering::Relaxed) {
        // A kickable pool job: a deliverable signal ends the park, and the
        // wait cuts the job short (`pool_kick.rs`).
        return !deaf(s) && deliverable(t) != 0;
    }
    if deliverable(t) != 0
        || t.ident.pending.load(Ordering::SeqCst) & s.waiting_for.load(Ordering::Relaxed) != 0
    {
        return true;
    }
    let a = s.armed.load(Ordering::Relaxed);
    a & ARMED != 0 && a as u32 != s.handled.load(Ordering::Relaxed)
}

/// A blocking call that a signal handler interrupts: its baseline of the
/// running task's handler counters. Made when the call is about to wait.
pub struct Interruptible {
    handled: u32,
    eintr: u32,
}

impl Interruptible {
    /// Starts watching (the caller runs in a coroutine).
    pub fn begin() -> Interruptible {
        let Some(t) = current() else {
            return Interruptible {
                handled: 0,
                eintr: 0,
            };
        };
        let s = &t.ident.sig;
        let handled = s.handled.load(Ordering::Relaxed);
        s.armed.store(ARMED | handled as u64, Ordering::Relaxed);
        Interruptible {
            handled,
            eintr: s.handled_eintr.load(Ordering::Relaxed),
        }
    }

    /// None while no handler ran since `begin`; Some(restart) once one did,
    /// `restart` being true when every such handler had SA_RESTART.
    pub fn check(&self) -> Option<bool> {
        let t = current()?;
        let s = &t.ident.sig;
        (s.handled.load(Ordering::Relaxed) != self.handled)
            .then(|| s.handled_eintr.load(Ordering::Relaxed) == self.eintr)
    }
}

impl Drop for Interruptible {
    fn drop(&mut self) {
        // Disarms, unless a newer baseline armed it since.
        if let Some(t) = current() {
            let _ = t.ident.sig.armed.compare_exchange(
                ARMED | self.handled as u64,
                0,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Making signals pending (async-signal-safe unless said otherwise)

/// Marks `sig` pending at `t`; false if it was pending already (the new
/// instance merges with it, as the kernel merges standard signals).
fn add_pending(t: &Task, sig: i32, info: &Info) -> bool {
    let b = bit(sig);
    let kept = siginfo::put(t.id, sig, info);
    if t.ident.pending.fetch_or(b, Ordering::SeqCst) & b != 0 {
        if kept {
            siginfo::take(t.id, sig);
        }
        return false;
    }
    true
}

/// Whether signals for a thread wait for the end of what it does: a
/// blocking-pool job that no signal cuts short, or one already cut short
/// (`pool_kick.rs`). A kickable one is woken; it runs no handler before
/// its job ends all the same (`run_pending` waits for `uninterruptible`).
pub(super) fn deaf(s: &super::identity::SignalState) -> bool {
    s.uninterruptible.load(Ordering::Relaxed)
        && s.pool_kick.load(Ordering::SeqCst) != super::pool_kick::KICKABLE
}

/// Whether `t` must be woken to take what is pending for it.
pub(super) fn wants_wake(t: &Task) -> bool {
    let s = &t.ident.sig;
    let p = t.ident.pending.load(Ordering::SeqCst);
    !deaf(s)
        && t.state() != DONE
        && (p & !t.ident.sigmask.load(Ordering::SeqCst) != 0
            || p & s.waiting_for.load(Ordering::Relaxed) != 0)
}

/// Asks a worker to wake `t` for its pending signals; kicks the worker
/// that runs it, if another. Async-signal-safe.
fn request_wake(t: &Task, sig: i32) {
    if !is_main(t) {
        SCAN.store(true, Ordering::SeqCst);
    }
    WORK.store(true, Ordering::SeqCst);
    kick_if_running(t, sig);
    super::spawn::notify_home(t.home());
}

/// Sends the marker signal to the worker running `t`, if `t` runs (or is
/// about to park) on another thread. Async-signal-safe.
pub(super) fn kick_if_running(t: &Task, sig: i32) {
    if !matches!(t.state(), RUNNING | NOTIFIED) {
        return;
    }
    let Some(rt) = runtime() else { return };
    let Some(w) = rt.workers.get(t.home()) else {
        return;
    };
    let tid = w.tid.load(Ordering::Relaxed);
    if tid == 0 || tid == crate::sys::gettid() {
        return;
    }
    send_marker(tid, sig, KICK_VALUE);
}

/// Sends signal `sig` with corun's marker `value` (SI_QUEUE, our pid) to
/// thread `tid` of this process. Async-signal-safe.
pub fn send_marker(tid: i32, sig: i32, value: u64) {
    let mut info = [0u64; siginfo::WORDS];
    // SAFETY: getpid/getuid have no preconditions.
    let (pid, uid) = unsafe { (libc::getpid(), libc::getuid()) };
    info[0] = sig as u32 as u64;
    info[1] = libc::SI_QUEUE as u32 as u64;
    info[2] = (pid as u32 as u64) | ((uid as u64) << 32);
    info[3] = value;
    // SAFETY: a siginfo buffer of the kernel's size; SI_QUEUE (negative)
    // may be sent to a thread of our own process.
    unsafe { libc::syscall(libc::SYS_rt_tgsigqueueinfo, pid, tid, sig, info.as_ptr()) };
}

/// A signal for `t` that cannot run its handler where it arrived: pending
/// at `t`, which is woken if it can take it. Async-signal-safe.
pub fn give(t: &Task, sig: i32, info: &Info) {
    // Merged with a pending instance: its wake-up is under way already.
    if add_pending(t, sig, info) && wants_wake(t) {
        request_wake(t, sig);
    }
}

/// A signal sent to the process that the interrupted coroutine does not
/// take: main if it does not block it, else the process keeps it until a
/// worker finds a coroutine that does not. Async-signal-safe.
pub fn to_process(sig: i32, info: &Info) {
    if let Some(m) = main_task() {
        if open(m, sig) && m.state() != DONE {
            give(m, sig, info);
            return;
        }
    }
    let b = bit(sig);
    let kept = siginfo::put(0, sig, info);
    if PROC_PENDING.fetch_or(b, Ordering::SeqCst) & b != 0 && kept {
        siginfo::take(0, sig);
    }
    WORK.store(true, Ordering::SeqCst);
    super::spawn::notify_all();
}

/// Whether main would take a process signal `sig` (it exists, runs and does
/// not block it). Async-signal-safe.
pub fn main_takes(sig: i32) -> bool {
    main_task().is_some_and(|m| open(m, sig) && m.state() != DONE)
}

/// Whether `t` is main.
pub fn task_is_main(t: &Task) -> bool {
    is_main(t)
}

/// `pthread_kill`/`pthread_sigqueue` of a coroutine: pending at `t`; run
/// now if `t` is the caller and takes it, as `raise` does; else `t` is
/// woken (directly from normal context, through a worker from a handler).
pub fn send_to_task(t: &TaskRef, sig: i32, info: &Info) {
    let _ = add_pending(t, sig, info);
    if current().is_some_and(|c| std::ptr::eq(&*c, &**t)) {
        if !in_signal_handler() {
            run_pending(t);
        }
        // In a handler: delivered when the handler returns.
        return;
    }
    if !wants_wake(t) {
        return;
    }
    if in_signal_handler() {
        request_wake(t, sig);
    } else {
        interrupt(t);
    }
}
