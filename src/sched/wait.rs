//! One wait on corun's own objects (channels, select), by whoever calls:
//! a coroutine parks (a cancellation point: `pthread_cancel` and a cancel
//! token both end the park), a native thread sleeps on its own
//! `ThreadParker` (kept per thread, so a wait allocates nothing).
//!
//! The object registers the `Waiter` it is given under its own lock and
//! re-checks its state after any return: a wake may be spurious (a thread
//! parker keeps the unpark of an earlier wait that lost a race; a
//! coroutine is interrupted by a token), and the caller then withdraws its
//! registration and tries again.

use std::sync::Arc;

use super::park::{in_coroutine, park_cancelable, Woken};
use super::waiter::{ThreadParker, Waiter};

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Woken (maybe spuriously).
    Woken,
    /// `register` returned false, or the park refused to start (a
    /// token-aware park of a cancelled coroutine).
    NotParked,
    /// The deadline passed.
    TimedOut,
}

std::thread_local! {
    static PARKER: Arc<ThreadParker> = ThreadParker::new();
}

/// Waits once: `register` receives the waiter to store and returns false
/// if there is no need to wait. `deadline` is monotonic ns.
pub fn wait_once(register: impl FnOnce(Waiter) -> bool, deadline: Option<u64>) -> Outcome {
    if in_coroutine() {
        super::waitdesc::describe_default(super::waitdesc::Cause::Channel, 0);
        return match park_cancelable(register, deadline) {
            Woken::TimedOut => Outcome::TimedOut,
            Woken::NotParked => Outcome::NotParked,
            // Woken::Event, and whatever else ends a park early: the
            // caller re-checks.
            _ => Outcome::Woken,
        };
    }
    let p = PARKER
        .try_with(|p| p.clone())
        .unwrap_or_else(|_| ThreadParker::new());
    if !register(Waiter::Thread(p.clone())) {
        return Outcome::NotParked;
    }
    if p.park(deadline) {
        Outcome::Woken
    } else {
        Outcome::TimedOut
    }
}

/// Whether `w` is a coroutine whose cancel token is cancelled (checked by
/// a registration, which runs after the park took its token: the fence
/// pairs with the canceller's, see `token.rs`).
#[inline]
pub fn token_cancelled(w: &Waiter) -> bool {
    match w {
        Waiter::Task { task, .. } => {
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            task.ident.token_cancelled()
        }
        Waiter::Thread(_) => false,
    }
}
