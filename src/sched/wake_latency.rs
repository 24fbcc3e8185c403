//! How long a woken thread waits for its worker: from the wake-up that
//! queues it (`spawn::schedule`: readiness, a futex or lock hand-off, a
//! timer, a join) to its resumption, in power-of-two buckets, apart for
//! wake-ups made on its home worker and those made by another thread
//! (another worker, the blocking pool). Kept only with `CORUN_STATS=1`
//! (`enable`), and printed with the other statistics (`stats::report`,
//! which the dump ends with too).
//!
//! Why: natively the kernel runs a thread that wakes soon (it has used
//! little CPU); under corun it waits its turn in its worker's run queue
//! behind the ready ones, and a server's tail latency is the sum of those
//! waits along a request. This is the figure that says whether a tail
//! comes from there (docs/ARCHITECTURE.md §11).
//!
//! Off, the cost is one load and branch at a wake-up and at a resumption.
//! On: a clock read at each, and a bucket bumped by the home worker (the
//! only writer of its histogram: a plain load and store).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use super::task::Task;
use crate::config::MAX_WORKERS;

static ON: AtomicBool = AtomicBool::new(false);

/// Buckets: [0] below 1 us, [k] below 2^k us, the last one everything
/// from 2^(BUCKETS-2) us (~4.2 s) up.
const BUCKETS: usize = 24;

#[repr(align(128))]
struct Histograms {
    /// [0]: woken on the home worker; [1]: by another thread.
    by_waker: [[AtomicU64; BUCKETS]; 2],
}

static PER_WORKER: [Histograms; MAX_WORKERS] = [const {
    Histograms {
        by_waker: [const { [const { AtomicU64::new(0) }; BUCKETS] }; 2],
    }
}; MAX_WORKERS];

/// Starts keeping the figures (at the runtime's start).
pub fn enable() {
    ON.store(true, Relaxed);
}

/// `t` was woken and is queued on its home worker; `remote`: by another
/// thread than that worker's. The store is published to the home worker
/// by the queue push that follows.
#[inline]
pub fn woken(t: &Task, remote: bool) {
    if ON.load(Relaxed) {
        t.woken_at
            .store((crate::sys::now_ns() << 1) | remote as u64, Relaxed);
    }
}

/// Worker `index` resumes `t`: a wake-up that queued it ends here.
#[inline]
pub fn resumed(index: usize, t: &Task) {
    if ON.load(Relaxed) {
        record(index, t);
    }
}

#[cold]
fn record(index: usize, t: &Task) {
    let w = t.woken_at.swap(0, Relaxed);
    if w == 0 {
        return; // a yield, a first run, or a park that never suspended
    }
    let us = crate::sys::now_ns().saturating_sub(w >> 1) / 1000;
    let b = if us == 0 {
        0
    } else {
        ((u64::BITS - us.leading_zeros()) as usize).min(BUCKETS - 1)
    };
    let c = &PER_WORKER[index].by_waker[(w & 1) as usize][b];
    c.store(c.load(Relaxed) + 1, Relaxed);
}

/// The upper bound (us) of bucket `b`, None for the last, open one.
fn bound_us(b: usize) -> Option<u64> {
    (b < BUCKETS - 1).then(|| 1u64 << b)
}

/// One report line per kind of waker with any wake-ups: their number and
/// the bucket bounds of the median, the 99th and 99.9th percentiles and
/// the longest (an empty list when the figures are not kept).
pub fn report_lines(workers: usize) -> Vec<(String, String)> {
    if !ON.load(Relaxed) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (kind, name) in [(0, "on its own worker"), (1, "by another thread")] {
        let mut h = [0u64; BUCKETS];
        for w in PER_WORKER.iter().take(workers) {
            for (sum, c) in h.iter_mut().zip(&w.by_waker[kind]) {
                *sum += c.load(Relaxed);
            }
        }
        let n: u64 = h.iter().sum();
        if n == 0 {
            continue;
        }
        let at = |q: f64| -> String {
            let want = ((n as f64) * q).ceil().max(1.0) as u64;
            let mut seen = 0;
            for (b, c) in h.iter().enumerate() {
                seen += c;
                if seen >= want {
                    return match bound_us(b) {
                        Some(us) if us >= 1000 => format!("< {} ms", us / 1000),
                        Some(us) => format!("< {us} us"),
                        None => format!(">= {} s", (1u64 << (BUCKETS - 2)) / 1_000_000),
                    };
                }
            }
            String::from("?")
        };
        out.push((
            format!("wake-up to run, woken {name}"),
            format!(
                "{n} wake-ups; median {}, 99% {}, 99.9% {}, longest {}",
                at(0.5),
                at(0.99),
                at(0.999),
                at(1.0)
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_powers_of_two_of_microseconds() {
        assert_eq!(bound_us(0), Some(1));
        assert_eq!(bound_us(10), Some(1024));
        assert_eq!(bound_us(BUCKETS - 1), None);
    }
}
