//! A coroutine that polls without ever waiting gives its worker up after
//! a time slice.
//!
//! Natively a thread that loops on `poll`, `select` or `ppoll` calls that
//! return at once (a descriptor stays ready until another thread reads
//! it) is preempted by the kernel, and the thread it waits for runs. Under
//! corun such a loop never parks, so a coroutine that would end it and
//! whose home is the same worker never runs: the loop goes on for ever.
//! CPython's `multiprocessing.Pool` does exactly this: its worker-handler
//! thread waits on the result pipe (readable until the result-handler
//! thread reads it) and polls its change notifier with a zero timeout, in
//! a loop; under corun every `Pool.map` hung.
//!
//! So these calls end with `yield_if_slice_spent`: when other coroutines
//! wait for this worker and the caller has held it for `SLICE_NS` without
//! a switch, it yields (goes to the back of the run queue), as the
//! kernel's preemption would let the others run. The first such call after
//! a switch only notes the time; a coroutine that parks, or a worker with
//! nothing else to run, costs one look at the queues.

use std::cell::Cell;
use std::sync::atomic::Ordering;

use super::park::{in_coroutine, in_signal_handler, yield_now};
use super::worker::current_worker;

/// How long a coroutine that keeps polling holds its worker before the
/// others get a turn (the order of a kernel time slice).
pub const SLICE_NS: u64 = 2_000_000;

thread_local! {
    /// The worker's switch count and the time at the first call after it
    /// (u64::MAX: none noted).
    static MARK: Cell<(u64, u64)> = const { Cell::new((u64::MAX, 0)) };
}

/// Yields when the running coroutine has held its worker for `SLICE_NS`
/// since its first such call without a switch, and another coroutine waits
/// for the worker. Outside a coroutine, or in a signal handler, nothing.
pub fn yield_if_slice_spent() {
    let Some(w) = current_worker() else { return };
    if !in_coroutine() || in_signal_handler() || !w.has_other_work() {
        return;
    }
    let switches = w.switches.load(Ordering::Relaxed);
    let now = crate::sys::now_ns();
    let (marked, since) = MARK.get();
    if marked != switches {
        MARK.set((switches, now));
        return;
    }
    if now.saturating_sub(since) < SLICE_NS {
        return;
    }
    MARK.set((u64::MAX, 0));
    // The call's errno is the caller's: a handler run at the yield keeps it.
    let e = crate::sys::errno();
    yield_now();
    crate::sys::set_errno(e);
}
