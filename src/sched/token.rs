//! Cancel tokens: a way to make every wait of a group of coroutines fail
//! with ECANCELED, at once, from anywhere (issue 15).
//!
//! # Objects
//!
//! A token (`Inner`) is cancelled once, by `cancel`, by its deadline (the
//! `deadline` thread), or by its parent: a token made with a parent is
//! cancelled with it (structured scopes link theirs to the token of the
//! coroutine that opens them). Cancelling runs the token's registered
//! callbacks once, on the cancelling thread, and wakes the coroutines that
//! run under it.
//!
//! # How a token-cancelled wait fails instead of unwinding
//!
//! `pthread_cancel` and a token share the machinery of deferred
//! cancellation (`identity`, `park::park_as`): a canceller sets a request
//! bit in the coroutine's identity and then wakes it if it is parked at a
//! cancellation point (`at_cancel_point`, `park::interrupt_cancelable`).
//! The difference is what the woken park does with the request:
//!
//! - `cancel::REQUESTED` (pthread) acts: the thread unwinds and ends;
//! - `cancel::TOKEN` (this file) never acts by itself. It is a fact the
//!   *caller* of a park consults: a hooked call or a corun object checks it
//!   just before parking (`cancel_point`), and fails with ECANCELED (hooks:
//!   -1 and errno ECANCELED) instead of waiting. A check before the park
//!   alone could miss a cancel that comes between the check and the
//!   suspension, so the check also marks the next park token-aware
//!   (`ident.token_point`): that park announces itself (`at_cancel_point`),
//!   takes its park token, fences, and returns at once if the bit is set
//!   by then; a canceller sets the bit, fences, and wakes the park token
//!   it sees. Either the park sees the bit or the canceller wakes this
//!   very park. The caller's loop comes back to its check and fails.
//!   Corun's own objects (channels) make the same fenced check inside
//!   their registration (`wait::token_cancelled`), which `park_as` runs
//!   after taking the park token.
//!
//! Only callers that check are cancelled: a wait nobody converted (a
//! spinlock's back-off sleep, a pthread mutex) gets at most one spurious
//! wake and parks again, so a sticky bit can never make a loop spin.
//!
//! The bit means "the token this coroutine runs under now is cancelled":
//! it is set, and cleared when the coroutine enters another token, under
//! the lock of the token concerned, so a late canceller of a token the
//! coroutine has left cannot set it. Tokens apply to coroutines; a native
//! thread's waits are not interrupted (it can still poll a token).
//!
//! A token holds its coroutines weakly (a `Weak<Task>` per task id), so a
//! task that ends without leaving (pthread_exit) leaks nothing but a map
//! entry, pruned as the map grows.

use std::collections::HashMap;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use super::fdtable::lock;
use super::identity::cancel;
use super::park::{current, current_ref, interrupt_cancelable, park_cancelable};
use super::task::{Task, TaskRef};

/// What a token runs when it is cancelled (once).
pub type Callback = Box<dyn FnOnce() + Send>;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One cancel token.
pub struct Inner {
    id: u64,
    cancelled: AtomicBool,
    /// Monotonic ns; 0: none.
    deadline: u64,
    parent: Option<Weak<Inner>>,
    st: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Coroutines running under the token, by task id.
    subjects: HashMap<u64, Weak<Task>>,
    /// Prune dead subjects when the map reaches this size.
    prune_at: usize,
    callbacks: Vec<(u64, Callback)>,
    children: Vec<(u64, Weak<Inner>)>,
}

impl Inner {
    /// A token, cancelled with `parent` (if any) and at the monotonic
    /// `deadline` (if any).
    pub fn new(parent: Option<&Arc<Inner>>, deadline: Option<u64>) -> Arc<Inner> {
        let t = Arc::new(Inner {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            cancelled: AtomicBool::new(false),
            deadline: deadline.map_or(0, |d| d.max(1)),
            parent: parent.map(Arc::downgrade),
            st: Mutex::new(State {
                prune_at: 64,
                ..State::default()
            }),
        });
        let mut now = false;
        if let Some(p) = parent {
            let mut g = lock(&p.st);
            if p.is_cancelled() {
                now = true;
            } else {
                if g.children.len() >= 64 && g.children.len().is_power_of_two() {
                    g.children.retain(|(_, c)| c.strong_count() > 0);
                }
                g.children.push((t.id, Arc::downgrade(&t)));
            }
        }
        if let Some(d) = deadline {
            if d <= crate::sys::now_ns() {
                now = true;
            } else if !now {
                super::deadline::add(t.deadline, t.id, Arc::downgrade(&t));
            }
        }
        if now {
            t.cancel();
        }
        t
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// The monotonic deadline, if any.
    pub fn deadline(&self) -> Option<u64> {
        (self.deadline != 0).then_some(self.deadline)
    }

    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Cancels the token: its coroutines' waits fail, its callbacks run
    /// (here, once), its children are cancelled. Returns false if it was
    /// cancelled already.
    pub fn cancel(&self) -> bool {
        let (cbs, children, tasks) = {
            let mut g = lock(&self.st);
            if self.cancelled.swap(true, Ordering::SeqCst) {
                return false;
            }
            let mut tasks = Vec::with_capacity(g.subjects.len());
            for w in g.subjects.values() {
                if let Some(t) = w.upgrade() {
                    t.ident.cancel.fetch_or(cancel::TOKEN, Ordering::SeqCst);
                    tasks.push(t);
                }
            }
            (
                std::mem::take(&mut g.callbacks),
                std::mem::take(&mut g.children),
                tasks,
            )
        };
        // Pairs with the fence after `begin_park` in `park_as`: a park
        // that did not see the bit is seen here, with its current token.
        fence(Ordering::SeqCst);
        for t in &tasks {
            interrupt_cancelable(t);
        }
        drop(tasks);
        for (_, cb) in cbs {
            cb();
        }
        for (_, c) in children {
            if let Some(c) = c.upgrade() {
                c.cancel();
            }
        }
        true
    }

    /// Registers `cb` to run when the token is cancelled; Err(cb) if it is
    /// cancelled already (the caller runs it).
    pub fn register(&self, cb: Callback) -> Result<u64, Callback> {
        let mut g = lock(&self.st);
        if self.is_cancelled() {
            return Err(cb);
        }
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        g.callbacks.push((id, cb));
        Ok(id)
    }

    /// Removes a registration that has not run; false if there is none
    /// (it ran, or runs now, or never was).
    pub fn unregister(&self, id: u64) -> bool {
        let mut g = lock(&self.st);
        match g.callbacks.iter().position(|(i, _)| *i == id) {
            Some(i) => {
                let cb = g.callbacks.swap_remove(i);
                drop(g);
                drop(cb);
                true
            }
            None => false,
        }
    }

    /// `t` (the running coroutine) now runs under this token.
    fn attach(&self, t: &TaskRef) {
        let mut g = lock(&self.st);
        if g.subjects.len() >= g.prune_at {
            g.subjects.retain(|_, w| w.strong_count() > 0);
            g.prune_at = (g.subjects.len() * 2).max(64);
        }
        g.subjects.insert(t.id, Arc::downgrade(t));
        if self.is_cancelled() {
            t.ident.cancel.fetch_or(cancel::TOKEN, Ordering::SeqCst);
        } else {
            t.ident.cancel.fetch_and(!cancel::TOKEN, Ordering::SeqCst);
        }
    }

    /// `t` no longer runs under this token.
    fn detach(&self, t: &Task) {
        lock(&self.st).subjects.remove(&t.id);
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.deadline != 0 {
            super::deadline::remove(self.deadline, self.id);
        }
        if let Some(p) = self.parent.as_ref().and_then(Weak::upgrade) {
            let mut g = lock(&p.st);
            if let Some(i) = g.children.iter().position(|(id, _)| *id == self.id) {
                g.children.swap_remove(i);
            }
        }
    }
}

/// The token the running coroutine runs under (None outside coroutines).
pub fn current_token() -> Option<Arc<Inner>> {
    let t = current()?;
    let tok = t.ident.token.take();
    t.ident.token.set(tok.clone());
    tok
}

/// `enter` outside a coroutine.
#[derive(Debug)]
pub struct NotACoroutine;

/// Makes the running coroutine run under `tok` (None: no token) and
/// returns the token it ran under.
pub fn enter(tok: Option<Arc<Inner>>) -> Result<Option<Arc<Inner>>, NotACoroutine> {
    let t = current_ref().ok_or(NotACoroutine)?;
    let old = t.ident.token.take();
    if let Some(o) = &old {
        o.detach(&t);
    }
    match &tok {
        Some(n) => {
            super::lone::note_token();
            n.attach(&t)
        }
        None => {
            t.ident.cancel.fetch_and(!cancel::TOKEN, Ordering::SeqCst);
        }
    }
    t.ident.token.set(tok);
    Ok(old)
}

/// Before a park that a token may cancel: true if the running
/// coroutine's token is cancelled (the caller fails with ECANCELED);
/// otherwise the park that follows returns at once if it gets cancelled
/// (see the module comment). False outside coroutines.
#[inline]
pub fn cancel_point() -> bool {
    match current() {
        Some(t) => {
            t.ident.token_point.set(true);
            t.ident.token_cancelled()
        }
        None => false,
    }
}

/// Whether the running coroutine's token is cancelled (no side effect).
#[inline]
pub fn cancelled() -> bool {
    current().is_some_and(|t| t.ident.token_cancelled())
}

/// Parks the running coroutine until the monotonic `deadline`; false if
/// its token was cancelled first. A pthread cancellation acts here too.
pub fn sleep_until(deadline: u64) -> bool {
    loop {
        if cancel_point() {
            return false;
        }
        if crate::sys::now_ns() >= deadline {
            return true;
        }
        super::waitdesc::describe(super::waitdesc::Cause::Timer, deadline);
        park_cancelable(|_| true, Some(deadline));
        if let Some(t) = current() {
            super::identity::cancel_point(&t.ident);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn callbacks_run_once_and_unregister() {
        let t = Inner::new(None, None);
        let n = Arc::new(AtomicUsize::new(0));
        let (a, b) = (n.clone(), n.clone());
        let r1 = t.register(Box::new(move || {
            a.fetch_add(1, Ordering::SeqCst);
        }));
        let r2 = t.register(Box::new(move || {
            b.fetch_add(10, Ordering::SeqCst);
        }));
        assert!(t.unregister(r2.ok().unwrap()));
        assert!(!t.unregister(12345));
        assert!(t.cancel());
        assert!(!t.cancel(), "cancelled once");
        assert_eq!(n.load(Ordering::SeqCst), 1);
        assert!(!t.unregister(r1.ok().unwrap()), "it ran");
        assert!(
            t.register(Box::new(|| {})).is_err(),
            "late: the caller runs it"
        );
    }

    #[test]
    fn children_follow_parents() {
        let p = Inner::new(None, None);
        let c = Inner::new(Some(&p), None);
        let g = Inner::new(Some(&c), None);
        let other = Inner::new(None, None);
        assert!(!g.is_cancelled());
        c.cancel();
        assert!(c.is_cancelled() && g.is_cancelled() && !p.is_cancelled());
        p.cancel();
        let late = Inner::new(Some(&p), None);
        assert!(
            late.is_cancelled(),
            "a child of a cancelled token starts cancelled"
        );
        assert!(!other.is_cancelled());
        drop(c);
        drop(g);
        assert!(lock(&p.st).children.is_empty());
    }

    #[test]
    fn deadline_cancels_from_another_thread() {
        let t0 = crate::sys::now_ns();
        let t = Inner::new(None, Some(t0 + 20_000_000));
        let fired = Arc::new(AtomicU64::new(0));
        let f = fired.clone();
        t.register(Box::new(move || {
            f.store(crate::sys::now_ns(), Ordering::SeqCst)
        }))
        .ok()
        .unwrap();
        let far = Inner::new(None, Some(t0 + 60_000_000_000));
        while !t.is_cancelled() {
            assert!(
                crate::sys::now_ns() - t0 < 5_000_000_000,
                "deadline never fired"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let at = fired.load(Ordering::SeqCst);
        assert!(at >= t0 + 20_000_000, "fired early");
        assert!(!far.is_cancelled());
        drop(far);
        assert!(Inner::new(None, Some(1)).is_cancelled(), "a past deadline");
    }
}
