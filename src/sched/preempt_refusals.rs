//! Why preemption requests were refused: one counter per reason, bumped by
//! the handler (`preempt.rs`, `preempt_safe.rs`) and printed by
//! `CORUN_STATS` beside the requests and the preemptions made. A request
//! neither counted here nor made was never handled: a standard signal
//! already pending is not queued twice, and a request the worker took
//! while outside any coroutine of the run is counted as `RunOver`.
//!
//! The counters are plain relaxed atomics (async-signal-safe, no lock);
//! they tell a runtime whose computing threads are refused rightly (their
//! pc in glibc, a frame under a glibc call) from one the safe-point test
//! refuses for what it cannot follow (a stale word found by the scan, a
//! stack deeper than the scan's bound).

use std::sync::atomic::{AtomicU64, Ordering};

/// A reason the handler did not preempt.
#[derive(Clone, Copy)]
pub(super) enum Refusal {
    /// The run the monitor meant is over, or no coroutine runs.
    RunOver = 0,
    /// A signal handler runs, the process is confined, or it is the only
    /// coroutine.
    NotNow,
    /// The coroutine holds a FILE lock it took with `flockfile`.
    FileLock,
    /// The interrupted sp is off the coroutine's stack or too near its end.
    StackRoom,
    /// The loaded objects were not published yet, or are being rewritten.
    NoTable,
    /// The pc is in corun or a runtime library.
    PcInRuntime,
    /// A frame followed with CFI returns into a runtime library.
    FrameInRuntime,
    /// A word the scan read (past where the walk stopped) points after a
    /// call into a runtime library: a live frame or a stale word.
    WordInRuntime,
    /// The rest of the stack left to the scan is deeper than its bound.
    TooDeep,
}

const NAMES: [&str; 9] = [
    "run over",
    "in a handler",
    "FILE lock",
    "stack room",
    "no table",
    "pc in runtime",
    "frame in runtime",
    "stack word in runtime",
    "stack too deep",
];

static COUNTS: [AtomicU64; 9] = [const { AtomicU64::new(0) }; 9];

/// Counts one refusal. Async-signal-safe.
#[inline]
pub(super) fn note(r: Refusal) {
    COUNTS[r as usize].fetch_add(1, Ordering::Relaxed);
}

/// "reason N, reason N" for the reasons counted (empty if none).
pub fn summary() -> String {
    let mut out = String::new();
    for (name, c) in NAMES.iter().zip(&COUNTS) {
        let n = c.load(Ordering::Relaxed);
        if n != 0 {
            if !out.is_empty() {
                out.push_str(", ");
            }
            out.push_str(&format!("{name} {n}"));
        }
    }
    out
}
