//! The preemption monitor: a thread of corun's own (started by
//! `preempt::ensure_started`, every signal blocked, never touching
//! worker-local state) that samples each worker's running task and switch
//! count, decides when a run has computed long enough that a waiting task,
//! a due timer, a signal or a cancellation should have the worker, and
//! sends that worker the preemption request. What the request does, and
//! when the handler refuses it, is `preempt.rs`; this file only decides
//! when to ask (the policy is described at the top of `preempt.rs`,
//! "Who decides").

use std::sync::atomic::Ordering;

use super::preempt::{
    async_cancel_due, GRANULARITY_NS, KICK_LEFT, NEXT_TIMER, SENT, SIGNAL, SLICE_NS, VALUE, WANT,
};
use super::runtime::Runtime;
use super::worker::Worker;

pub(super) fn monitor(rt: &'static Runtime) {
    let slice = SLICE_NS.load(Ordering::Relaxed);
    let granularity = GRANULARITY_NS.min(slice);
    let idle_tick = (slice / 2).max(granularity);
    // Per worker: the run last seen, since when, and its thread's CPU
    // time then.
    let mut seen: Vec<Seen> = vec![Seen::default(); rt.workers.len()];
    // While a run is in progress (one seen computing at two samples, or a
    // preemption made within the last slice): sleep to the sooner of a
    // granularity and the first due timer of a worker running something
    // with others waiting (200 us at least). Otherwise half a slice: a
    // server whose runs are all short is sampled 200 times a second.
    let mut busy: Option<u64> = None;
    // A run that a woken thread waits behind while another worker sleeps
    // was seen: the next look comes after PULL_AFTER_NS
    // (`waits_beside_idle`). Not again after such a look: a server whose
    // runs are all short, one worker asleep beside the other, had its
    // monitor wake every 150 us (Apache's worker MPM: 15% more CPU per
    // request); at most two looks per idle tick now.
    let mut pull_soon = false;
    let mut looked_soon = false;
    let mut last_sent = 0u64;
    let mut settle = super::helper_park::Settle::new(rt);
    loop {
        if super::confined::is() {
            return;
        }
        let pause = match busy {
            None => idle_tick,
            Some(due) => due
                .saturating_sub(crate::sys::now_ns())
                .clamp(200_000, granularity),
        };
        let soon = pull_soon && !looked_soon && pause > PULL_AFTER_NS;
        let pause = if soon { PULL_AFTER_NS } else { pause };
        looked_soon = soon;
        pull_soon = false;
        let ts = crate::sys::ns_timespec(pause);
        // SAFETY: a valid relative timeout; no remainder wanted.
        unsafe {
            crate::sys::real::syscall!(
                libc::SYS_nanosleep,
                &ts as *const libc::timespec,
                std::ptr::null_mut::<libc::timespec>()
            )
        };
        let now = crate::sys::now_ns();
        let mut long_run = now.saturating_sub(last_sent) < slice;
        let mut first_due = u64::MAX;
        for (i, w) in rt.workers.iter().enumerate() {
            super::foreign_stack::refresh(w.index);
            let id = w.running_id.load(Ordering::Relaxed);
            let sw = w.switches.load(Ordering::Relaxed);
            // A signal left pending for a run the trampoline could not
            // redirect (`redirect_for_signals`) is handed over by a
            // preemption even on a worker with nothing else to run.
            let held = id != 0 && seen[i].is(id, sw);
            let left = KICK_LEFT[w.index].load(Ordering::Relaxed);
            let kick_left = id != 0 && left == sw + 1;
            let signal_waits = held
                && now.saturating_sub(seen[i].since) >= granularity
                && (kick_left || super::signals::WORK.load(Ordering::Relaxed))
                && has_deliverable(id);
            if left != 0 && !kick_left {
                // That run switched: its signals ran at its resume or park.
                // (Not over a mark the trampoline left since for a new run.)
                let _ = KICK_LEFT[w.index].compare_exchange(
                    left,
                    0,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }
            let cancel_waits = held && async_cancel_due(id);
            if id != 0 && w.load.get() >= 2 && waits_beside_idle(rt, w, now) {
                if held
                    && now.saturating_sub(seen[i].since) >= PULL_AFTER_NS
                    && computed_since(&seen[i], w, now) >= PULL_AFTER_NS * 3 / 4
                    && !super::alone()
                    && thread_runs(w)
                {
                    // Preempted, the run moves to the idle worker
                    // (`shed.rs`) and what waited here runs here.
                    seen[i] = Seen::new(id, sw, now, None);
                    super::preempt_safe::refresh();
                    WANT[w.index].store(sw + 1, Ordering::SeqCst);
                    send(w);
                    last_sent = now;
                    continue;
                }
                // Seen once: looked at again soon (below, `pull_soon`).
                pull_soon = true;
            }
            if id == 0 || (w.load.get() < 2 && !signal_waits && !cancel_waits) {
                // Idle, or nothing else there to preempt for (a lone
                // coroutine that computes costs no faster sampling). The
                // run keeps its start, for `signal_waits` at a later tick.
                if !held {
                    seen[i] = Seen::new(id, sw, now, None);
                }
                continue;
            }
            let next = NEXT_TIMER[w.index].load(Ordering::Relaxed);
            first_due = first_due.min(next);
            if !held {
                // A run seen for the first time: its thread's CPU time
                // from now on tells whether it computes.
                seen[i] = Seen::new(id, sw, now, super::cpuclock::worker_thread_ns(w));
                continue;
            }
            // How long the run has computed: its thread's CPU time since
            // it was first seen, not the time since then. A worker thread
            // that waits for a CPU (a loaded machine: the kernel runs
            // other threads) does not compute, and the kernel already
            // shares the CPU out; preempting the run it was in would only
            // cost a request, a /proc read and a signal each tick (16% of
            // an Apache child's CPU on a machine with a load of 20).
            let ran = computed_since(&seen[i], w, now);
            if ran >= COMPUTES_NS {
                long_run = true;
            }
            // A signal to hand to a coroutine is as urgent as a due timer,
            // and so is a thread that woke (or was made) and waits behind
            // the run, as the kernel lets a thread that wakes preempt one
            // that computes.
            let due = next <= now
                || super::signals::WORK.load(Ordering::Relaxed)
                || signal_waits
                || w.woken_waiting.load(Ordering::Relaxed)
                || w.has_remote()
                || cancel_waits;
            if !(ran >= run_slice(slice, i, sw) || (due && ran >= granularity))
                || (super::alone() && !signal_waits && !cancel_waits)
                || !thread_runs(w)
            {
                continue;
            }
            super::preempt_safe::refresh();
            WANT[w.index].store(sw + 1, Ordering::SeqCst);
            send(w);
            last_sent = now;
        }
        busy = long_run.then_some(first_due);
        // Nothing ran on any worker for a whole tick: no tick until one
        // wakes (`helper_park.rs`), where an idle process woke this
        // thread 200 times a second.
        if busy.is_none() && !pull_soon && settle.idle_for_a_period(rt) {
            settle.park(super::helper_park::MONITOR, rt);
        }
    }
}

/// The slice of run `sw` of worker `i`: between half and one and a half
/// `slice`, spread evenly by a hash of the two (a mean of `slice`). The
/// kernel checks a slice at its tick (4 ms at HZ=250, beside a 3 ms
/// slice), so a thread's slices differ by as much as they last, and the
/// order of computing threads sorted by run time keeps changing; with
/// corun's slices all within a 1 ms tick of 10 ms, the order stayed put,
/// and a consumer that spins beside a producer could wait seconds for
/// its place just after it (`c-tests/preempt_order.c`, crossbeam-deque's
/// `no_starvation`). Deterministic, so nothing is drawn at each tick.
fn run_slice(slice: u64, i: usize, sw: u64) -> u64 {
    // splitmix64's finaliser: every input bit moves every output bit.
    let mut x = sw ^ ((i as u64) << 56);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    slice / 2 + x % slice.max(1)
}

/// CPU time a run has taken over at least one monitor tick before the
/// monitor samples at the finer period (`GRANULARITY_NS`).
const COMPUTES_NS: u64 = GRANULARITY_NS / 4;

/// A run the monitor saw: the task and the switch count that name it, when
/// it was first seen, and its worker thread's CPU time then (None: first
/// seen alone on its worker, where it is not read, or the clock could not
/// be read; the time since then counts instead, as for a lone run with a
/// signal to hand over).
#[derive(Clone, Copy, Default)]
struct Seen {
    id: u64,
    sw: u64,
    since: u64,
    cpu: Option<u64>,
}

impl Seen {
    fn new(id: u64, sw: u64, since: u64, cpu: Option<u64>) -> Self {
        Seen { id, sw, since, cpu }
    }

    fn is(&self, id: u64, sw: u64) -> bool {
        (self.id, self.sw) == (id, sw)
    }
}

/// How long a run lasts at least before a thread that woke behind it
/// moves it to an idle worker (`waits_beside_idle`).
const PULL_AFTER_NS: u64 = 100_000;

/// Whether something waits on worker `w` behind its run (a due timer, a
/// wake-up from another thread) while another worker sleeps for lack of
/// work: natively the woken thread would run at once on the idle CPU.
/// A run seen so at two looks PULL_AFTER_NS apart is preempted, and the
/// preempted thread moves to the sleeping worker (`shed.rs`), where it
/// stays: two threads that compute a millisecond and sleep in turn,
/// homed on one worker, took turns there while the other idled
/// (`heavy_sleepers`: 1.5-1.7x native's wall time). Such runs are
/// shorter than the monitor's idle period, so the first look only asks
/// for a second one soon; one move mends the imbalance for as long as it
/// lasts. Two looks, not the worker's own stamp of the run's start: that
/// is the clock of its last poll, up to `POLL_EVERY` runs old, and a
/// server's 5 us requests read as 200 us runs (600-850 needless
/// preemptions in 4 s of threaded_http at 1,000 connections). And CPU
/// time between them, not wall time: a worker thread that waits for a
/// CPU the load generator holds is not computing (still 300 in 4 s).
fn waits_beside_idle(rt: &Runtime, w: &Worker, now: u64) -> bool {
    rt.workers.iter().any(|v| v.idle_other_than(w.index))
        && (NEXT_TIMER[w.index].load(Ordering::Relaxed) <= now
            || w.woken_waiting.load(Ordering::Relaxed)
            || w.has_remote()
            || readiness_waits(w))
}

/// Whether worker `w`'s epoll holds readiness it has not collected: a
/// thread woken by I/O that waits for the worker's next poll (an epoll
/// fd reads as readable while its ready list is not empty; looking
/// collects nothing). A wrong answer (the worker replaced its epoll at a
/// fork) costs one preemption: a thread only moves when the worker's own
/// poll at the preemption found something to run (`shed.rs`).
fn readiness_waits(w: &Worker) -> bool {
    let fd = w.epoll_fd.load(Ordering::Relaxed);
    if fd < 0 {
        return false;
    }
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait; the raw call (corun's `poll`
    // hook is for the program's calls).
    let n =
        unsafe { crate::sys::real::syscall!(libc::SYS_poll, &mut p as *mut libc::pollfd, 1, 0) };
    n == 1 && p.revents & libc::POLLIN != 0
}

/// CPU time worker `w`'s thread took since the look `seen` (the time
/// since then when that look did not read it).
fn computed_since(seen: &Seen, w: &Worker, now: u64) -> u64 {
    match (seen.cpu, super::cpuclock::worker_thread_ns(w)) {
        (Some(c0), Some(c1)) => c1.saturating_sub(c0),
        _ => now.saturating_sub(seen.since),
    }
}

/// Whether coroutine `id` has a signal it takes pending.
fn has_deliverable(id: u64) -> bool {
    super::sigdispatch::find_id(id).is_some_and(|t| super::signals::deliverable(&t) != 0)
}

/// Whether the worker's thread is running or runnable (state R in
/// /proc/self/task/TID/stat), not asleep in a system call.
fn thread_runs(w: &Worker) -> bool {
    super::proc_view::thread_state(w) == super::proc_view::ThreadState::Runs
}

fn send(w: &Worker) {
    SENT.fetch_add(1, Ordering::Relaxed);
    super::signals::send_marker(w.tid.load(Ordering::Relaxed), SIGNAL, VALUE);
}
