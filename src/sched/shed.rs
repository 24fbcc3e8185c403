//! Shedding: a thread that was preempted while others wait on its worker
//! moves to a worker that has nothing to run.
//!
//! Placement decides a thread's worker once, at its spawn, from the load
//! then. Threads that compute for long can end up together: four threads,
//! two short and two long, spawned in turn on two workers, put both long
//! ones on one worker; once the short ones ended, the other worker idled
//! while they took turns (`imbalance`: 2.1 s against 1.2 s natively, 2
//! CPUs). The kernel moves such threads between CPUs; here the worker that
//! preempts one (it computed a whole slice while another task waited) and
//! still has work without it gives it to a worker asleep for lack of any.
//!
//! Why only then: a preempted thread is out of every queue and wait list
//! (no waker can be holding it), suspended at a safe point with its
//! registers on its own stack, and this worker, its home, is the only one
//! that touches its scheduler state (`Task`'s home-only fields); the
//! target's inbox hands it over with a release and an acquire. A thread
//! that waits for I/O or a timer stays where it is registered; Go's
//! scheduler steals runnable goroutines from any queue, which corun's
//! single-owner run queues (`fifo.rs`) do not allow. So when a thread
//! that woke waits behind a short run while a worker sleeps, the monitor
//! preempts the run to move it (`preempt_monitor::waits_beside_idle`).
//!
//! What moves with it (docs/ARCHITECTURE.md §9): its TLS block (errno,
//! `__thread`, corun's own words in it: `WORKER` is rewritten here), its
//! stack, its signal mask and pending signals (the workers' kernel mask is
//! the same on every worker), its virtual tid. What the kernel ties to a
//! kernel thread is rewritten or refused:
//! - the descriptor's `tid` becomes the new worker's (glibc writes it into
//!   mutexes it keeps itself, the kernel compares it for PI futexes);
//! - a thread that ever used a lock glibc keeps by kernel tid
//!   (`kernel_bound`), or with robust mutexes on its list, never moves;
//! - nor does one without a TLS block of its own (`main`, `corun_spawn`
//!   coroutines, `CORUN_TLS=worker`: their errno and `__thread` variables
//!   are the worker thread's), one inside a signal handler, one computing
//!   on a stack the program switched to (a fiber's: `foreign_stack.rs`
//!   keeps those per worker), one whose `sigaltstack` is larger than the
//!   workers' alternate stacks (it grew its own worker's only), nor any
//!   once the process confined itself.
//!
//! What a program sees change, as when the kernel moves a thread:
//! `sched_getcpu`, `/proc/thread-self` (it names the worker's kernel
//! thread), `RUSAGE_THREAD`.

use std::sync::atomic::Ordering;

use crate::sys::static_tls::WorkerWord;

use super::runtime::runtime;
use super::task::TaskRef;
use super::worker::Worker;

impl Worker {
    /// After `t` was preempted here: gives it to an idle worker if this one
    /// has other work and `t` may move; else hands it back to be queued.
    #[cold]
    #[inline(never)]
    pub(super) fn shed(&'static self, t: TaskRef) -> Result<(), TaskRef> {
        let Some(rt) = runtime() else { return Err(t) };
        if rt.workers.len() < 2 || !self.has_other_work() || !movable(&t) {
            return Err(t);
        }
        let Some(to) = rt.workers.iter().find(|w| w.idle_other_than(self.index)) else {
            return Err(t);
        };
        self.hand_over(t, to)?;
        super::stats::shed();
        to.notify();
        Ok(())
    }

    /// Makes `to` the home of `t`, a task of this worker that `movable`
    /// allows, suspended and out of every queue, and puts it in `to`'s
    /// inbox (the caller wakes `to`). Runs on this worker's thread, the
    /// old home, the only one that touches `t`'s scheduler state; `to`
    /// takes it from its inbox with an acquire. A task woken from a park
    /// and not yet resumed has the park's share of this worker's state
    /// settled here, where it lives: its count among the fd parks, and
    /// its timer, cancelled in this worker's heap with the answer left
    /// for the park (`Task::park_timer`).
    pub(super) fn hand_over(&'static self, t: TaskRef, to: &'static Worker) -> Result<(), TaskRef> {
        let tp = t.ident.tp.get();
        // SAFETY: `tp` is `t`'s block (movable checked it has one), whose
        // coroutine is suspended; this worker is its home.
        if !unsafe { crate::ctx::tls::move_to_kernel_thread(tp, to.tid.load(Ordering::Relaxed)) } {
            return Err(t);
        }
        // corun's `WORKER` word in the thread's block: the coroutine reads
        // it (`current_worker`) wherever it runs. Every static TLS block
        // has the same layout, so its offset from the thread pointer is
        // this thread's.
        let off = WorkerWord::addr().wrapping_sub(crate::ctx::tls::thread_pointer());
        // SAFETY: the word lies in `t`'s block at the offset it has in this
        // thread's (module doc of `static_tls`); nothing runs on the block.
        unsafe { *(tp.wrapping_add(off) as *mut usize) = to as *const Worker as usize };
        if t.fd_parked.replace(false) {
            let n = &self.local.fd_parks;
            n.set(n.get().saturating_sub(1));
        }
        if let Some(id) = t.park_timer.take() {
            let fired = self.timers().borrow_mut().cancel(id).is_none();
            t.timer_fired.set(fired);
        }
        // On the old home, its own thread.
        self.load.sub_own(1);
        to.load.add(1);
        t.set_home(to.index);
        to.push_remote(t);
        Ok(())
    }
}

/// The calling thread uses kernel state tied to the kernel thread it runs
/// on now: it never moves from here (`kernel_bound`). io_uring: a ring
/// set up with IORING_SETUP_SINGLE_ISSUER (or DEFER_TASKRUN) takes
/// submissions from the task that made it only (-EEXIST from any other),
/// a ring fd registered with `io_uring_register_ring_fd` is in the calling
/// task's table only (-EBADF elsewhere), and the completion work of a
/// COOP_TASKRUN ring waits for the task that submitted to enter the kernel.
pub fn bind_to_kernel_thread() {
    if let Some(t) = super::park::current() {
        t.ident.kernel_bound.set(true);
    }
}

/// Whether a suspended thread (preempted, or woken and queued) may run on
/// another kernel thread from now on.
pub(super) fn movable(t: &TaskRef) -> bool {
    if t.ident.tp.get() == 0
        || t.ident.kernel_bound.get()
        || t.ident.sig.depth.load(Ordering::Relaxed) != 0
        // Its handlers run on the worker's alternate stack, which its
        // `sigaltstack` grew on this worker only past the usual size.
        || t.ident.sig.alt_size.load(Ordering::Relaxed) > crate::ctx::overflow::ALTSTACK_SIZE
        || super::confined::is()
    {
        return false;
    }
    // Suspended on its own stack (the registers it saved as it yielded).
    t.debug.saved().is_some()
}
