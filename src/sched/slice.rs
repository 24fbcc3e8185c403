//! A coroutine that keeps calling without ever waiting gives its worker
//! up after a time slice.
//!
//! Natively a thread that loops on `poll`, `select`, `ppoll` or `epoll_wait` calls that
//! return at once (a descriptor stays ready until another thread reads
//! it), or on reads of its own non-blocking descriptors that fail with
//! EAGAIN, is preempted by the kernel, and the thread it waits for runs.
//! Under corun such a loop never parks, so its worker neither runs the
//! others nor looks at its netpoller: a coroutine that would end the loop
//! and whose home is the same worker never runs, and one parked there for
//! readiness is never woken. Seen in CPython: `multiprocessing.Pool`'s
//! worker-handler thread waits on the result pipe (readable until the
//! result-handler thread reads it) and polls its change notifier with a
//! zero timeout, in a loop: every `Pool.map` hung; test_ftplib's asyncore
//! server loops on a `poll` that a writable socket answers at once, while
//! its client, parked on the same worker, waits for a reply: it hung.
//!
//! So these calls end with `yield_if_slice_spent`: when the caller has
//! held its worker for `SLICE_NS` without a switch, its worker polls its
//! netpoller (without blocking) and the caller yields (back of the run
//! queue), as the kernel's preemption would let the others run. The cost of
//! a call is a look at a thread-local; every `CHECK_EVERY` calls without a
//! switch, a clock read.

use std::sync::atomic::Ordering;

use super::park::{current, in_coroutine, in_signal_handler, suspend};
use super::worker::current_worker;

/// How long a coroutine that keeps calling holds its worker before the
/// others get a turn (the order of a kernel time slice).
pub const SLICE_NS: u64 = 2_000_000;
/// Calls between clock reads.
const CHECK_EVERY: u32 = 16;

/// Where the worker's run of such calls began: kept in the worker
/// (`Local::slice_mark`, only its thread touches it), not a
/// `thread_local!`, which in a shared library is a `__tls_get_addr` call
/// per access (two per call, a third of this function's cost). Any
/// switch of the worker starts a new run, whichever coroutine it resumes.
#[derive(Clone, Copy)]
pub(super) struct Mark {
    /// The worker's switch count when the calls began.
    switches: u64,
    /// Monotonic time at the first clock read since (0: none yet).
    since: u64,
    calls: u32,
}

pub(super) const NONE: Mark = Mark {
    switches: u64::MAX,
    since: 0,
    calls: 0,
};

/// Yields when the running coroutine has made such calls for `SLICE_NS`
/// without a switch of its worker, after its worker polled its netpoller. Outside a coroutine, or in a signal
/// handler, nothing.
///
/// Inlined into the hooks: the common call only counts. Who calls
/// (a coroutine, a handler, the worker's own scheduler) is asked only at
/// every `CHECK_EVERY`th call, before the clock is read: counting a call
/// that is not a coroutine's costs nothing but an earlier clock read.
/// Asked first, it was four thread-local reads and a static on another
/// page at every read and write of an event loop beside parked threads
/// (Redis with its background threads: ~45 instructions a call; its CPU
/// per GET did not move measurably with the change, paired runs).
#[inline(always)]
pub fn yield_if_slice_spent() {
    // The process's only coroutine has nobody to give its worker to, and
    // makes its calls as natively (`parking`): no poll, no yield, no
    // bookkeeping (an event loop's every call ends here).
    if super::lone::never_spawned() {
        return;
    }
    let Some(w) = current_worker() else { return };
    let switches = w.switches.load(Ordering::Relaxed);
    let mark = &w.local.slice_mark;
    let mut m = mark.get();
    if m.switches != switches {
        mark.set(Mark {
            switches,
            since: 0,
            calls: 0,
        });
        return;
    }
    m.calls = m.calls.wrapping_add(1);
    if !m.calls.is_multiple_of(CHECK_EVERY) {
        mark.set(m);
        return;
    }
    slice_check(w, m);
}

/// Every `CHECK_EVERY`th call of a run: the clock, and the yield when the
/// slice is spent.
#[cold]
#[inline(never)]
fn slice_check(w: &'static super::worker::Worker, mut m: Mark) {
    let mark = &w.local.slice_mark;
    if !in_coroutine() || in_signal_handler() {
        mark.set(m);
        return;
    }
    let now = crate::sys::now_ns();
    if m.since == 0 || now.saturating_sub(m.since) < SLICE_NS {
        if m.since == 0 {
            m.since = now;
        }
        mark.set(m);
        return;
    }
    mark.set(NONE);
    // The process's only coroutine now (its threads ended): as above.
    if super::alone() {
        return;
    }
    let (Some(task), Some(rt)) = (current(), super::runtime::runtime()) else {
        return;
    };
    // What became ready meanwhile joins the run queue ahead of this task
    // (a worker polls only between tasks, or every POLL_EVERY of them).
    w.poll(rt, false);
    super::stats::yielded();
    // The call's errno is the caller's: a handler run at the yield keeps it.
    let e = crate::sys::errno();
    task.yielding.set(true);
    suspend(&task);
    super::signals::run_pending(&task);
    crate::sys::set_errno(e);
}
