//! Running one task: its coroutine is made on the first run (stack, own
//! TLS block), its thread pointer is installed around each resume
//! (docs/ARCHITECTURE.md §9.1), and what its suspension means decides
//! where it goes next (back on the run queue, parked, finished).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::ctx::{overflow, tls, Coroutine, Resumed, Yielder};

use super::runtime::runtime;
use super::task::{Entry, TaskRef};
use super::worker::{Worker, CURRENT, WORKER};

impl Worker {
    /// Runs one task until it suspends or finishes; true if it ended
    /// (`run_task_inline`).
    #[inline(never)]
    pub(super) fn run_task(&'static self, t: TaskRef) -> bool {
        let woken = self.local.run_queue.borrow().has_woken();
        self.run_task_inline(t, woken)
    }

    /// `run_task`, inlined into the scheduler loop's path for the next
    /// queued task (`run_loop.rs`): a switch there then saves the call and
    /// the second save of the registers the coroutine switch clobbers.
    /// `woken`: whether a task that woke, yielded or was spawned waits in
    /// the local run queue (the caller looked already). True if the task
    /// ended (returned, exited, or could not start): only then can the
    /// scheduler loop's stop condition have changed (`run_loop.rs`).
    #[inline(always)]
    pub(super) fn run_task_inline(&'static self, t: TaskRef, woken: bool) -> bool {
        let tp = Arc::as_ptr(&t);
        // SAFETY: only this worker touches `coro` and `stack` of a task it
        // runs (the task is out of every queue while it runs); the look
        // ends before `start_coroutine` takes its own reference.
        let never_ran = unsafe { (*t.coro.get()).is_none() };
        if never_ran && !self.start_coroutine(&t) {
            return true;
        }
        // SAFETY: as above; no other reference to `coro` is live now.
        let coro = unsafe { &mut *t.coro.get() };
        let co = coro.as_mut().expect("coroutine just made");
        t.set_running();
        super::wake_latency::resumed(self.index, &t);
        let record = self.overflow_record();
        record.set(co.overflow_record());
        self.running_id.store(t.id, Ordering::Relaxed);
        self.running_start_addr
            .store(t.start_addr, Ordering::Relaxed);
        self.running_since
            .store(self.local.clock.get(), Ordering::Relaxed);
        self.woken_waiting.store(woken, Ordering::Relaxed);
        self.set_current_task(tp);
        t.ident.cpu.resumed(self.tid.load(Ordering::Relaxed));
        // A thread block of its own: its thread pointer is installed for
        // as long as it runs (docs/ARCHITECTURE.md §9.1). Inline, so that
        // a switch into such a thread is not a call that saves again the
        // registers the coroutine switch clobbers (a separate function
        // did: 45 instructions more a yield than with the worker's TLS).
        // Nothing between the two installs touches TLS: the compiler,
        // which takes the thread pointer as constant within a function,
        // can only have computed TLS addresses under the worker's own,
        // which is back when they are used.
        let own_tp = t.ident.tp.get();
        let r = if own_tp != 0 {
            // SAFETY: `own_tp` is the task's live block; no TLS is used
            // until the worker's own is back, just after.
            unsafe { tls::set_thread_pointer(own_tp) };
            let r = co.resume();
            // SAFETY: this thread's own thread pointer.
            unsafe { tls::set_thread_pointer(self.local.tp.get()) };
            r
        } else {
            co.resume()
        };
        t.ident.cpu.suspended();
        self.set_current_task(std::ptr::null());
        self.running_id.store(0, Ordering::Relaxed);
        record.set(std::ptr::null());
        // Only this thread writes it: no read-modify-write needed.
        self.switches
            .store(self.switches.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        match r {
            Resumed::Suspended if t.yielding.get() => {
                t.yielding.set(false);
                t.set_runnable();
                if t.preempted.replace(false) {
                    // Computing while others wait here: an idle worker
                    // may take it (`shed.rs`).
                    if let Err(t) = self.shed(t) {
                        self.push_preempted(t);
                    }
                } else {
                    self.push_local(t);
                }
                false
            }
            Resumed::Suspended if t.exiting.get() => {
                // SAFETY: pthread_exit suspended for good; its C frames own
                // nothing corun must drop (C has no destructors to run).
                unsafe { co.abandon() };
                self.finish(t, false);
                true
            }
            Resumed::Suspended => {
                if t.finish_park() {
                    self.push_local(t);
                }
                false
            }
            Resumed::Finished => {
                self.finish(t, false);
                true
            }
        }
    }

    /// A never-run task's first turn: its stack, TLS block and coroutine
    /// are made. Out of line, so that the frame of `run_task`, entered at
    /// every switch, stays small (with this inlined it was 4 KiB, probed
    /// at each entry). False if the task could not start (dropped).
    #[cold]
    #[inline(never)]
    fn start_coroutine(&'static self, t: &TaskRef) -> bool {
        let tp = Arc::as_ptr(t);
        // SAFETY: only this worker touches `coro` and `stack` of a task it
        // runs (the task is out of every queue while it runs).
        let coro = unsafe { &mut *t.coro.get() };
        t.set_home(self.index);
        // SAFETY: as above.
        let stack = unsafe { (*t.stack.get()).take() };
        let mut stack = match stack {
            Some(s) => self.recent_stack(s),
            None => match self.get_stack(t.stack_size) {
                Ok(s) => s,
                Err(_) => {
                    crate::sys::raw_stderr(b"corun: cannot map a coroutine stack; task dropped\n");
                    self.finish(t.clone(), true);
                    return false;
                }
            },
        };
        stack.mark_used();
        if t.ident.own_tls.get() && t.ident.tp.get() == 0 {
            match tls::ThreadBlock::new(self.tid.load(Ordering::Relaxed)) {
                Some(b) => {
                    t.ident.tp.set(b.tp());
                    t.hints.set_dtv(b.dtv());
                    t.ident.tls.set(Some(b));
                }
                None => crate::sys::raw_stderr(
                    b"corun: no TLS block could be made; this thread shares its worker's\n",
                ),
            }
        }
        let wp: *const Worker = self;
        let (guard, top) = (stack.guard_range(), stack.top());
        t.debug.set_stack(guard.1, top);
        *coro = Some(Coroutine::new(t.id, stack, move |y: &Yielder| {
            // SAFETY: the scheduler holds a TaskRef while the task runs,
            // and the body only runs while the task runs.
            let task = unsafe { &*tp };
            task.yielder.set(y);
            if task.ident.tp.get() != 0 {
                // On the coroutine's own thread pointer: the runtime's
                // thread-locals read here are this coroutine's copies,
                // set once (its stack never moves; a move to another
                // worker rewrites WORKER, `shed.rs`); then libc's
                // per-thread state.
                WORKER::set(wp as usize);
                CURRENT::set(tp as usize);
                // SAFETY: only the home worker touches `coro`; it holds
                // this coroutine, made before its first resume.
                if let Some(c) = unsafe { (*task.coro.get()).as_ref() } {
                    overflow::set_running(c.overflow_record());
                }
                tls::start_thread();
            }
            // A signal made pending for it before it ran.
            super::signals::run_pending(task);
            // SAFETY: `entry` is only touched on the home worker, here.
            let entry = unsafe { (*task.entry.get()).take() };
            let r = match entry {
                Some(Entry::C { f, arg }) => f(arg),
                Some(Entry::Rust(f)) => f(),
                None => std::ptr::null_mut(),
            };
            task.result.store(r as usize, Ordering::Relaxed);
        }));
        true
    }

    fn finish(&self, t: TaskRef, failed: bool) {
        if let Some(rt) = runtime() {
            (rt.plugins.task_ended)(t.id);
        }
        t.ident.tp.set(0);
        if let Some(b) = t.ident.tls.take() {
            b.release();
        }
        super::signals::task_ended(&t);
        // SAFETY: the task no longer runs; only its home worker touches `coro`.
        if let Some(c) = unsafe { (*t.coro.get()).take() } {
            self.put_stack(c.into_stack());
        }
        if failed {
            t.result.store(0, Ordering::Relaxed);
        }
        // The worker's load drops before the task is seen done: a joiner
        // that returns and confines the process (`confined::enter`) must
        // find this worker idle, or its thread outlived the program's own
        // (proc_seccomp's doomed child hung, or exited 0 instead of dying
        // by SIGSYS).
        // This worker's own thread: no locked instruction (`load.rs`).
        self.load.sub_own(1);
        // Publishes `result` (and the load above) to joiners that look at
        // the state (`join`).
        t.set_done();
        super::stats::live_ended();
        let joiner = {
            let mut j = t.join.lock();
            j.done = true;
            j.result = if failed {
                0
            } else {
                t.result.load(Ordering::Relaxed)
            };
            j.joiner.take()
        };
        if let Some(w) = joiner {
            w.wake();
        }
    }
}
