//! Where coroutine stacks come from and go back to: each worker's own idle
//! stacks, then a pool shared by all threads (docs/ARCHITECTURE.md §5.6).
//!
//! Each worker keeps up to `LOCAL_STACKS` idle stacks of a size for itself
//! (no lock); beyond that they go to the shared pool, and a worker whose
//! own pool is empty takes from there before mapping a slab. Without the
//! shared level, stacks drained one way: taken from the spawner's pool,
//! returned to the pool of the worker that ran the coroutine, so the
//! spawner kept mapping slabs and the runner kept releasing pages (2
//! madvise per cross-worker spawn+join, seen by strace).
//!
//! Stacks cross between the levels `BATCH` at a time, one lock for all: a
//! spawner on one worker whose coroutines end on another (100,000 sleepers
//! with 2 workers) took the shared lock at every spawn and the other
//! worker at every end, and the lock's line (and its futex, contended)
//! went back and forth between the CPUs.
//!
//! An idle worker returns the pages of the shared pool's idle stacks, a
//! batch at a time (`scavenge_when_idle`), once the pool has seen no
//! traffic for `SCAVENGE_AFTER_NS`: a program that spawns bursts of
//! coroutines (100,000 sleepers, then 100,000 more) reuses the pages of
//! the last burst instead of faulting them in again. Released at the
//! first idle moment, they cost each burst a page fault or two per stack
//! and a TLB shoot-down per batch (the faults were a third of the 100,000
//! sleepers benchmark with 2 workers).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::ctx::{GuardedStack, StackPool};

use super::fdtable;
use super::worker::Worker;

/// The stacks the workers share. A forked child whose parent held the
/// lock at the fork gets an empty pool in its place (`ForkMutex`); one
/// whose parent never took it leaves it untouched (a try-lock would copy
/// its page: `sys::ForkReset`).
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
static SHARED_STACKS: crate::sys::ForkMutex<StackPool> =
    crate::sys::ForkMutex::new(StackPool::new());
/// Idle stacks of a size a worker keeps for itself.
const LOCAL_STACKS: usize = crate::ctx::stack::HOT;
/// Stacks moved at once between a worker's pool and the shared one.
const BATCH: usize = LOCAL_STACKS / 2;
/// Idle stacks released per idle moment, and the pause between batches.
const SCAVENGE_BATCH: usize = 256;
const SCAVENGE_PAUSE_NS: u64 = 5_000_000;
/// Quiet time of the shared pool before its idle pages are returned.
const SCAVENGE_AFTER_NS: u64 = 500_000_000;
/// Uses of the shared pool (gets and puts; written under its lock, so
/// no clock is read on the spawn path), and, for the scavenger, the count
/// it last saw and since when (monotonic ns).
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
static USES: AtomicU64 = AtomicU64::new(0);
static SEEN_USES: AtomicU64 = AtomicU64::new(u64::MAX);
static SEEN_SINCE: AtomicU64 = AtomicU64::new(0);

/// The shared pool, locked, its use counted.
fn shared() -> std::sync::MutexGuard<'static, StackPool> {
    let g = fdtable::lock(SHARED_STACKS.get());
    USES.store(USES.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    g
}

/// A stack from the shared pool (or a new slab).
pub(super) fn shared_stack(size: usize) -> std::io::Result<GuardedStack> {
    shared().get(size)
}

/// In a forked child: the shared pool's lock may be held by a thread that
/// does not exist there.
pub(super) fn shared_stacks_after_fork() {
    SHARED_STACKS.unlock_after_fork(StackPool::new);
}

/// Before an idle worker sleeps with `timeout`: once the shared pool has
/// been quiet for `SCAVENGE_AFTER_NS`, returns a batch of its idle pages;
/// the timeout is shortened so that the worker comes back for the next
/// batch, or when the quiet time is over (a worker busy elsewhere holds
/// the lock: skip this time).
pub(super) fn scavenge_when_idle(timeout: Option<u64>) -> Option<u64> {
    if !SHARED_STACKS.ever_used() {
        return timeout; // never used: nothing to give back
    }
    let Ok(mut pool) = SHARED_STACKS.get().try_lock() else {
        return timeout;
    };
    if !pool.needs_scavenge() {
        return timeout;
    }
    // Under the lock: the counts are stable, and only one scavenger looks.
    let now = crate::sys::now_ns();
    let uses = USES.load(Ordering::Relaxed);
    if SEEN_USES.swap(uses, Ordering::Relaxed) != uses {
        SEEN_SINCE.store(now, Ordering::Relaxed);
    }
    let quiet = now.saturating_sub(SEEN_SINCE.load(Ordering::Relaxed));
    let wait = if quiet < SCAVENGE_AFTER_NS {
        SCAVENGE_AFTER_NS - quiet
    } else {
        pool.scavenge(SCAVENGE_BATCH);
        if !pool.needs_scavenge() {
            return timeout;
        }
        SCAVENGE_PAUSE_NS
    };
    Some(timeout.map_or(wait, |t| t.min(wait)))
}

impl Worker {
    /// A stack: this worker's idle ones first, then the shared pool (with
    /// up to BATCH - 1 more idle ones for the next spawns here).
    pub(super) fn get_stack(&self, size: usize) -> std::io::Result<GuardedStack> {
        let mut local = self.local.stacks.borrow_mut();
        if let Some(s) = local.take_idle(size) {
            return Ok(s);
        }
        let mut pool = shared();
        // A slab may be mapped here: the address space's lock, taken for
        // writing, waits for the other workers' page faults.
        let s = {
            let _own = super::own_lock::OwnWait::enter();
            pool.get(size)?
        };
        for _ in 1..BATCH {
            match pool.take_idle(size) {
                Some(more) => local.put(more),
                None => break,
            }
        }
        Ok(s)
    }

    /// The stack a never-run task starts on: the most recently used idle
    /// one of its size here, if any, in place of `reserved`, the one its
    /// spawn took (which goes back under the used ones: `put_cold`). A
    /// spawn reserves its stack so that it can fail as `pthread_create`
    /// does, but a burst of spawns reserves cold ones, touched first when
    /// each task starts, while the stacks of tasks that just ended here
    /// are still in the caches. 100,000 sleepers on 2 workers: each start
    /// faulted in the page of a stack of a slab mapped by the burst, or
    /// missed on a stack last used a trial earlier; on the recent ones the
    /// burst touches about as many stacks as run at once (which the run
    /// order keeps small: woken tasks go first, `run_queue.rs`).
    pub(super) fn recent_stack(&self, reserved: GuardedStack) -> GuardedStack {
        if reserved.is_program() {
            return reserved; // the thread must run on the program's memory
        }
        let mut local = self.local.stacks.borrow_mut();
        match local.take_recent(reserved.usable_size()) {
            Some(s) => {
                local.put_cold(reserved);
                s
            }
            None if reserved.was_used() => reserved,
            None => {
                drop(local);
                self.used_for_untouched(reserved)
            }
        }
    }

    /// `recent_stack` when the reservation was never run on (a burst of
    /// spawns reserved more stacks than ever ran at once) and this worker
    /// keeps no used one: one from the shared pool, with up to BATCH - 1
    /// more for the next starts here, and the untouched one under the
    /// shared pool's others. A used stack's top page is most likely
    /// resident; an untouched one's first run faulted it in (100,000
    /// sleepers, 2 workers: 6,000 to 17,000 such faults in every trial, a
    /// fifth of the thief's samples with the kernel's page clearing,
    /// because each trial's burst reserved a different part of the pool).
    #[cold]
    #[inline(never)]
    fn used_for_untouched(&self, reserved: GuardedStack) -> GuardedStack {
        let size = reserved.usable_size();
        let mut pool = shared();
        let Some(s) = pool.take_recent(size) else {
            return reserved;
        };
        let mut local = self.local.stacks.borrow_mut();
        for _ in 1..BATCH {
            match pool.take_recent(size) {
                Some(more) => local.put(more),
                None => break,
            }
        }
        pool.put_cold(reserved);
        s
    }

    /// Gives a finished coroutine's stack back: kept here up to
    /// LOCAL_STACKS of its size; past that, BATCH of them go to the
    /// shared pool.
    pub(super) fn put_stack(&self, s: GuardedStack) {
        if s.is_program() {
            return; // the program's memory (pthread_attr_setstack): left as it is
        }
        let size = s.usable_size();
        let mut local = self.local.stacks.borrow_mut();
        local.put(s);
        if local.idle(size) <= LOCAL_STACKS {
            return;
        }
        let mut pool = shared();
        for _ in 0..BATCH {
            match local.take_idle(size) {
                Some(s) => pool.put(s),
                None => break,
            }
        }
        // Reservations never run on (`recent_stack`) would stay at the
        // bottom here for good, and the pool's count with them: to the
        // shared pool, under its used ones.
        while let Some(s) = local.take_clean(size) {
            pool.put(s);
        }
    }
}
