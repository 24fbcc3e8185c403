//! A worker's only coroutine sleeping in a call of its own.
//!
//! An event loop thread (haproxy's, redis's, one per worker) waits in its
//! own `epoll_wait`. Parked the usual way, each wait that finds nothing
//! costs three epoll calls: the program's with a zero timeout, the
//! worker's blocking one (the program's epoll fd is in it), and the
//! program's again once woken; natively it is one. When nothing is queued
//! on the coroutine's worker, no timer is set there and no other task of
//! the worker waits on an fd (`Worker::fd_parks`), nothing else could run
//! there until something wakes the worker: the hook may block in the
//! program's own call instead (`hooks/epoll_solo.rs`), with the worker's
//! wake eventfd added to the program's epoll set, so that whatever would
//! have woken the sleeping worker (a task placed here, a task of this
//! worker woken from another thread, a signal to route, a stolen task)
//! ends that call too. Other tasks may be parked there on anything else
//! (a condition variable, a join, a channel): their wake-ups come through
//! that eventfd or from the coroutine itself. Redis's background threads,
//! waiting on condition variables, took the solo wait from its event loop
//! whenever one of them was homed on the loop's worker: four epoll calls
//! a wait instead of one.
//!
//! `sleep_solo` is the worker's sleep, as in `netpoller.rs`: it announces
//! `sleeping`, re-checks the shared queues, and only then blocks; a
//! producer pushes first, then writes the eventfd if it sees `sleeping`
//! (`Worker::notify`). Meanwhile the worker shows no running task, as a
//! sleeping scheduler does, and each wait counts as a switch: the
//! watchdog does not call the waits a stall, and other workers do not
//! steal because the worker looks held.

use std::sync::atomic::{fence, Ordering};

use super::runtime::runtime;
use super::worker::{current_task_ptr, current_worker, Worker};

/// The wake eventfd of the running coroutine's worker, if nothing is
/// queued or due there, no other task of it is parked on an fd, and the
/// worker's thread has its own epoll (not a forked child's stale one).
pub fn solo_wake_fd() -> Option<i32> {
    let w = solo_worker()?;
    w.renewed();
    Some(w.wake.fd())
}

/// The wake eventfd of this thread's worker, alone there or not.
pub fn worker_wake_fd() -> Option<i32> {
    current_worker().map(|w| w.wake.fd())
}

fn solo_worker() -> Option<&'static Worker> {
    if current_task_ptr().is_null() {
        return None;
    }
    let w = current_worker()?;
    let alone =
        w.local.fd_parks.get() == 0 && !w.has_other_work() && w.local.timers.borrow().is_empty();
    alone.then_some(w)
}

/// Runs `wait` (a blocking call that the worker's wake eventfd, `fd`,
/// ends) as the worker's sleep; None if the worker has work after all, or
/// its eventfd is no longer `fd`.
pub fn sleep_solo<R>(fd: i32, wait: impl FnOnce() -> R) -> Option<R> {
    let rt = runtime()?;
    let w = solo_worker()?;
    if w.wake.fd() != fd {
        return None;
    }
    let task = super::park::current()?;
    // The wait is a cancellation point, as a park is (`park::park_as`):
    // announce it, then look at the requests. A canceller (pthread_cancel,
    // a cancel token) sets its request, then looks at the announcement and
    // wakes this worker (`park::interrupt_cancelable`), which ends the
    // wait. Either this check sees the request or the canceller sees the
    // announcement. Before, neither looked: a thread alone on its worker
    // in epoll_wait(-1) could not be cancelled (the join hung).
    task.ident.at_cancel_point.store(true, Ordering::SeqCst);
    if task.ident.cancel_due() || task.ident.token_cancelled() {
        task.ident.at_cancel_point.store(false, Ordering::Relaxed);
        return None;
    }
    w.sleeping.store(true, Ordering::SeqCst);
    fence(Ordering::SeqCst);
    if w.has_shared_work(rt) {
        w.sleeping.store(false, Ordering::SeqCst);
        task.ident.at_cancel_point.store(false, Ordering::Relaxed);
        return None;
    }
    let id = w.running_id.swap(0, Ordering::Relaxed);
    w.nap_starts();
    let r = wait();
    task.ident.at_cancel_point.store(false, Ordering::Relaxed);
    w.nap_ended();
    w.note_cpu();
    w.sleeping.store(false, Ordering::SeqCst);
    // Back from the scheduler's sleep, as after a switch: the watchdog's
    // heartbeat moves (it looks for a task that holds its worker).
    w.running_since
        .store(w.local.clock.get(), Ordering::Relaxed);
    w.switches
        .store(w.switches.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    w.running_id.store(id, Ordering::Relaxed);
    Some(r)
}

/// Resets the worker's eventfd after a solo wait it ended: the wake-up is
/// taken (what it announced is in the shared queues, which the scheduler
/// reads next).
pub fn drain_wake() {
    if let Some(w) = current_worker() {
        w.wake.drain();
    }
}
