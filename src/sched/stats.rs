//! Scheduler statistics: what `CORUN_STATS=1` prints at exit and `corun
//! dump` shows (docs/ARCHITECTURE.md §11).
//!
//! Counted per worker, by the worker's own thread only: each counter is a
//! plain load and store (an `AtomicU64` with Relaxed ordering compiles to
//! an ordinary `mov`; no locked read-modify-write on the hot path), in a
//! cache line of its own so workers never share one. Readers (the exit
//! report, the dump, the watchdog) sum the workers' counters; a read while
//! a worker counts may miss its latest increments, nothing else.
//!
//! - spawned: coroutines made by code on this worker (spawns from native
//!   threads are counted apart, with an atomic add: they are rare);
//! - peak: the most coroutines alive at once, as seen at each spawn (a
//!   count of its own, `LIVE`, kept only while someone may print it);
//! - yields: `sched_yield`/`corun_yield` calls (also the watchdog's sign of
//!   life of a coroutine that yields with nothing else to run);
//! - parks by cause (`waitdesc::Cause`), and waits that needed no park
//!   (the condition held: a join of a finished thread...), which are signs
//!   of life for the watchdog too.
//!
//! Context switches are the workers' resume counts (`Worker::switches`);
//! blocking-pool hand-offs are the pool's job count (`blocking::jobs`);
//! stalls are what the watchdog saw (`stalled`); preemptions and the
//! requests sent for them are `preempt.rs`'s.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

use super::runtime::runtime;
use super::waitdesc::{Cause, CAUSES};
use super::worker::current_worker;
use crate::config::MAX_WORKERS;

#[repr(align(128))]
struct WorkerStats {
    spawned: AtomicU64,
    peak: AtomicU64,
    yields: AtomicU64,
    unparked: AtomicU64,
    parks: [AtomicU64; CAUSES],
}

static PER_WORKER: [WorkerStats; MAX_WORKERS] = [const {
    WorkerStats {
        spawned: AtomicU64::new(0),
        peak: AtomicU64::new(0),
        yields: AtomicU64::new(0),
        unparked: AtomicU64::new(0),
        parks: [const { AtomicU64::new(0) }; CAUSES],
    }
}; MAX_WORKERS];

/// Spawns made from native threads.
static NATIVE_SPAWNED: AtomicU64 = AtomicU64::new(0);
static NATIVE_PEAK: AtomicU64 = AtomicU64::new(0);
/// Stalls the watchdog reported.
static STALLS: AtomicU64 = AtomicU64::new(0);
/// Preempted threads given to an idle worker (`shed.rs`).
static SHED: AtomicU64 = AtomicU64::new(0);
/// Ready threads handed to a worker with fewer (`balance.rs`).
static BALANCED: AtomicU64 = AtomicU64::new(0);
/// Coroutines made and not ended (`main` included), counted only while the
/// peak may be printed (`counts_live`): one shared atomic per spawn and end
/// costs a cache-line transfer between workers, which the default pays
/// nothing for. The workers' `load` counts cannot serve: they are
/// placement's, and run ahead of the truth while never-run tasks move in a
/// batch (`Worker::move_never_run` counts the whole batch on the thief
/// first), so their sum read at a spawn said 102 for 101 coroutines (the
/// stats test, 1 run in 15 on 2 workers).
static LIVE: AtomicI64 = AtomicI64::new(0);

/// Whether the peak is wanted: CORUN_STATS, or a dump signal.
#[inline]
pub(super) fn counts_live() -> bool {
    runtime().is_some_and(|rt| rt.config.stats || rt.config.dump_signal != 0)
}

/// A coroutine was made (before it is queued, so it cannot end first).
#[inline]
pub fn live_added() {
    if counts_live() {
        LIVE.fetch_add(1, Relaxed);
    }
}

/// A coroutine ended.
#[inline]
pub fn live_ended() {
    if counts_live() {
        LIVE.fetch_sub(1, Relaxed);
    }
}

/// In a forked child: the forking coroutine is the only one.
pub fn live_after_fork() {
    if counts_live() {
        LIVE.store(1, Relaxed);
    }
}

/// +1 by the counter's only writer: a load and a store.
#[inline]
fn bump(c: &AtomicU64) {
    c.store(c.load(Relaxed).wrapping_add(1), Relaxed);
}

/// A coroutine was spawned (called by the spawner, after placing it).
#[inline]
pub fn spawned() {
    let Some(rt) = runtime() else { return };
    // The peak is only ever printed at exit (CORUN_STATS) or in a dump;
    // otherwise LIVE is not kept (0 here).
    let live = if rt.config.stats || rt.config.dump_signal != 0 {
        LIVE.load(Relaxed).max(0) as usize
    } else {
        0
    };
    match current_worker() {
        Some(w) => {
            let s = &PER_WORKER[w.index];
            bump(&s.spawned);
            if live as u64 > s.peak.load(Relaxed) {
                s.peak.store(live as u64, Relaxed);
            }
        }
        None => {
            NATIVE_SPAWNED.fetch_add(1, Relaxed);
            NATIVE_PEAK.fetch_max(live as u64, Relaxed);
        }
    }
}

/// A coroutine of worker `index` parks for `cause`.
#[inline]
pub fn parked(index: usize, cause: Cause) {
    bump(&PER_WORKER[index].parks[cause as usize]);
}

/// A wait of a coroutine of worker `index` needed no park.
#[inline]
pub fn not_parked(index: usize) {
    bump(&PER_WORKER[index].unparked);
}

/// A coroutine of the calling worker yielded.
#[inline]
pub fn yielded() {
    if let Some(w) = current_worker() {
        yielded_on(w.index);
    }
}

/// A coroutine of worker `index` (the caller's) yielded.
#[inline]
pub fn yielded_on(index: usize) {
    bump(&PER_WORKER[index].yields);
}

/// A preempted thread moved to an idle worker (`shed.rs`).
pub fn shed() {
    SHED.fetch_add(1, Relaxed);
}

/// `n` ready threads handed to a worker with fewer (`balance.rs`).
pub fn balanced(n: u64) {
    BALANCED.fetch_add(n, Relaxed);
}

/// The watchdog saw a stall (printed on stderr only with CORUN_STALL_MS).
pub fn stalled() {
    STALLS.fetch_add(1, Relaxed);
}

/// Signs of life of worker `index` that are not switches: spawns, yields
/// and waits that needed no park by the coroutine it runs (the watchdog
/// does not call a coroutine stalled while they move: it is calling into
/// corun, not computing or blocked where corun cannot see).
pub fn activity(index: usize) -> u64 {
    let s = &PER_WORKER[index];
    s.spawned
        .load(Relaxed)
        .wrapping_add(s.yields.load(Relaxed))
        .wrapping_add(s.unparked.load(Relaxed))
}

/// The sums over every worker.
pub struct Totals {
    pub spawned: u64,
    pub peak: u64,
    pub switches: u64,
    pub yields: u64,
    pub unparked: u64,
    pub parks: [u64; CAUSES],
    pub pool_jobs: u64,
    pub pool_threads: usize,
    pub stalls: u64,
}

pub fn totals() -> Totals {
    let mut t = Totals {
        spawned: NATIVE_SPAWNED.load(Relaxed),
        peak: NATIVE_PEAK.load(Relaxed),
        switches: 0,
        yields: 0,
        unparked: 0,
        parks: [0; CAUSES],
        pool_jobs: super::blocking::jobs(),
        pool_threads: super::blocking::threads(),
        stalls: STALLS.load(Relaxed),
    };
    let Some(rt) = runtime() else { return t };
    for w in &rt.workers {
        let s = &PER_WORKER[w.index];
        t.spawned += s.spawned.load(Relaxed);
        t.peak = t.peak.max(s.peak.load(Relaxed));
        t.yields += s.yields.load(Relaxed);
        t.unparked += s.unparked.load(Relaxed);
        t.switches += w.switches.load(Relaxed);
        for (sum, c) in t.parks.iter_mut().zip(&s.parks) {
            *sum += c.load(Relaxed);
        }
    }
    t
}

/// The report, one `key: value` per line after a title, every line
/// indented by two spaces: what CORUN_STATS prints and the dump ends with.
pub fn report() -> String {
    let t = totals();
    let mut out = String::new();
    let mut line = |k: &str, v: String| out.push_str(&format!("  {k}: {v}\n"));
    line("coroutines spawned", t.spawned.to_string());
    line("coroutines alive at most", t.peak.to_string());
    line(
        "coroutine records held",
        super::task::records_held().to_string(),
    );
    line("context switches", t.switches.to_string());
    line("yields", t.yields.to_string());
    let parks: u64 = t.parks.iter().sum();
    line("parks", parks.to_string());
    line("waits that needed no park", t.unparked.to_string());
    for c in Cause::all().iter().skip(1) {
        let n = t.parks[*c as usize];
        if n != 0 {
            line(&format!("parks on {}", c.name()), n.to_string());
        }
    }
    line("blocking-pool hand-offs", t.pool_jobs.to_string());
    line("blocking-pool threads", t.pool_threads.to_string());
    let cut = super::pool_kick::cut();
    if cut != 0 {
        line("blocking-pool calls a signal cut short", cut.to_string());
    }
    line(
        "path calls answered from the kernel's caches",
        super::blocking::inline_answers().to_string(),
    );
    line("stalls", t.stalls.to_string());
    let shed = SHED.load(Relaxed);
    if shed != 0 {
        line(
            "preempted threads moved to an idle worker",
            shed.to_string(),
        );
    }
    let balanced = BALANCED.load(Relaxed);
    if balanced != 0 {
        line(
            "ready threads moved to a less busy worker",
            balanced.to_string(),
        );
    }
    let (sent, handled, preempted) = super::preempt::counts();
    line(
        "preemptions",
        format!(
            "{preempted} (of {sent} requests, {handled} handled: a request sent while one is \
             pending is merged with it; the others found no safe point)"
        ),
    );
    let refused = super::preempt_refusals::summary();
    if !refused.is_empty() {
        line("preemption requests refused", refused);
    }
    if let Some(rt) = runtime() {
        for (k, v) in super::wake_latency::report_lines(rt.workers.len()) {
            line(&k, v);
        }
        for w in &rt.workers {
            line(
                &format!("worker {}", w.index),
                format!(
                    "{}, {} switches, {} live coroutines",
                    if w.started.load(Relaxed) {
                        "started"
                    } else {
                        "never started"
                    },
                    w.switches.load(Relaxed),
                    w.load.get()
                ),
            );
        }
    }
    out
}

/// With CORUN_STATS=1: prints the report to stderr at exit.
pub fn print_at_exit() {
    extern "C" fn print() {
        let mut s = String::from("corun stats:\n");
        s.push_str(&report());
        crate::sys::raw_stderr(s.as_bytes());
    }
    // SAFETY: registering a plain extern "C" function with no arguments.
    unsafe { libc::atexit(print) };
}
