//! The netpoller: a worker's epoll instance, its wake-up eventfd, and the
//! poll that turns readiness and expired timers into runnable tasks.
//!
//! An fd is registered, edge-triggered, with the epoll of each worker that
//! has had a coroutine waiting on it (`park::enlist`, once per worker and
//! per generation of the fd); an event moves the fd's readiness sequence
//! and wakes its waiters, whichever worker they live on
//! (docs/ARCHITECTURE.md §4). The worker's own eventfd is registered too
//! (`WAKE_KEY`): `Worker::notify` writes it when the worker sleeps.
//!
//! Why each waiting worker's epoll and not one shared netpoller (Go's
//! choice): a coroutine stays on its worker, so the worker that polls an
//! fd's events is the one that runs its waiter, and a wake is a push on
//! the local queue; an idle worker sleeps in its own epoll and is woken
//! only by its own fds (a shared epoll nested in every worker's would wake
//! every sleeping worker for each event). The one fd a connection's
//! coroutine waits on is registered once, as before; an fd waited on from
//! several workers (a listener with acceptors everywhere, a pipe handed to
//! another thread) costs one `epoll_ctl` per worker. Before, only the
//! first waiter's worker watched the fd: a reader on another worker
//! waited 2,001 ms for data that arrived at 350 ms while that first
//! worker computed (`scripts/tests/readiness_busy_worker.sh`).
//!
//! A worker polls without blocking every `POLL_EVERY` tasks and whenever
//! it has nothing to run; when idle it blocks here until the next timer,
//! after announcing that it sleeps (the protocol in `worker.rs`). While
//! idle it also returns the pages of idle stacks (`stack_pool.rs`).
//!
//! In a forked child the inherited epoll and eventfd are the parent's: the
//! child's worker makes new ones before it first uses them (`renewed`).

use std::sync::atomic::Ordering;

use crate::sys::epoll::{Epoll, EventFd};

use super::fdtable;
use super::runtime::Runtime;
use super::worker::{mark_runtime_fds, Worker};

/// epoll data of the worker's own eventfd.
const WAKE_KEY: u64 = u64::MAX;
const EVENTS: usize = 256;

/// A worker's epoll instance, with its eventfd registered.
pub(super) fn new_epoll(wake: &EventFd) -> std::io::Result<Epoll> {
    let epoll = Epoll::new()?;
    epoll
        .register(wake.fd(), WAKE_KEY)
        .map_err(std::io::Error::from_raw_os_error)?;
    mark_runtime_fds(&[epoll.fd(), wake.fd()]);
    Ok(epoll)
}

/// The epoll instance and eventfd of a worker about to get its thread
/// (the caller won `started`, so nobody else opens them; nobody signals the
/// eventfd before the worker sleeps). The epoll goes to the worker's
/// thread (`set_epoll`): the worker's `Local` is its thread's alone. Both
/// are kept for the next attempt if the thread cannot be made (a spawn
/// under a thread limit tries again at each spawn).
pub(super) fn open_for_start(w: &Worker) -> std::io::Result<Epoll> {
    if w.wake.fd() < 0 {
        w.wake.renew()?;
    }
    let kept = w.unstarted_epoll.load(Ordering::Relaxed);
    if kept >= 0 {
        return Ok(Epoll::from_fd(kept));
    }
    let epoll = new_epoll(&w.wake)?;
    w.unstarted_epoll.store(epoll.fd(), Ordering::Relaxed);
    Ok(epoll)
}

impl Worker {
    /// On the worker's own thread, at its start: the epoll made for it by
    /// `open_for_start`.
    pub(super) fn set_epoll(&self, epoll: Epoll) {
        self.local.epoll.set(epoll);
        self.epoll_fd.store(epoll.fd(), Ordering::Relaxed);
        self.unstarted_epoll.store(-1, Ordering::Relaxed);
    }

    /// The epoll instance fds are registered with by tasks of this worker
    /// (the worker's own thread only).
    pub(super) fn epoll(&self) -> Epoll {
        self.renewed();
        self.local.watches_fds.set(true);
        self.local.epoll.get()
    }

    /// In a forked child, before the first use of the worker's epoll: a new
    /// epoll instance and eventfd (the inherited ones are the parent's).
    #[inline]
    pub(super) fn renewed(&self) {
        if self.local.stale.get() {
            self.renew();
        }
    }

    #[cold]
    fn renew(&self) {
        let made = (|| -> std::io::Result<Epoll> {
            self.wake.renew()?;
            new_epoll(&self.wake)
        })();
        let epoll = match made {
            Ok(e) => e,
            Err(e) => {
                crate::sys::raw_stderr(
                    format!("corun: forked child cannot rebuild its scheduler: {e}\n").as_bytes(),
                );
                // SAFETY: ending the child; its state would be shared with the parent.
                unsafe { libc::_exit(127) };
            }
        };
        // The parent's epoll fd stays open in the child (closing it would
        // not affect the parent, but it is simply no longer used).
        self.local.epoll.set(epoll);
        self.epoll_fd.store(epoll.fd(), Ordering::Relaxed);
        self.local.stale.set(false);
    }

    /// Processes netpoller events and expired timers; blocks up to the next
    /// timer when `block` is set.
    pub(super) fn poll(&'static self, rt: &Runtime, block: bool) {
        self.renewed();
        let now = crate::sys::now_ns();
        self.local.clock.set(now);
        let mut timeout = Some(0);
        if block {
            timeout = self
                .local
                .timers
                .borrow()
                .next_deadline()
                .map(|d| d.saturating_sub(now));
            timeout = super::stack_pool::scavenge_when_idle(timeout);
            self.sleeping.store(true, Ordering::SeqCst);
            std::sync::atomic::fence(Ordering::SeqCst);
            if self.has_shared_work(rt) || timeout == Some(0) {
                self.sleeping.store(false, Ordering::SeqCst);
                timeout = Some(0);
            }
        }
        let mut evs = [std::mem::MaybeUninit::<libc::epoll_event>::uninit(); EVENTS];
        // A look that must not block, at an epoll that holds only the
        // wake eventfd, would find nothing: wake-ups from other threads
        // arrive through the queues, and a written eventfd is drained by
        // the next sleep (which returns at once). Skipping it saves a
        // system call every POLL_EVERY tasks to programs that wait on no
        // fd (a yield, spawn+join or sleep loop).
        let naps = block && timeout != Some(0);
        if naps {
            self.nap_starts();
        }
        let evs: &[libc::epoll_event] = if block || self.local.watches_fds.get() {
            self.local.epoll.get().wait(&mut evs, timeout)
        } else {
            &[]
        };
        if naps {
            self.nap_ended();
        }
        self.note_cpu();
        if block {
            self.sleeping.store(false, Ordering::SeqCst);
            self.local.clock.set(crate::sys::now_ns());
        }
        for ev in evs {
            let (data, events) = (ev.u64, ev.events);
            if data == WAKE_KEY {
                self.wake.drain();
                continue;
            }
            if let Some(e) = fdtable::peek(data as u32 as i32) {
                e.on_event((data >> 32) as u32, events);
            }
        }
        self.fire_timers();
    }

    fn fire_timers(&self) {
        if self.local.timers.borrow().is_empty() {
            super::preempt::timers_next(self.index, None);
            return;
        }
        let now = crate::sys::now_ns();
        loop {
            let w = self.local.timers.borrow_mut().pop_expired(now);
            match w {
                Some(w) => w.wake(),
                None => break,
            }
        }
        // For the preemption monitor: when this worker's next timer is due.
        let next = self.local.timers.borrow().next_deadline();
        super::preempt::timers_next(self.index, next);
    }
}
