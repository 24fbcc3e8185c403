//! What a forked child keeps of the runtime (docs/ARCHITECTURE.md §5.5).
//!
//! `fork` copies the whole address space but only the calling thread. The
//! child inherits every fd, including each worker's epoll instance and
//! eventfd, which it now *shares* with the parent: waiting on them would
//! steal the parent's readiness events. So, in the child, on the thread that
//! forked (`after_fork_child`):
//!
//! - that thread's worker gets a new epoll instance and eventfd, and drops
//!   every queued task and timer (they are the parent's coroutines: the
//!   other threads of a forked process do not exist in the child); its
//!   task queues that other threads push to are replaced, not drained
//!   (`fork_injector.rs`: a push cut by the fork would make a drain spin);
//! - every other worker is marked dead: never started, never placed on,
//!   until the child's first spawn gives each slot a fresh worker
//!   (`Workers::renew_dead_if_pending`, `workers.rs`), so the threads a child makes use the
//!   CPUs as a process's do;
//! - the fd table is rebuilt without waiters or epoll registrations (the
//!   parent's), keeping what the hooks learned about each fd;
//! - the futex table (`sync`) forgets the parent's sleepers, and any of
//!   its locks (or the TLS pool's) that another thread held at the fork is
//!   made anew (`sys::unlock_after_fork`);
//! - the blocking pool and the watchdog forget their threads (and the
//!   watchdog's symbol tables their lock, `startname::after_fork_child`);
//! - the forking coroutine is the only thread signals may reach, and no
//!   signal is pending (`signals::after_fork`);
//! - the forking coroutine is the child's only one. If it is not `main`,
//!   its end is the end of the child's last thread: the child exits with
//!   status 0, as a process whose only thread returned does.

use std::sync::atomic::{AtomicU64, Ordering};

use super::runtime::runtime;
use super::timers::Timers;
use super::worker::{current_worker, Worker};

/// The task that forked, in a child process (0: not a forked child, or the
/// forking task was main, whose return ends the process anyway).
static ANCHOR: AtomicU64 = AtomicU64::new(0);

/// Called in the child right after fork, on the forking thread.
pub fn after_fork_child(forking_task: u64, is_main: bool) {
    let w = match current_worker() {
        Some(w) => w,
        None => return,
    };
    super::fdtable::rebuild_after_fork();
    super::sync::after_fork_child();
    super::sync::shared_watch::after_fork_child();
    crate::ctx::tls::after_fork_child();
    // Still on the forking thread pointer: the descriptor glibc kept.
    crate::ctx::setxid::after_fork_child(w.index);
    keep_only(w);
    super::lone::after_fork_child();
    super::blocking::reset_after_fork();
    super::stack_pool::shared_stacks_after_fork();
    super::watchdog::reset_after_fork();
    super::helper_park::after_fork_child();
    super::preempt::reset_after_fork();
    super::proc_view::after_fork_child();
    super::startname::after_fork_child();
    super::deadline::after_fork_child();
    super::dump::after_fork_child();
    if let Some(me) = super::park::current_ref() {
        super::signals::after_fork(&me);
    }
    if !is_main {
        ANCHOR.store(forking_task, Ordering::Relaxed);
    }
}

/// The runtime keeps only the calling worker; the other workers are dead
/// (never started, never placed on) until the child's first spawn renews
/// them, and the global queue is dropped.
fn keep_only(me: &'static Worker) {
    let Some(rt) = runtime() else { return };
    rt.workers.mark_dead_renewable(me.index);
    // SAFETY: the child's only thread, right after the fork; the queues
    // are not in use (fork_injector.rs: draining one could spin for ever).
    unsafe { rt.global.reset_after_fork() };
    reset_worker(me);
}

/// The forking thread's worker keeps only the task that forked. Its epoll
/// and eventfd are shared with the parent (inherited fds), so it gets new
/// ones; every queued task and timer belongs to the parent's world and is
/// dropped (leaked, never run: a suspended coroutine cannot be unwound),
/// as the other threads of a forked process do not exist in the child.
///
/// The new epoll and eventfd are made when first needed (`renewed`, in
/// `netpoller.rs`): a child whose only coroutine makes its calls as
/// natively never waits on them, and pays none of it.
fn reset_worker(w: &'static Worker) {
    w.local.stale.set(true);
    // The forking thread has a new tid in the child: the parent's one is
    // no thread of this process (signals aimed at the worker, the
    // preemption monitor's and the watchdog's /proc reads, new threads'
    // descriptors all use it).
    w.tid.store(crate::sys::gettid(), Ordering::Relaxed);
    let drop_all = |t: super::task::TaskRef| std::mem::forget(t);
    // Each queue is looked at before it is drained: a forked child pays
    // (in page faults: `sys::ForkReset`) only for what it finds.
    if !w.local.run_queue.borrow().is_empty() {
        while let Some(turn) = w.local.run_queue.borrow_mut().pop(|| 0, u64::MAX) {
            if let super::run_queue::Turn::Ready(t) = turn {
                drop_all(t);
            }
        }
    }
    if !w.local.fresh.is_empty() {
        while let Some(t) = w.local.fresh.pop() {
            drop_all(t);
        }
    }
    w.forget_handoff_after_fork();
    // SAFETY: as for the global queue in `keep_only`.
    unsafe {
        w.inbox.reset_after_fork();
        w.placed.reset_after_fork();
    }
    std::mem::forget(w.local.timers.replace(Timers::new()));
    w.load.reset(1);
    w.local.fd_parks.set(0);
    super::stats::live_after_fork();
    w.sleeping.store(false, Ordering::Relaxed);
    w.napping.store(false, Ordering::Relaxed);
}

/// A task ended: if it was a forked child's only thread, the child ends.
pub fn task_ended(id: u64) {
    if id != 0 && ANCHOR.load(Ordering::Relaxed) == id {
        // SAFETY: exit runs atexit handlers and flushes stdio, as the
        // return of the last thread of a process does.
        unsafe { libc::exit(0) };
    }
}
