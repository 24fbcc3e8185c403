//! The runtime: the set of workers, the global queue, the configuration,
//! and the start of worker threads.
//!
//! Worker 0 is the thread that starts the runtime (the program's main
//! thread); the others get a thread on first use (`ensure_started`): a
//! program that never has a second coroutine (every `sh` or `cat` that
//! inherits LD_PRELOAD) never pays for their threads.
//!
//! The scheduler core (this file, `worker.rs`, `run_loop.rs`, `resume.rs`,
//! `spawn.rs`, `netpoller.rs`, `stack_pool.rs`) calls nothing above it:
//! what the layers above want to hear of (a task ended, for a forked
//! child's exit; the first spawn, for the watchdog) they install as
//! `Plugins` when they start the runtime (`sched::start`,
//! docs/ARCHITECTURE.md §1).

use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use super::fork_injector::ForkInjector;

use crate::ctx::{overflow, tls};

use super::task::{TaskRef, DONE};
use super::worker::{current_worker, Worker};

/// What the layers above the scheduler core are told.
pub struct Plugins {
    /// A task ended (its id).
    pub task_ended: fn(u64),
    /// A task was spawned.
    pub spawned: fn(&'static Runtime),
    /// The thread of a worker other than 0 was started (the spawn that
    /// started it has not returned).
    pub worker_started: fn(&'static Worker),
}

pub struct Runtime {
    pub workers: super::workers::Workers,
    pub(super) global: ForkInjector,
    pub config: crate::config::Config,
    pub(super) plugins: Plugins,
}

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// The runtime, if started.
#[inline]
pub fn runtime() -> Option<&'static Runtime> {
    RUNTIME.get()
}

/// Starts the runtime with this thread as worker 0; workers 1.. get threads
/// when first used.
pub fn start(config: crate::config::Config, plugins: Plugins) -> std::io::Result<&'static Runtime> {
    crate::sys::reserve_runtime_fds(config.workers);
    let mut workers = Vec::with_capacity(config.workers);
    for i in 0..config.workers {
        workers.push(Worker::new(i)?);
    }
    // This thread is worker 0: its epoll and eventfd now, where a failure
    // stops the start.
    let epoll0 = super::netpoller::open_for_start(workers[0])?;
    let rt = Runtime {
        workers: super::workers::Workers::new(workers),
        global: ForkInjector::new(),
        config,
        plugins,
    };
    if RUNTIME.set(rt).is_err() {
        return Err(std::io::Error::from_raw_os_error(libc::EEXIST));
    }
    let rt = runtime().expect("just set");
    if rt.config.own_tls {
        tls::init();
    }
    overflow::install_handler();
    crate::sys::block_cache::enable(
        super::task::Task::block_size(),
        super::worker::worker_block_cache,
    );
    let w0 = rt.workers.at(0);
    w0.started.store(true, Ordering::Release);
    w0.attach();
    w0.set_epoll(epoll0);
    Ok(rt)
}

/// Starts the thread of worker `w` unless it runs already.
pub fn ensure_started(w: &'static Worker) -> std::io::Result<()> {
    if w.dead.load(Ordering::Relaxed) {
        return Err(std::io::Error::from_raw_os_error(libc::EAGAIN));
    }
    if w.started
        .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return Ok(());
    }
    // The worker's epoll and eventfd are opened here, where a failure
    // (EMFILE) can be reported to the spawn, and handed to its thread.
    // The thread sets its tid when it attaches.
    w.tid.store(0, Ordering::Release);
    super::netpoller::open_for_start(w)
        .and_then(|epoll| start_thread(w, epoll))
        .inspect_err(|_| w.started.store(false, Ordering::Release))?;
    if let Some(rt) = runtime() {
        (rt.plugins.worker_started)(w);
    }
    Ok(())
}

fn start_thread(w: &'static Worker, epoll: crate::sys::epoll::Epoll) -> std::io::Result<()> {
    crate::sys::spawn_native_thread(Box::new(move || {
        w.attach();
        w.set_epoll(epoll);
        // It runs before it ever napped: the helpers may be parked.
        super::helper_park::wake_all();
        // Worker 0 runs until main's task ends; the others until they are
        // retired (`retire_idle`).
        w.run(|| w.dead.load(Ordering::Relaxed));
    }))?;
    // glibc installs its SIGSETXID handler at its first pthread_create.
    crate::ctx::setxid::wrap_glibc_handler();
    Ok(())
}

/// Drives worker 0 on this thread until `t` is done.
pub fn run_until_done(t: &TaskRef) {
    let w = current_worker().expect("worker 0 attached");
    w.run(|| t.state() == DONE);
}

/// Stops the threads of the started workers other than `keep` that have
/// no coroutine (a process that confines itself with seccomp: no thread
/// of corun's may keep it alive once the program's own are gone,
/// `confined.rs`). Each is marked dead, so nothing is placed there again,
/// and woken: its loop, out of work, ends. Returns their kernel thread
/// ids, for the caller to wait on.
pub fn retire_idle(keep: Option<usize>) -> Vec<i32> {
    let Some(rt) = runtime() else {
        return Vec::new();
    };
    let mut tids = Vec::new();
    for w in &rt.workers {
        if Some(w.index) == keep
            || w.index == 0
            || !w.started.load(Ordering::Acquire)
            || w.dead.load(Ordering::Relaxed)
            || w.load.get() != 0
        {
            continue;
        }
        w.dead.store(true, Ordering::SeqCst);
        let tid = w.tid.load(Ordering::Relaxed);
        w.notify();
        if tid != 0 {
            tids.push(tid);
        }
    }
    tids
}
