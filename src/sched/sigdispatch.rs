//! The workers' side of signal delivery (normal context, never in a
//! handler): the registry of live tasks, and `dispatch`, which a worker runs
//! from its loop when a handler left work (`signals::WORK`): it gives each
//! signal the process holds to a coroutine that does not block it (main
//! first), sends back to the kernel a signal every coroutine blocks (where
//! `sigwait`, `signalfd` and `sigpending` look for it), and wakes the
//! coroutines that have a signal to take (their park is answered, or the
//! worker running them is kicked). See `signals.rs` for the model.
//!
//! The registry is only searched in rare cases (a process signal main
//! blocks, a wake-up asked for from a handler); registering costs each
//! spawn one uncontended spin lock (of 16 shards).

use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::Arc;

use super::runtime::runtime;
use super::siginfo;
use super::sigmask::{self, bit};
use super::signals::{
    kick_if_running, main_ref, open, wants_wake, DISPATCHING, PROC_PENDING, SCAN, WORK,
};
use super::spin_lock::SpinLock;
use super::task::{Task, TaskRef, DONE};

// ---------------------------------------------------------------------------
// The registry of live tasks (normal context only), for the rare searches:
// a process signal that main blocks, a wake asked for from a handler.
//
// The registry is the debugger's lists (`debugreg`): a registered task's
// record is linked in the list of its shard, and the list holds one count
// of the task (`Arc::into_raw`), given back when it is unlinked. A search
// walks the records and turns each back into its task (the record is a
// field of the task, which lives in an `Arc` and does not move). Slots of
// their own (a vector of `Arc`s and a free list per shard) doubled that:
// two more lines written at each spawn and each end, on the spawner's and
// on the ender's CPU, and a count taken and dropped (100,000 sleepers with
// 2 workers: `unregister` was 7.4% of the samples).

/// As many as the debugger's lists (`debugreg`): a task's record is in
/// the list of its shard, linked under the shard's lock.
const SHARDS: usize = super::debugreg::LISTS;

/// A shard's lock: a `SpinLock` (not a Mutex: a forked child must be able
/// to take it back from a thread that does not exist there). Each on lines
/// of its own: packed, the 16 locks were one line, which a spawner's
/// `register` and another worker's `unregister` took from each other at
/// every spawn and every end, whatever their shards (100,000 sleepers, 2
/// workers: main spawns on worker 0 while worker 1 ends the tasks).
#[repr(align(128))]
pub(super) struct Shard {
    lock: SpinLock<()>,
}

// A forked child registers its only task here: with the statics every
// child writes (`sys::ForkReset`).
#[link_section = "corun_fork"] // written after a fork: sys::ForkReset
pub(super) static REGISTRY: [Shard; SHARDS] = [const {
    Shard {
        lock: SpinLock::new(()),
    }
}; SHARDS];

impl Shard {
    pub(super) fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        let _held = self.lock.lock();
        f()
    }
}

fn shard_of(id: u64) -> usize {
    id as usize % SHARDS
}

pub(super) fn register(t: &TaskRef) {
    let list = shard_of(t.id);
    // The count the list holds, given back by `unregister`.
    let counted = Arc::into_raw(t.clone());
    debug_assert!(std::ptr::eq(counted, Arc::as_ptr(t)));
    REGISTRY[list].with(|| t.debug_link(list));
    t.ident.sig.registered.store(true, Ordering::Release);
}

pub(super) fn unregister(t: &Task) -> bool {
    // Only the task's end (`signals::task_ended`, from `finish` on its
    // home worker) unregisters it, once: a load and a store, not a swap
    // (a locked instruction of each spawn+join).
    if !t.ident.sig.registered.load(Ordering::Acquire) {
        return false;
    }
    t.ident.sig.registered.store(false, Ordering::Relaxed);
    let list = shard_of(t.id);
    REGISTRY[list].with(|| t.debug.unlink(list));
    // SAFETY: `register` gave the list this count of `t` (`Arc::into_raw`
    // of a clone, the same pointer as `t`'s); it is taken back once, by
    // the task's end, which cleared the flag. The caller holds a count of
    // its own.
    drop(unsafe { Arc::from_raw(t as *const Task) });
    true
}

/// Calls `f` with every registered task of list `list`, under its lock,
/// until it returns false.
fn walk(list: usize, mut f: impl FnMut(&TaskRef) -> bool) {
    REGISTRY[list].with(|| {
        super::debugreg::walk(list, |p| {
            // SAFETY: a linked record belongs to a registered task, alive
            // while registered (the list holds a count of it: `register`)
            // and registered while the lock is held; `task_of` gives the
            // pointer `Arc::into_raw` made.
            let t = std::mem::ManuallyDrop::new(unsafe { Arc::from_raw(Task::of_record(p)) });
            f(&t)
        })
    })
}

/// The first live task for which `f` holds.
fn find(mut f: impl FnMut(&TaskRef) -> bool) -> Option<TaskRef> {
    for list in 0..SHARDS {
        let mut hit = None;
        walk(list, |t| {
            if f(t) {
                hit = Some(t.clone());
            }
            hit.is_none()
        });
        if hit.is_some() {
            return hit;
        }
    }
    None
}

/// Every live task (for `corun dump`; normal context only).
pub(super) fn live_tasks() -> Vec<TaskRef> {
    let mut v = Vec::new();
    for list in 0..SHARDS {
        walk(list, |t| {
            v.push(t.clone());
            true
        });
    }
    v
}

/// The live task with this id.
pub fn find_id(id: u64) -> Option<TaskRef> {
    let mut hit = None;
    walk(shard_of(id), |t| {
        if t.id == id {
            hit = Some(t.clone());
        }
        hit.is_none()
    });
    hit
}

/// In a forked child: the parent's tasks are gone with their threads; the
/// lists start empty (the counts they held are leaked, as every queued
/// task of the parent's world), their locks free.
pub(super) fn forget_all_after_fork() {
    for sh in &REGISTRY {
        // SAFETY: a forked child has one thread, this one, which holds no
        // guard: a holder the lock may remember was a parent's thread.
        unsafe { sh.lock.force_unlock() };
    }
    super::debugreg::after_fork_child();
}

// ---------------------------------------------------------------------------
// The workers' side (normal context)

/// Whether the worker whose mask generation is `applied` has signal work
/// (checked again after it announced it sleeps: no wake-up is lost).
#[inline]
pub fn tick_needed(applied: &AtomicU64) -> bool {
    WORK.load(Ordering::SeqCst) || applied.load(Ordering::Relaxed) != sigmask::epoch()
}

/// Called by each worker at every pass of its loop: applies a new kernel
/// mask, dispatches pending work. Two loads when idle.
#[inline]
pub fn worker_tick(applied: &AtomicU64) {
    if tick_needed(applied) {
        tick_slow(applied);
    }
}

#[cold]
fn tick_slow(applied: &AtomicU64) {
    let before = applied.load(Ordering::Relaxed);
    sigmask::apply_here(applied);
    if applied.load(Ordering::Relaxed) != before && PROC_PENDING.load(Ordering::SeqCst) != 0 {
        // A process signal nobody takes may now go back to the kernel.
        WORK.store(true, Ordering::SeqCst);
    }
    if WORK.swap(false, Ordering::AcqRel) {
        dispatch();
    }
}

/// Asks a worker to run `dispatch` (and the wake-ups handlers asked for,
/// `sync::wake_later`). Async-signal-safe.
pub fn request_work() {
    WORK.store(true, Ordering::SeqCst);
    super::spawn::notify_all();
}

fn dispatch() {
    super::sync::run_later();
    if DISPATCHING.swap(true, Ordering::Acquire) {
        // Another worker is at it; come back at the next pass.
        WORK.store(true, Ordering::SeqCst);
        return;
    }
    route_process_set();
    if let Some(m) = main_ref() {
        if wants_wake(&m) {
            interrupt(&m);
        }
    }
    if SCAN.swap(false, Ordering::AcqRel) {
        let mut woken = Vec::new();
        for list in 0..SHARDS {
            walk(list, |t| {
                if wants_wake(t) {
                    woken.push(t.clone());
                }
                true
            });
        }
        for t in woken {
            interrupt(&t);
        }
    }
    DISPATCHING.store(false, Ordering::Release);
}

/// Gives each signal of the process set to a coroutine that does not block
/// it (main first); a signal every coroutine blocks goes back to the
/// kernel, where `sigwait`, `signalfd` and `sigpending` see it.
fn route_process_set() {
    let mut p = PROC_PENDING.load(Ordering::SeqCst);
    while p != 0 {
        let sig = p.trailing_zeros() as i32 + 1;
        p &= p - 1;
        let b = bit(sig);
        let target = main_ref()
            .filter(|m| open(m, sig) && m.state() != DONE)
            .or_else(|| find(|t| open(t, sig) && t.state() != DONE));
        match target {
            Some(t) => {
                if PROC_PENDING.fetch_and(!b, Ordering::SeqCst) & b != 0 {
                    siginfo::transfer(0, t.id, sig);
                    if t.ident.pending.fetch_or(b, Ordering::SeqCst) & b != 0 {
                        siginfo::take(t.id, sig);
                    }
                    interrupt(&t);
                }
            }
            None => back_to_kernel(sig),
        }
    }
}

/// Re-sends a process signal that every coroutine blocks, once every worker
/// blocks it too (else it would come straight back).
fn back_to_kernel(sig: i32) {
    let b = bit(sig);
    if sigmask::kernel_mask() & b == 0 {
        // The tallies say someone takes it: it is routed when that one is
        // found, or when a coroutine unblocks it.
        return;
    }
    let Some(rt) = runtime() else { return };
    let e = sigmask::epoch();
    let all = rt.workers.iter().all(|w| {
        !w.started.load(Ordering::Relaxed)
            || w.dead.load(Ordering::Relaxed)
            || w.sig_epoch.load(Ordering::Relaxed) == e
    });
    if !all || PROC_PENDING.fetch_and(!b, Ordering::SeqCst) & b == 0 {
        return;
    }
    let info = siginfo::take(0, sig).unwrap_or_else(|| siginfo::bare(sig));
    let code = siginfo::code(&info);
    // SAFETY: getpid has no preconditions; the siginfo buffer is the
    // kernel's size. The kernel accepts our own siginfo only from the
    // thread group leader, or for a negative code: else a plain kill.
    unsafe {
        let pid = libc::getpid();
        let own = crate::sys::gettid() == pid || (code < 0 && code != libc::SI_TKILL);
        if !own || libc::syscall(libc::SYS_rt_sigqueueinfo, pid, sig, info.as_ptr()) != 0 {
            libc::syscall(libc::SYS_kill, pid, sig);
        }
    }
}

/// Interrupts `t`'s park so it runs its handlers (normal context): answers
/// the park it is in, or kicks the worker it runs on.
pub(super) fn interrupt(t: &TaskRef) {
    if super::signals::deaf(&t.ident.sig) {
        return;
    }
    fence(Ordering::SeqCst);
    if t.unpark_current() {
        super::spawn::schedule(t.clone());
        return;
    }
    let d = t.ident.pending.load(Ordering::SeqCst) & !t.ident.sigmask.load(Ordering::SeqCst);
    if d != 0 {
        kick_if_running(t, d.trailing_zeros() as i32 + 1);
    }
}
