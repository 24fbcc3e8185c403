//! The deadlines of cancel tokens (`token.rs`): one native thread,
//! started on first use with the real `pthread_create`, sleeps until the
//! earliest deadline and cancels that token.
//!
//! Why a thread and not the workers' timer heaps: a token is shared by
//! coroutines on every worker and by native threads, its callbacks must
//! run at the deadline even when nobody waits, and a worker's heap only
//! wakes that worker's own coroutines. One thread for the process costs
//! a kernel wake-up per deadline that fires (tens of microseconds here);
//! deadlines that are met cost a map insert and remove each.
//!
//! The map holds the tokens weakly, keyed by (deadline, id): a token
//! dropped before its deadline removes its own entry.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, Weak};

use super::fdtable::lock;
use super::token::Inner;

static MAP: Mutex<BTreeMap<(u64, u64), Weak<Inner>>> = Mutex::new(BTreeMap::new());
static CHANGED: Condvar = Condvar::new();
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
static STARTED: AtomicBool = AtomicBool::new(false);

/// Cancels `tok` (id `id`) at the monotonic time `at`.
pub fn add(at: u64, id: u64, tok: Weak<Inner>) {
    let first = {
        let mut m = lock(&MAP);
        m.insert((at, id), tok);
        m.keys().next() == Some(&(at, id))
    };
    if !STARTED.swap(true, Ordering::AcqRel) {
        if let Err(e) = super::confined::spawn_helper(Box::new(run)) {
            STARTED.store(false, Ordering::Release);
            crate::sys::raw_stderr(
                format!("corun: no thread for cancel deadlines ({e}); they will not fire\n")
                    .as_bytes(),
            );
        }
    } else if first {
        CHANGED.notify_one();
    }
}

/// Forgets a deadline (its token is gone).
pub fn remove(at: u64, id: u64) {
    lock(&MAP).remove(&(at, id));
}

/// In a forked child: the thread is the parent's; start one anew when a
/// deadline is next added (the deadlines already there wait for it).
pub fn after_fork_child() {
    // A look first: a store would copy the page (`sys::ForkReset`).
    crate::sys::ForkReset::reset_to(&STARTED, false);
}

/// Wakes the thread (it then looks whether the process is confined:
/// `confined.rs`).
pub fn wake() {
    CHANGED.notify_all();
}

fn run() {
    let mut m = lock(&MAP);
    loop {
        if super::confined::is() {
            // No thread of corun's outlives a confined program's own.
            return;
        }
        let now = crate::sys::now_ns();
        match m.iter().next().map(|(k, _)| *k) {
            Some(k) if k.0 <= now => {
                let tok = m.remove(&k).and_then(|w| w.upgrade());
                drop(m);
                if let Some(t) = tok {
                    t.cancel();
                }
                m = lock(&MAP);
            }
            Some(k) => {
                let d = std::time::Duration::from_nanos(k.0 - now);
                m = CHANGED
                    .wait_timeout(m, d)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            None => m = CHANGED.wait(m).unwrap_or_else(|e| e.into_inner()),
        }
    }
}
