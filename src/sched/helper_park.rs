//! corun's sampling helpers park while every worker sleeps in the kernel.
//!
//! The preemption monitor (`preempt_monitor.rs`) and the watchdog
//! (`watchdog.rs`) look at the workers' running coroutines on a period:
//! the monitor every half slice when nothing computes (200 times a
//! second), the watchdog every quarter of the stall time. A process whose
//! workers all nap (blocked in their poll or in a solo wait, no coroutine
//! running) has nothing for either to see until a worker wakes, yet they
//! kept waking: an idle Redis under corun made 245 context switches a
//! second (the monitor 200, the watchdog 40) where natively it makes 10
//! (its own `hz`), and took 5x the CPU.
//!
//! So a helper that finds every worker napping, and none switched since
//! its previous look (idle for a whole period, not between two requests
//! of a loaded server: parking there woke the monitor 20-30% more often
//! under wrk), waits on a futex word instead of its period, and the first
//! worker to wake wakes it. The two sides follow Dekker's pattern on
//! SeqCst words:
//!
//! ```text
//!   helper:  PARKED |= bit;  every worker napping?  yes: FUTEX_WAIT(PARKED)
//!   worker:  napping = false;  PARKED != 0?  yes: PARKED = 0, FUTEX_WAKE
//! ```
//!
//! Either the helper's look sees the worker awake (it does not wait), or
//! the worker's look sees the helper's bit (it wakes it); a worker that
//! clears the word before the helper's FUTEX_WAIT makes that wait return
//! at once (the word is no longer the value it expects). A worker thread
//! that starts runs before it ever napped: its start wakes the helpers
//! too. A park also ends after `MAX_PARK_NS`, which bounds what a wake
//! missed by a path this file does not know of could cost (sampling late,
//! never a hang).

use std::sync::atomic::{AtomicU32, Ordering};

use super::runtime::Runtime;
use super::worker::Worker;

/// The helpers' bits in `PARKED`.
pub const MONITOR: u32 = 1;
pub const WATCHDOG: u32 = 2;

/// The bits of the helpers that wait (or are about to wait) on it.
#[link_section = "corun_fork"] // reset after a fork: sys::ForkReset
static PARKED: AtomicU32 = AtomicU32::new(0);

/// The longest park.
const MAX_PARK_NS: u64 = 1_000_000_000;

/// A helper's record of the workers' switch counts at its previous look.
pub struct Settle {
    switches: Vec<u64>,
}

impl Settle {
    pub fn new(rt: &Runtime) -> Self {
        Settle {
            switches: vec![u64::MAX; rt.workers.len()],
        }
    }

    /// Whether every worker naps now and none switched since the last
    /// call: the process was idle for the whole period in between.
    pub fn idle_for_a_period(&mut self, rt: &Runtime) -> bool {
        let mut same = true;
        for (w, last) in rt.workers.iter().zip(self.switches.iter_mut()) {
            let now = w.switches.load(Ordering::Relaxed);
            same &= *last == now;
            *last = now;
        }
        same && all_napping(rt)
    }

    /// Parks helper `bit` (`park`), then takes the switch counts as they
    /// are once it runs again: the wake-up's own switch (a worker back
    /// from its sleep to run something) is not counted as activity at the
    /// next look. Counted, each wake-up of an idle Redis (its `hz`) cost
    /// each helper three wakes (the park's end, a look that saw the
    /// switch, a look that parked), two now.
    pub fn park(&mut self, bit: u32, rt: &Runtime) {
        park(bit, rt);
        for (w, last) in rt.workers.iter().zip(self.switches.iter_mut()) {
            *last = w.switches.load(Ordering::Relaxed);
        }
    }
}

/// Whether every worker of `rt` sleeps in the kernel with no coroutine
/// running (or was never started, or was retired).
fn all_napping(rt: &Runtime) -> bool {
    rt.workers.iter().all(|w| {
        !w.started.load(Ordering::Acquire)
            || w.dead.load(Ordering::Relaxed)
            || (w.napping.load(Ordering::SeqCst) && w.running_id.load(Ordering::Relaxed) == 0)
    })
}

/// Called by helper `bit`: waits until a worker wakes (at most
/// `MAX_PARK_NS`) if every worker of `rt` naps; returns at once
/// otherwise.
fn park(bit: u32, rt: &Runtime) {
    let v = PARKED.fetch_or(bit, Ordering::SeqCst) | bit;
    if all_napping(rt) {
        crate::sys::futex::wait(&PARKED, v, Some(MAX_PARK_NS));
    }
    PARKED.fetch_and(!bit, Ordering::SeqCst);
}

impl Worker {
    /// The worker's thread is about to block in the kernel: its poll
    /// (`netpoller.rs`) or a solo wait (`solo.rs`).
    pub(super) fn nap_starts(&self) {
        self.napping.store(true, Ordering::SeqCst);
    }

    /// The worker's thread runs again: the worker's side of the protocol
    /// above (`napping` cleared, then `PARKED` looked at).
    #[inline]
    pub(super) fn nap_ended(&self) {
        self.napping.store(false, Ordering::SeqCst);
        if PARKED.load(Ordering::SeqCst) != 0 {
            wake_all();
        }
    }
}

/// Wakes every parked helper (a worker woke or starts; the process is
/// confined and its helpers must leave).
#[cold]
pub fn wake_all() {
    if PARKED.swap(0, Ordering::SeqCst) != 0 {
        crate::sys::futex::wake(&PARKED, i32::MAX);
    }
}

/// In a forked child no helper exists (nor waits).
pub fn after_fork_child() {
    use crate::sys::ForkReset;
    PARKED.reset_to(0);
}
