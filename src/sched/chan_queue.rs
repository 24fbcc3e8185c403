//! The blocked side of a channel (`chan.rs`): a `Sel` per blocked call,
//! a `Node` per (call, channel operation), and the queues that link them.
//!
//! A queue is an intrusive doubly linked list of `Node`s that live on the
//! blocked caller's side (its stack, or the array of a select), as Go's
//! sudogs: queueing allocates nothing, and a caller that gives up (a
//! timeout, a cancellation, another case chosen) unlinks its nodes in
//! constant time. With thousands of receivers blocked on one channel and
//! all of them cancelled at once, taking each out of a vector would cost
//! time quadratic in their number.
//!
//! Every field of a queued node, and the queue's links, are touched only
//! under the lock of the channel that owns the queue. A node is unlinked
//! (by `pop_front` or `remove`) before its owner may return: see the
//! settling rules in `chan.rs`.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, Ordering};

use super::waiter::Waiter;

pub const WAITING: u32 = 0;
pub const ABORTED: u32 = 1;
pub const KIND: u32 = 3 << 30;
pub const CLAIMED: u32 = 1 << 30;
pub const DONE: u32 = 2 << 30;
pub const CLOSED: u32 = 1 << 29;
pub const CASE: u32 = CLOSED - 1;

/// One blocked call (a single operation, or a whole select).
pub struct Sel {
    pub state: AtomicU32,
    waiter: UnsafeCell<Option<Waiter>>,
}

impl Default for Sel {
    fn default() -> Sel {
        Sel::new()
    }
}

impl Sel {
    pub fn new() -> Sel {
        Sel {
            state: AtomicU32::new(ABORTED),
            waiter: UnsafeCell::new(None),
        }
    }

    /// Ready to be queued (none of its nodes is queued now).
    pub fn arm(&self, w: Waiter) {
        // SAFETY: nobody else reads `waiter` while no node is queued.
        unsafe { *self.waiter.get() = Some(w) };
        self.state.store(WAITING, Ordering::Release);
    }
}

/// One blocked operation.
pub struct Node {
    pub sel: *const Sel,
    pub case: u32,
    pub elem: *mut u8,
    prev: *mut Node,
    next: *mut Node,
    queued: bool,
}

impl Node {
    pub fn new(sel: &Sel, case: u32, elem: *mut u8) -> Node {
        Node {
            sel,
            case,
            elem,
            prev: std::ptr::null_mut(),
            next: std::ptr::null_mut(),
            queued: false,
        }
    }
}

/// What a counterpart took out of a queue and claimed.
pub struct Claimed {
    sel: *const Sel,
    pub case: u32,
    pub elem: *mut u8,
}

/// A FIFO of nodes.
pub struct Queue {
    head: *mut Node,
    tail: *mut Node,
}

// SAFETY: the nodes a queue links are only touched under the lock of the
// channel that owns the queue, whichever thread holds it.
unsafe impl Send for Queue {}

impl Default for Queue {
    fn default() -> Queue {
        Queue::new()
    }
}

impl Queue {
    pub const fn new() -> Queue {
        Queue {
            head: std::ptr::null_mut(),
            tail: std::ptr::null_mut(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.head.is_null()
    }

    /// Links `n` at the tail.
    ///
    /// # Safety
    /// `n` is not queued, and stays alive at its address until it is
    /// unlinked (`pop_front`, `remove`) under the lock guarding `self`.
    pub unsafe fn push_back(&mut self, n: *mut Node) {
        // SAFETY: the caller's contract; the tail is a live queued node.
        unsafe {
            (*n).prev = self.tail;
            (*n).next = std::ptr::null_mut();
            (*n).queued = true;
            match self.tail.as_mut() {
                Some(t) => t.next = n,
                None => self.head = n,
            }
        }
        self.tail = n;
    }

    /// Unlinks the head node.
    fn pop_front(&mut self) -> Option<*mut Node> {
        let n = self.head;
        if n.is_null() {
            return None;
        }
        // SAFETY: a queued node is alive (push_back's contract).
        unsafe { self.unlink(n) };
        Some(n)
    }

    /// Unlinks `n` if it is queued here.
    ///
    /// # Safety
    /// `n` is alive, and queued in this queue if queued at all.
    pub unsafe fn remove(&mut self, n: *mut Node) {
        // SAFETY: the caller's contract.
        if unsafe { (*n).queued } {
            // SAFETY: as above.
            unsafe { self.unlink(n) };
        }
    }

    /// # Safety
    /// `n` is queued in this queue.
    unsafe fn unlink(&mut self, n: *mut Node) {
        // SAFETY: `n` and its neighbours are live queued nodes.
        unsafe {
            let (p, x) = ((*n).prev, (*n).next);
            match p.as_mut() {
                Some(p) => p.next = x,
                None => self.head = x,
            }
            match x.as_mut() {
                Some(x) => x.prev = p,
                None => self.tail = p,
            }
            (*n).queued = false;
            (*n).prev = std::ptr::null_mut();
            (*n).next = std::ptr::null_mut();
        }
    }

    /// Unlinks nodes from the head until one whose call is still waiting,
    /// and claims that call for its operation (WAITING -> CLAIMED).
    /// Nodes of calls already decided elsewhere are dropped.
    pub fn claim_first(&mut self) -> Option<Claimed> {
        while let Some(n) = self.pop_front() {
            // SAFETY: the node was queued until now, under our lock: its
            // owner has not returned (it unlinks under this lock first).
            let (sel, case, elem) = unsafe { ((*n).sel, (*n).case, (*n).elem) };
            // SAFETY: as above; a queued node's Sel is alive.
            let st = unsafe { &(*sel).state };
            if st
                .compare_exchange(WAITING, CLAIMED | case, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Some(Claimed { sel, case, elem });
            }
        }
        None
    }
}

impl Claimed {
    /// Completes the claimed call: the last access to its `Sel` (its
    /// owner may return as soon as it sees DONE). Returns its waiter, to
    /// wake once the channel's lock is released.
    pub fn complete(self, closed: bool) -> Option<Waiter> {
        // SAFETY: claimed by us; its owner waits for DONE before returning.
        let sel = unsafe { &*self.sel };
        // SAFETY: written by the owner before it queued its nodes; only the
        // counterpart that claimed the call takes it (the owner re-arms).
        let w = unsafe { (*sel.waiter.get()).take() };
        let c = if closed { CLOSED } else { 0 };
        sel.state.store(DONE | c | self.case, Ordering::Release);
        w
    }
}
