//! The waiters of one direction of an fd (`fdtable::Waiters`), and how a
//! wake takes them.
//!
//! Nearly always one coroutine waits (a connection's, reading or writing),
//! so the first waiter is kept inline, in the fd's entry, and only a
//! second one allocates. A connection parks once per request: with the
//! list a `Vec` taken whole by each wake, every park allocated it again
//! (malloc was 6% of threaded_http's CPU under corun); kept as a `Vec`,
//! its buffer would be one more cold cache line per park, away from the
//! entry the park reads anyway.
//!
//! A wake takes the waiters under the entry's lock (`take`) and wakes them
//! after letting it go (`Taken::wake`): a wake pushes onto run queues and
//! may write an eventfd.

use super::waiter::Waiter;

#[derive(Default)]
pub struct WaitList {
    first: Option<Waiter>,
    rest: Vec<Waiter>,
}

impl WaitList {
    pub fn push(&mut self, w: Waiter) {
        if self.first.is_none() {
            self.first = Some(w);
        } else {
            self.rest.push(w);
        }
    }

    /// Keeps the waiters for which `keep` holds.
    pub fn retain(&mut self, mut keep: impl FnMut(&Waiter) -> bool) {
        if self.first.as_ref().is_some_and(|w| !keep(w)) {
            self.first = None;
        }
        if !self.rest.is_empty() {
            self.rest.retain(|w| keep(w));
            if self.first.is_none() {
                self.first = self.rest.pop();
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_none() && self.rest.is_empty()
    }

    pub fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }

    /// Takes every waiter, to be woken once the lock is let go.
    pub fn take(&mut self) -> Taken {
        Taken {
            first: self.first.take(),
            rest: std::mem::take(&mut self.rest),
        }
    }
}

/// Waiters taken from a list (`WaitList::take`).
pub struct Taken {
    first: Option<Waiter>,
    rest: Vec<Waiter>,
}

impl Taken {
    pub fn wake(self) {
        if let Some(w) = self.first {
            w.wake();
        }
        self.rest.into_iter().for_each(Waiter::wake);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::waiter::ThreadParker;

    #[test]
    fn push_retain_take_wake() {
        let mut l = WaitList::default();
        assert!(l.is_empty());
        let ps: Vec<_> = (0..3).map(|_| ThreadParker::new()).collect();
        for p in &ps {
            l.push(Waiter::Thread(p.clone()));
        }
        assert_eq!(l.len(), 3);
        // Drop the first one: the list still holds two, inline first.
        let gone = std::sync::Arc::as_ptr(&ps[0]);
        l.retain(|w| !matches!(w, Waiter::Thread(p) if std::sync::Arc::as_ptr(p) == gone));
        assert_eq!(l.len(), 2);
        assert!(l.first.is_some());
        l.take().wake();
        assert!(l.is_empty());
        let now = crate::sys::now_ns();
        assert!(!ps[0].park(Some(now)), "the one dropped was not woken");
        assert!(
            ps[1].park(Some(now)) && ps[2].park(Some(now)),
            "the others were"
        );
    }

    #[test]
    fn one_waiter_allocates_nothing() {
        let mut l = WaitList::default();
        l.push(Waiter::Thread(ThreadParker::new()));
        assert_eq!(l.rest.capacity(), 0);
        l.take().wake();
        assert!(l.is_empty());
    }
}
