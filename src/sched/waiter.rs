//! Who waits: a parked coroutine, or a native thread.
//!
//! Everything that can be waited on (an fd, a join, a mutex) keeps a list of
//! `Waiter`s and wakes them without caring which kind they are. A coroutine
//! is woken through its park token (see `task.rs`); a native thread (one
//! corun does not run as coroutines: a helper thread, or any thread when the
//! pthread interposition is off) sleeps on a futex in its `ThreadParker`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use super::task::TaskRef;

#[derive(Clone)]
pub enum Waiter {
    Task { task: TaskRef, token: u64 },
    Thread(Arc<ThreadParker>),
}

impl Waiter {
    /// Wakes the waiter; a stale coroutine waiter (its park already ended)
    /// is ignored.
    pub fn wake(self) {
        match self {
            Waiter::Task { task, token } => {
                if task.try_unpark(token) {
                    super::spawn::schedule(task);
                }
            }
            Waiter::Thread(p) => p.unpark(),
        }
    }

    /// Whether waking it could still matter.
    pub fn is_live(&self) -> bool {
        match self {
            Waiter::Task { task, token } => task.park_is_current(*token),
            Waiter::Thread(_) => true,
        }
    }

    /// Whether this waiter is the given coroutine park.
    pub fn is_park(&self, id: u64, tok: u64) -> bool {
        matches!(self, Waiter::Task { task, token } if task.id == id && *token == tok)
    }
}

/// A futex a native thread sleeps on.
#[derive(Default)]
pub struct ThreadParker {
    state: AtomicU32,
}

impl ThreadParker {
    pub fn new() -> Arc<ThreadParker> {
        Arc::new(ThreadParker::default())
    }

    /// Wakes the thread (or makes its next `park` return at once).
    pub fn unpark(&self) {
        if self.state.swap(1, Ordering::Release) == 0 {
            crate::sys::futex::wake(&self.state, 1);
        }
    }

    /// Sleeps until unparked or until the monotonic `deadline_ns`; returns
    /// true if unparked. The token is consumed.
    pub fn park(&self, deadline_ns: Option<u64>) -> bool {
        loop {
            if self.state.swap(0, Ordering::Acquire) == 1 {
                return true;
            }
            let left = match deadline_ns {
                Some(d) => {
                    let now = crate::sys::now_ns();
                    if now >= d {
                        return false;
                    }
                    Some(d - now)
                }
                None => None,
            };
            crate::sys::futex::wait(&self.state, 0, left);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parker_token_and_timeout() {
        let p = ThreadParker::new();
        p.unpark();
        assert!(p.park(None), "a token left before park is consumed");
        let t0 = crate::sys::now_ns();
        assert!(!p.park(Some(t0 + 5_000_000)));
        assert!(crate::sys::now_ns() - t0 >= 5_000_000);
    }

    #[test]
    fn parker_cross_thread() {
        let p = ThreadParker::new();
        let q = p.clone();
        let h = std::thread::spawn(move || q.park(None));
        std::thread::sleep(std::time::Duration::from_millis(10));
        p.unpark();
        assert!(h.join().unwrap());
    }
}
