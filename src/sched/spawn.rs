//! Placement: where a new task goes, and how a runnable task reaches its
//! worker from any thread.
//!
//! A spawn goes to the least loaded worker (load = live tasks homed
//! there); ties stay local. Another worker held by one task for longer
//! than `BUSY_NS` counts as full; the spawner's own counts by its load,
//! and from the second spawn of one such hold of the spawner's the task
//! stays local and an idle worker is woken to steal it. A join of a
//! task that has not run takes it to the joiner's worker
//! (`take_for_join`), and a worker whose coroutines keep doing that keeps
//! its next spawns local (fork-join affinity). A woken task goes back to
//! its home worker: pushed on its local queue when the waker is that
//! worker, else on its inbox, with `notify` (docs/ARCHITECTURE.md §4).
//!
//! Measured with 2 workers (`co_bench_micro spawn`, medians): spawn+join
//! crossed workers twice, 1.8-2.3 us; with the join taking the child back,
//! 1.0 us; with fork-join affinity 0.37 us, as on 1 worker (0.35 us).

use std::sync::atomic::Ordering;

use crate::ctx::{tls, GuardedStack};

use super::runtime::{ensure_started, runtime, Runtime};
use super::stack_pool::shared_stack;
use super::task::{Entry, Task, TaskRef, NO_HOME};
use super::worker::{current_worker, Worker};

/// A worker running one task for longer than this is not given new tasks.
const BUSY_NS: u64 = 2_000_000;
/// Fork-join affinity at or above which a spawn stays local.
const FORK_JOIN_LOCAL: u32 = 4;
/// Its ceiling, and what a join of a task that has not run adds.
const FORK_JOIN_MAX: u32 = 16;
const FORK_JOIN_STEP: u32 = 2;

/// Puts a runnable task back on its home worker's queue (any thread).
pub fn schedule(t: TaskRef) {
    let home = t.home();
    if let Some(w) = current_worker() {
        if w.index == home {
            super::wake_latency::woken(&t, false);
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
    let w = rt.workers.at(home);
    super::wake_latency::woken(&t, true);
    w.push_remote(t);
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
        Some(rt) if home < rt.workers.len() => rt.workers.at(home).notify(),
        _ => notify_all(),
    }
}

/// Makes sure another worker comes to steal from busy worker `me`: none
/// to do if one is awake (an idle one looks at the others' queues while it
/// spins, `run_loop.rs`); else a sleeping one is woken, or one is started.
fn wake_thief(rt: &Runtime, me: &Worker) {
    let mut unstarted = None;
    for w in rt.workers.iter().filter(|w| w.index != me.index) {
        if w.dead.load(Ordering::Relaxed) {
            continue;
        }
        if !w.started.load(Ordering::Acquire) {
            unstarted = unstarted.or(Some(w));
        } else if !w.sleeping.load(Ordering::SeqCst) {
            return;
        }
    }
    for w in rt.workers.iter().filter(|w| w.index != me.index) {
        if w.sleeping.load(Ordering::SeqCst) {
            w.notify();
            return;
        }
    }
    if let Some(w) = unstarted {
        // No thread for it: the task stays here until this worker is free.
        let _ = ensure_started(w);
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
    spawn_at(entry, stack_size, start_addr, false, None)
}

/// Spawns a thread (`pthread_create`): like `spawn`, and the task gets TLS
/// and a glibc descriptor of its own when it first runs (`ctx::tls`).
/// `program_stack` (lowest address, bytes): the stack the program gave
/// (`pthread_attr_setstack`), which the coroutine runs on instead of one
/// of corun's; `stack_size` is then ignored.
pub fn spawn_thread(
    entry: Entry,
    stack_size: usize,
    start_addr: usize,
    program_stack: Option<(usize, usize)>,
) -> Result<TaskRef, i32> {
    spawn_at(entry, stack_size, start_addr, true, program_stack)
}

/// Gives a new task its stack now, so that a spawn fails (with the errno a
/// `pthread_create` would report) when none can be had: from the spawning
/// worker's pool, or the shared one.
fn reserve_stack(t: &Task, me: Option<&Worker>) -> Result<(), i32> {
    if let Some((lo, top)) = t.program_stack {
        let s = GuardedStack::program(lo, top - lo).ok_or(libc::EINVAL)?;
        // SAFETY: the task is not shared yet.
        unsafe { *t.stack.get() = Some(s) };
        return Ok(());
    }
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
    program_stack: Option<(usize, usize)>,
) -> Result<TaskRef, i32> {
    let rt: &'static Runtime = runtime().ok_or(libc::EAGAIN)?;
    rt.workers.renew_dead_if_pending();
    let (stack_size, program_stack) = match program_stack {
        Some((lo, size)) => (size, Some((lo, lo.saturating_add(size)))),
        None => (stack_size, None),
    };
    let t = Task::with_start_addr(entry, stack_size, start_addr, program_stack);
    t.ident.own_tls.set(thread && tls::available());
    let me = current_worker();
    reserve_stack(&t, me)?;
    super::signals::task_created(&t, super::signals::inherited_mask());
    // Least loaded worker; ties go to the spawner's own. A worker held by
    // one task for longer than BUSY_NS (computing, or blocked where corun
    // cannot see) counts as full: a new task placed there would wait.
    // The clock is read only when a worker's hold is looked at (a
    // fork-join loop looks at none: ~20 ns of each spawn+join).
    let clock = std::cell::Cell::new(0u64);
    let now = || {
        if clock.get() == 0 {
            clock.set(crate::sys::now_ns());
        }
        clock.get()
    };
    let effective = |w: &Worker| {
        let busy = rt.workers.len() > 1
            && w.running_id.load(Ordering::Relaxed) != 0
            && now().saturating_sub(w.running_since.load(Ordering::Relaxed)) > BUSY_NS;
        w.load.get() + if busy { 1 << 20 } else { 0 }
    };
    let mut target = me;
    // Fork-join: the coroutines here have been joining their children
    // before those ran (a spawn then a join, in a loop). Each join took the
    // child back from where placement sent it (`take_for_join`); keeping
    // the next child local saves the crossing. Every spawn lowers the
    // affinity and every such join raises it by two, so a program that
    // spawns many before joining (or never joins) stays spread.
    let fork_join = me.is_some_and(|m| {
        let a = m.local.fork_join.get();
        m.local.fork_join.set(a.saturating_sub(1));
        a >= FORK_JOIN_LOCAL
    });
    // The spawner itself has held its worker for a while (a main that
    // spawns 100,000 coroutines in a row): the task waits in the local
    // queue, where an idle worker steals it with others, half a backlog
    // at a time (`run_loop.rs`). Sending every such task to the other
    // workers made them run all of them while this one, once free, idled.
    // Only from the second spawn of one such hold on: a lone spawn (a main
    // that forked, made one thread and then parked) goes to another worker
    // as usual. Kept local, it ran here as soon as the spawner parked,
    // before the thief woke, and stayed pinned behind whatever the spawner
    // did next (readiness_busy_worker read its pipe at 2,000 ms, not 350).
    // (Not in a fork-join loop: its child stays here anyway, and its
    // spawns read no clock.)
    let spawner_busy = !fork_join
        && rt.workers.len() > 1
        && me.is_some_and(|m| {
            if effective(m) < 1 << 20 {
                return false;
            }
            let sw = m.switches.load(Ordering::Relaxed);
            let burst = m.local.busy_spawn_at.get() == sw;
            m.local.busy_spawn_at.set(sw);
            burst
        });
    // The spawner's own worker is compared by its load alone: the task
    // holding it is the spawner, running now, and whether it goes on
    // computing or waits next is not known (a burst of spawns from it is
    // the rule above's). Counted full, it sent the second of two threads
    // spawned in one run of the spawner, when that run passed BUSY_NS
    // between the two, to the other worker, next to the first: rayon's
    // two threads then shared one worker for good while main waited alone
    // on the other (`placement_spread`).
    let mut best = me.map_or(usize::MAX, |m| m.load.get());
    for w in rt
        .workers
        .iter()
        .filter(|w| !spawner_busy && !fork_join && !w.dead.load(Ordering::Relaxed))
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
            target = me.or(Some(rt.workers.at(0)));
        }
    }
    (rt.plugins.spawned)(rt);
    super::stats::live_added();
    match target {
        Some(w) => {
            t.set_home(w.index);
            if me.is_some_and(|m| m.index == w.index) {
                w.load.add_own(1);
                w.push_fresh(t.clone());
                if spawner_busy {
                    wake_thief(rt, w);
                }
            } else {
                w.load.add(1);
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

/// A coroutine is about to wait for `t` to end (a join): if `t` has
/// never run and waits in another worker's queue, and this worker has
/// nothing else to run, this worker takes it and runs it next. A spawn followed by a join (a fork-join, the spawn+join
/// benchmark) then stays on one worker instead of crossing to another and
/// back (two hand-offs, 1.8 us with 2 workers against 0.35 us on one);
/// the entry left in the other queue is stale (`Task::take`). Moving a
/// task that has no frames yet is safe (docs/ARCHITECTURE.md §5.2).
pub fn take_for_join(t: &TaskRef) {
    let (Some(me), Some(rt)) = (current_worker(), runtime()) else {
        return;
    };
    // Only when this worker would have nothing else to do: a program that
    // spawns several tasks and joins them in turn keeps them spread.
    if t.state() != super::task::NEW {
        return;
    }
    let a = &me.local.fork_join;
    a.set((a.get() + FORK_JOIN_STEP).min(FORK_JOIN_MAX));
    let home = t.home();
    if home == me.index || me.has_other_work() || !t.take(home) {
        return;
    }
    if let Some(w) = rt.workers.get(home) {
        w.load.sub(1);
    }
    me.load.add_own(1);
    t.set_home(me.index);
    me.push_local(t.clone());
}

/// Spawns `main`'s task pinned to this worker (it must end on the thread
/// that drives worker 0, which returns its status to glibc).
pub fn spawn_main(entry: Entry, stack_size: usize) -> Result<TaskRef, i32> {
    let w = current_worker().ok_or(libc::EAGAIN)?;
    let t = Task::new(entry, stack_size);
    reserve_stack(&t, Some(w))?;
    super::signals::main_created(&t);
    super::stats::live_added();
    w.load.add_own(1);
    t.set_home(w.index);
    w.push_local(t.clone());
    Ok(t)
}
