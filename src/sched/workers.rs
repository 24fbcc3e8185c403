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

use std::sync::atomic::{AtomicPtr, Ordering};

use super::worker::Worker;

pub struct Workers {
    slots: Box<[AtomicPtr<Worker>]>,
}

impl Workers {
    pub(super) fn new(workers: Vec<&'static Worker>) -> Workers {
        Workers {
            slots: workers
                .into_iter()
                .map(|w| AtomicPtr::new(w as *const Worker as *mut Worker))
                .collect(),
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

    /// Puts `w` in slot `w.index` (a forked child's renewed worker).
    pub(super) fn renew(&self, w: &'static Worker) {
        self.slots[w.index].store(w as *const Worker as *mut Worker, Ordering::Release);
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
