//! The scheduler: per-worker run queues, timers and epoll netpollers.
//!
//! Read in this order: `task.rs` (the park/wake protocol), `worker.rs` (a
//! worker's state and the sleep/wake protocol), `run_loop.rs` (the loop),
//! `resume.rs` (running one task), `spawn.rs` (placement and cross-worker
//! wake-ups), `netpoller.rs`, `park.rs` (the API the hooks use),
//! `fdtable.rs` (per-fd readiness and waiters), `timers.rs`, `signals.rs`
//! (who takes a signal, how a park is interrupted; with `sigmask.rs` and
//! `siginfo.rs`).
//!
//! Nothing here knows about hooks or libc names: a hook asks to park until
//! an fd is ready or a deadline passes, and the scheduler wakes it. Inside,
//! arrows run one way: the core (`runtime.rs`, `worker.rs`, `run_loop.rs`,
//! `resume.rs`, `spawn.rs`, `netpoller.rs`, `stack_pool.rs`) never calls
//! fork, the watchdog or the blocking pool; `start` below plugs them in.

mod balance;
pub mod blocking;
mod cfi;
pub mod chan;
pub mod chan_queue;
mod chan_select;
pub mod confined;
pub mod cosync;
pub mod cpuclock;
pub mod deadline;
pub mod debugreg;
pub mod dump;
pub mod fault_park;
pub mod fdkeep;
pub mod fdpolicy;
pub mod fdtable;
mod fifo;
mod foreign_stack;
pub mod fork;
pub mod fork_injector;
pub mod handler_depth;
mod helper_park;
pub mod identity;
pub mod load;
pub mod lone;
pub mod netpoller;
mod own_lock;
pub mod park;
pub mod pool_kick;
pub mod preempt;
mod preempt_asm;
mod preempt_monitor;
mod preempt_refusals;
mod preempt_safe;
mod preempt_table;
pub mod prefetch;
mod proc_view;
pub mod resume;
pub mod run_loop;
pub mod run_queue;
pub mod runtime;
pub mod rustdemangle;
pub mod scope;
mod shed;
pub mod sigdispatch;
pub mod siginfo;
pub mod sigmask;
pub mod signals;
pub mod slice;
pub mod solo;
pub mod spawn;
pub mod spin_lock;
pub mod stack_pool;
pub mod startname;
pub mod stats;
pub mod symbols;
pub mod sync;
pub mod task;
pub mod timers;
pub mod token;
pub mod unwind;
pub mod wait;
pub mod waitdesc;
pub mod waiter;
pub mod waitlist;
pub mod wake_latency;
pub mod watchdog;
pub mod worker;
pub mod worker_stack;
pub mod workers;

pub use park::{
    current, current_id, current_ref, current_stack, exit_current, in_coroutine,
    interrupt_cancelable, park, park_cancelable, park_until_any_ready, park_until_ready,
    sleep_until, yield_now, FdWait, Running, Woken,
};
pub use runtime::{run_until_done, runtime};
pub use shed::bind_to_kernel_thread;
pub use spawn::{spawn, spawn_main, spawn_thread};
pub use task::{Entry, Task, TaskRef};
pub use waiter::{ThreadParker, Waiter};

/// Starts the runtime with this thread as worker 0, with the layers above
/// the core plugged in: a forked child ends with its last thread (`fork`),
/// the first spawn starts the watchdog, CORUN_STATS prints a report at exit.
pub fn start(config: crate::config::Config) -> std::io::Result<&'static runtime::Runtime> {
    let plugins = runtime::Plugins {
        task_ended: fork::task_ended,
        spawned: on_spawn,
        worker_started: proc_view::worker_started,
    };
    let rt = runtime::start(config, plugins)?;
    // Not for a dump signal alone: two clock reads a switch are a cost a
    // server run with `CORUN_DUMP_SIGNAL` (mariadb_sysbench.sh sets it)
    // should not pay for a figure nobody asked for.
    if rt.config.stats {
        wake_latency::enable();
    }
    if rt.config.stats {
        stats::print_at_exit();
    }
    Ok(rt)
}

/// The first spawn starts the watchdog and the preemption monitor.
fn on_spawn(rt: &'static runtime::Runtime) {
    lone::note_spawn();
    proc_view::at_spawn(rt);
    watchdog::ensure_started(rt);
    preempt::ensure_started(rt);
}

/// Whether the running coroutine is the only live one in the process (a
/// program that never made a thread, a forked child before it makes any):
/// then nothing else could run on its worker while it waits, and a call it
/// makes may simply block, as natively. Counts the live tasks of every
/// worker this process has (a forked child keeps one).
#[inline]
pub fn alone() -> bool {
    let Some(rt) = runtime() else { return false };
    let mut live = 0;
    for w in &rt.workers {
        if !w.dead.load(std::sync::atomic::Ordering::Relaxed) {
            live += w.load.get();
            if live > 1 {
                return false;
            }
        }
    }
    live == 1
}

/// Whether an I/O hook should make its call the corun way (a
/// non-blocking attempt, then a park): the caller is a coroutine and not
/// the process's only one. The only coroutine makes the program's own
/// blocking call, exactly as natively: nothing else could use its worker
/// meanwhile, so parking would only add system calls (an event-driven
/// program's single loop, a forked child serving one connection).
/// A coroutine running under a cancel token parks all the same: a
/// blocking call could not be cut short by the token.
#[inline]
pub fn parking() -> bool {
    if lone::nothing_parks() {
        return false;
    }
    in_coroutine() && (!alone() || under_token())
}

/// Whether the caller is the process's only coroutine (`alone`, asked by
/// a coroutine).
#[inline]
pub fn sole_coroutine() -> bool {
    in_coroutine() && (lone::never_spawned() || alone())
}

/// Whether the running coroutine has a cancel token (C API).
fn under_token() -> bool {
    current().is_some_and(|t| {
        let tok = t.ident.token.take();
        let has = tok.is_some();
        t.ident.token.set(tok);
        has
    })
}

/// Why a join failed.
#[derive(Debug, PartialEq, Eq)]
pub enum JoinError {
    /// Already joined or detached.
    Claimed,
    /// A task joining itself.
    Deadlock,
    /// The joining thread is being cancelled (the target stays joinable).
    Cancelled,
}

/// Waits for `t` to finish and returns its result. Works from a coroutine
/// (parks) and from a native thread (sleeps on a futex).
pub fn join(t: &TaskRef) -> Result<usize, JoinError> {
    if current_id() == t.id {
        return Err(JoinError::Deadlock);
    }
    if in_coroutine() {
        return join_parked(t);
    }
    {
        let mut j = t.join.lock();
        if j.claimed {
            return Err(JoinError::Claimed);
        }
        j.claimed = true;
        // Ended already: no park, no second look.
        if j.done {
            return Ok(j.result);
        }
    }
    loop {
        let p = ThreadParker::new();
        {
            let mut j = t.join.lock();
            if !j.done {
                j.joiner = Some(Waiter::Thread(p.clone()));
            }
        }
        if !t.join.lock().done {
            p.park(None);
        }
        let j = t.join.lock();
        if j.done {
            return Ok(j.result);
        }
    }
}

/// `join` from a coroutine: one lock of `t.join` claims the join, finds
/// the task ended or leaves the waiter, and a wake-up reads the result
/// the task left before it was marked DONE (no second lock): a spawn and
/// join in a loop took the lock three times per join.
fn join_parked(t: &TaskRef) -> Result<usize, JoinError> {
    if t.state() == task::DONE {
        if let Some(r) = join_ended(t) {
            return r;
        }
    }
    let mut first = true;
    loop {
        let mut answer = None;
        waitdesc::describe(waitdesc::Cause::Join, t.id);
        park_cancelable(
            |w| {
                let mut j = t.join.lock();
                if first {
                    if j.claimed {
                        answer = Some(Err(JoinError::Claimed));
                        return false;
                    }
                    j.claimed = true;
                }
                if j.done {
                    answer = Some(Ok(j.result));
                    return false;
                }
                j.joiner = Some(w);
                drop(j);
                if first {
                    // A child that has not run yet runs here, next.
                    spawn::take_for_join(t);
                }
                true
            },
            None,
        );
        if let Some(a) = answer {
            return a;
        }
        first = false;
        if t.state() == task::DONE {
            return Ok(t.result.load(std::sync::atomic::Ordering::Relaxed));
        }
        if current().is_some_and(|me| me.ident.cancel_due()) {
            let mut j = t.join.lock();
            if !j.done {
                j.claimed = false;
                j.joiner = None;
                return Err(JoinError::Cancelled);
            }
            return Ok(j.result);
        }
    }
}

/// `join_parked` of a task that has ended: claims the join and takes the
/// result (stored before the task was marked DONE) with one lock, without
/// the park's machinery (park token, cancellation announcement, wait
/// description and its clock read). A spawner that spawns many coroutines
/// and then joins them in turn (100,000 sleepers) finds most of them
/// ended, one after the other on its critical path. None when a
/// cancellation is due or a token-aware park was announced: the park
/// path acts on those.
fn join_ended(t: &TaskRef) -> Option<Result<usize, JoinError>> {
    let me = current()?;
    if me.ident.cancel_due() || me.ident.token_point.get() {
        return None;
    }
    {
        let mut j = t.join.lock();
        if j.claimed {
            return Some(Err(JoinError::Claimed));
        }
        j.claimed = true;
    }
    if let Some(w) = worker::current_worker() {
        stats::not_parked(w.index);
    }
    Some(Ok(t.result.load(std::sync::atomic::Ordering::Relaxed)))
}

/// Gives up the right to join `t` (its memory goes when it ends).
pub fn detach(t: &TaskRef) -> Result<(), JoinError> {
    let mut j = t.join.lock();
    if j.claimed {
        return Err(JoinError::Claimed);
    }
    j.claimed = true;
    Ok(())
}
