//! The runtime's workers, by index: a fixed-length table of pointers to
//! leaked `Worker`s that a forked child may renew.
//!
//! `fork` keeps only the calling thread: in the child every other worker
//! is marked dead (`fork.rs`). Natively, a child that goes on to make
//! threads (a daemon that forks before it starts its thread pool, every
//! Apache worker-MPM or event-MPM child) runs them on all CPUs; with only
//! the forking worker left, all of them shared one. So at the child's
//! first spawn, each dead worker's slot gets a fresh `Worker` (not started:
//! it gets a thread, an epoll and an eventfd when placement first picks
//! it). The old one is leaked, never freed: a helper thread (the preemption
//! monitor, the watchdog) may still be reading it, and a leaked worker is
//! never written to again.
//!
//! Readers take a slot with one atomic load: a `&'static Worker`, valid
//! for ever, the current one or the one it replaced.

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use super::worker::Worker;

pub struct Workers {
    slots: Box<[AtomicPtr<Worker>]>,
    /// Set in a forked child while its other workers are dead
    /// (`mark_dead_renewable`); its first spawn renews them
    /// (`renew_dead_if_pending`).
    renew_pending: AtomicBool,
}

impl Workers {
    pub(super) fn new(workers: Vec<&'static Worker>) -> Workers {
        Workers {
            slots: workers
                .into_iter()
                .map(|w| AtomicPtr::new(w as *const Worker as *mut Worker))
                .collect(),
            renew_pending: AtomicBool::new(false),
        }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Worker `i`; panics if there is none (as a slice index does).
    #[inline]
    pub fn at(&self, i: usize) -> &'static Worker {
        // SAFETY: every slot holds a leaked `Worker` (`new`, `renew`), never
        // freed.
        unsafe { &*self.slots[i].load(Ordering::Acquire) }
    }

    #[inline]
    pub fn get(&self, i: usize) -> Option<&'static Worker> {
        (i < self.slots.len()).then(|| self.at(i))
    }

    /// Every worker in index order (no allocation: async-signal-safe).
    pub fn iter(&self) -> Iter<'_> {
        Iter { of: self, next: 0 }
    }

    /// In a forked child (`fork.rs`): every worker but `me` is marked dead
    /// (never started, never placed on), to be renewed at the child's
    /// first spawn.
    pub(super) fn mark_dead_renewable(&self, me: usize) {
        use crate::sys::ForkReset;
        for w in self.iter() {
            if w.index != me {
                w.dead.reset_to(true);
                w.started.reset_to(true);
            }
        }
        self.renew_pending.reset_to(self.len() > 1);
    }

    /// At a spawn (`spawn.rs`): in a forked child whose other workers are
    /// dead, each gets a fresh `Worker` in its slot, not started, so
    /// placement spreads the child's threads over every CPU as natively.
    /// Before, they all ran on the forking worker: an Apache worker-MPM
    /// child's threads shared one CPU, a daemon that forks before it makes
    /// its threads had one CPU for all of them. A child that never spawns
    /// (one that execs, a PostgreSQL backend) allocates nothing.
    #[inline]
    pub(super) fn renew_dead_if_pending(&self) {
        if self.renew_pending.load(Ordering::Relaxed) {
            self.renew_dead();
        }
    }

    #[cold]
    fn renew_dead(&self) {
        if !self.renew_pending.swap(false, Ordering::AcqRel) {
            return;
        }
        for w in self.iter() {
            if w.dead.load(Ordering::Relaxed) {
                if let Ok(fresh) = Worker::new(w.index) {
                    self.slots[w.index]
                        .store(fresh as *const Worker as *mut Worker, Ordering::Release);
                }
            }
        }
    }
}

#[derive(Clone)]
pub struct Iter<'a> {
    of: &'a Workers,
    next: usize,
}

impl Iterator for Iter<'_> {
    type Item = &'static Worker;
    #[inline]
    fn next(&mut self) -> Option<&'static Worker> {
        let w = self.of.get(self.next)?;
        self.next += 1;
        Some(w)
    }
}

impl<'a> IntoIterator for &'a Workers {
    type Item = &'static Worker;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}
