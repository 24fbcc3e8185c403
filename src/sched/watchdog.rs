//! The watchdog: notices a worker that does not come back to its scheduler.
//!
//! A worker is stalled when two samples see the same task running with the
//! same switch count and the same activity count (`stats::activity`: its
//! spawns and yields): it has not been back to its scheduler in between,
//! and it is not a coroutine that yields with nothing else to run, nor one
//! that is busy creating threads (`main` making 100k of them).
//!
//! Cooperative scheduling has one failure mode threads do not: a coroutine
//! that computes for a long time, or blocks in something corun cannot see
//! (an unhooked syscall, stdio on a socket, a disk read made inline), holds
//! its whole worker, and every other coroutine there waits. The worker
//! publishes which task it runs and since when (`running_id`,
//! `running_since`, written around each resume); this thread samples them
//! every quarter of `CORUN_STALL_MS` (100 ms by default).
//!
//! What it says depends on whether the user asked. By default it prints
//! nothing: a program's stderr under corun must be its stderr natively (a
//! line there is a difference a test suite or a log reader sees, and
//! Erlang's schedulers or a Debian server made it now and then). It then
//! only counts the second kind of stall (the worker's thread sleeps in the
//! kernel, `blocked_in_kernel`: corun's to fix) for `CORUN_STATS`. When
//! `CORUN_STALL_MS` is set, it prints, once per stall, both kinds (a
//! coroutine that computes too):
//!
//! ```text
//! corun: worker 1 stalled for 512 ms in coroutine 7 (started at spin_forever); other coroutines there wait
//! ```
//!
//! A coroutine that computes is measured in its worker's CPU time, not
//! on the wall clock: on a loaded machine the kernel may leave the
//! worker's thread without a CPU for a few hundred ms, which holds the
//! coroutines there no more than it would hold the same threads natively
//! (the watchdog test failed so at load 15 on 2 CPUs, reporting a
//! coroutine that yielded in a loop, and `main` creating threads).
//!
//! The start is named as a user knows it (`startname.rs`): the C start
//! routine, the callable of a C++ `std::thread`, the closure of a Rust
//! one, not the runtime's trampoline.
//!
//! It also hands the stalled worker's never-run tasks to the least loaded
//! other worker (moving a task that has no frames is safe, docs/ARCHITECTURE.md §5.2),
//! so new connections are not stuck behind it. Tasks that have run stay:
//! they are pinned to their thread for life.
//!
//! A worker asleep in a runtime that schedules itself (libgomp's barrier:
//! the hooks leave its inline futex alone, `hooks/pthread/foreign.rs`) is
//! waiting as designed, not in a wait corun missed: not reported. The
//! hooks say which code that is (`set_foreign_code`); the watchdog reads
//! where the thread sleeps from /proc/self/task/TID/syscall.
//!
//! The thread starts with the first spawned coroutine (a program that never
//! spawns pays nothing) and never touches worker-local state. While the
//! process has one live coroutine, it blocks in the program's own calls
//! (`sched::parking`) with nobody waiting behind it: no report then.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::runtime::Runtime;
use super::worker::Worker;
use crate::sys::{now_ns, raw_stderr};

#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
static STARTED: AtomicBool = AtomicBool::new(false);

/// `fn(pc) -> bool`: whether code at pc belongs to a runtime that
/// schedules itself (0: none known).
static FOREIGN_CODE: AtomicUsize = AtomicUsize::new(0);

/// Tells the watchdog how to recognise the code of runtimes that
/// schedule themselves (a sleep there is theirs, not a missed wait).
pub fn set_foreign_code(f: fn(usize) -> bool) {
    FOREIGN_CODE.store(f as usize, Ordering::Release);
}

/// Whether `pc` is in the code of a runtime that schedules itself.
fn in_foreign_code(pc: usize) -> bool {
    let f = FOREIGN_CODE.load(Ordering::Acquire);
    if f == 0 {
        return false;
    }
    // SAFETY: only `set_foreign_code` stores here, a `fn(usize) -> bool`.
    let f: fn(usize) -> bool = unsafe { std::mem::transmute::<usize, fn(usize) -> bool>(f) };
    f(pc)
}

/// Starts the watchdog thread once, unless CORUN_STALL_MS=0.
pub fn ensure_started(rt: &'static Runtime) {
    if rt.config.stall_ms == 0 || STARTED.load(Ordering::Relaxed) {
        return;
    }
    if STARTED.swap(true, Ordering::AcqRel) {
        return;
    }
    let started = super::confined::spawn_helper(Box::new(move || {
        crate::sys::block_all_signals();
        run(rt);
    }));
    if started.is_err() {
        STARTED.store(false, Ordering::Release);
    }
}

/// The word the watchdog sleeps on between samples.
static WAKE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Cuts the watchdog's sleep short (it then looks whether the process is
/// confined: `confined.rs`).
pub fn wake() {
    WAKE.store(1, Ordering::SeqCst);
    crate::sys::futex::wake(&WAKE, i32::MAX);
}

/// In a forked child the watchdog thread does not exist: let the next spawn
/// start one.
pub fn reset_after_fork() {
    crate::sys::ForkReset::reset_to(&STARTED, false);
}

fn run(rt: &'static Runtime) {
    let stall_ns = rt.config.stall_ms * 1_000_000;
    let period = (stall_ns / 4).clamp(5_000_000, 250_000_000);
    // Per worker: the (task, switch count) last seen and since when, which
    // decides the hand-off of never-run tasks (the worker has not been back
    // to its scheduler); and the same with the activity count added, which
    // decides the report (a coroutine calling into corun is not stalled).
    let mut seen: Vec<(u64, u64, u64)> = vec![(0, 0, 0); rt.workers.len()];
    let mut active: Vec<(u64, u64, u64)> = vec![(0, 0, 0); rt.workers.len()];
    // Per worker: its thread's CPU time when `active` was last reset.
    let mut active_cpu: Vec<u64> = vec![0; rt.workers.len()];
    let mut reported: Vec<(u64, u64)> = vec![(0, 0); rt.workers.len()];
    let mut settle = super::helper_park::Settle::new(rt);
    loop {
        if super::confined::is() {
            // No thread of corun's outlives a confined program's own
            // (`confined.rs`); no coroutine stalls there any more.
            return;
        }
        // No worker ran anything for a whole period: no look until one
        // wakes (`helper_park.rs`).
        if settle.idle_for_a_period(rt) {
            settle.park(super::helper_park::WATCHDOG, rt);
        }
        // A sleep `wake` can cut short: FUTEX_WAIT on a word that is 0
        // until then (set before the wake, so a wake cannot be missed).
        crate::sys::futex::wait(&WAKE, 0, Some(period));
        let now = now_ns();
        super::startname::learn_pending();
        for (i, w) in rt.workers.iter().enumerate() {
            let id = w.running_id.load(Ordering::Relaxed);
            if id != 0 {
                super::startname::learn(w.running_start_addr.load(Ordering::Relaxed));
            }
            let sw = w.switches.load(Ordering::Relaxed);
            let act = sw.wrapping_add(super::stats::activity(w.index));
            // Moving (or idle): a stall, if any, starts now at the latest.
            let since = || {
                w.running_since
                    .load(Ordering::Relaxed)
                    .max(now - period)
                    .min(now)
            };
            if id == 0 || (seen[i].0, seen[i].1) != (id, sw) {
                seen[i] = (id, sw, since());
            }
            if id == 0 || (active[i].0, active[i].1) != (id, act) {
                active[i] = (id, act, since());
                // Only a report of a computing coroutine reads it: no
                // system call per worker and period otherwise.
                if rt.config.stall_report {
                    active_cpu[i] = super::cpuclock::worker_thread_ns(w).unwrap_or(0);
                }
            }
            if id == 0 || now.saturating_sub(seen[i].2) < stall_ns {
                continue;
            }
            // The process's only coroutine may block its worker: it makes
            // its calls as natively (`sched::parking`) and nothing waits.
            if super::alone() {
                continue;
            }
            let held = now.saturating_sub(active[i].2);
            if held >= stall_ns
                && reported[i] != (id, act)
                && (blocked_in_kernel(w)
                    || (rt.config.stall_report
                        && computed_for(w, active_cpu[i]) + period >= stall_ns))
            {
                reported[i] = (id, act);
                super::stats::stalled();
                if rt.config.stall_report {
                    report(w, id, held);
                }
            }
            // A task that keeps calling into corun (spawning, yielding) is
            // not stuck: idle workers steal its worker's never-run tasks
            // (`run_loop.rs`: to the level of the two loads). Handing all of
            // them to the least loaded worker, every period, homed most
            // threads of a burst there for good: a main accepting 10,000
            // connections from wrk held its worker past the stall time,
            // and the other worker ended with 7,800 of them (1,300-4,900
            // ready while this one idled: p99 332 ms against native's
            // ~180-260).
            if held >= stall_ns {
                hand_off(rt, w);
            }
        }
    }
}

/// Whether the worker's thread sleeps in the kernel (state S or D in
/// /proc/self/task/TID/stat) rather than runs or waits for a CPU (R): a
/// wait corun did not see (an unhooked call, an inline disk read), the
/// stall corun is to blame for. A coroutine that computes holds its worker
/// as its thread would hold a CPU natively: counted and reported only when
/// the user set CORUN_STALL_MS (compilers, JIT threads and compressors all
/// compute for 100 ms at a time).
fn blocked_in_kernel(w: &Worker) -> bool {
    if w.own_wait.load(Ordering::Relaxed) != 0
        || super::proc_view::thread_state(w) != super::proc_view::ThreadState::Sleeps
    {
        return false;
    }
    // The system call it sleeps in, read after the state: a thread that
    // woke in between reads "running" and is not blocked (omp_team saw a
    // report when its pthread's 300 ms wait in libgomp's futex ended
    // between the two reads); one asleep in libgomp's own futex is
    // libgomp's business.
    super::proc_view::syscall_pc(w).is_some_and(|pc| !in_foreign_code(pc))
}

/// CPU time the worker's thread used since it read `since_cpu`: the
/// sample was taken up to one period after the hold began, so a worker
/// that computed the whole time shows at least the hold minus a period.
fn computed_for(w: &Worker, since_cpu: u64) -> u64 {
    super::cpuclock::worker_thread_ns(w).map_or(u64::MAX / 2, |c| c.saturating_sub(since_cpu))
}

fn report(w: &Worker, id: u64, held_ns: u64) {
    let addr = w.running_start_addr.load(Ordering::Relaxed);
    let arg = super::sigdispatch::find_id(id).map_or(0, |t| t.start_arg.load(Ordering::Relaxed));
    let func = super::startname::start_name(addr, arg);
    raw_stderr(
        format!(
            "corun: worker {} stalled for {} ms in coroutine {} (started at {}); other coroutines there wait\n",
            w.index,
            held_ns / 1_000_000,
            id,
            func
        )
        .as_bytes(),
    );
}

/// Moves the never-run tasks of a stalled worker to the others.
fn hand_off(rt: &'static Runtime, stalled: &'static Worker) {
    let others: Vec<&'static Worker> = rt
        .workers
        .iter()
        .filter(|w| w.index != stalled.index)
        .collect();
    if others.is_empty() {
        return;
    }
    loop {
        let target = others
            .iter()
            .min_by_key(|w| w.load.get())
            .expect("not empty");
        if !target.started.load(Ordering::Acquire)
            && super::runtime::ensure_started(target).is_err()
        {
            return;
        }
        if stalled.move_never_run(target, 1) == 0 {
            return;
        }
    }
}
