//! Channels (`corun_chan_t`): typed by element size, buffered or not,
//! shared by coroutines on any worker and native threads; and `select` (in `chan_select.rs`)
//! over several channel operations and fd readiness.
//!
//! # Algorithm (Go's, with one lock per channel)
//!
//! A channel is a ring buffer of `cap` elements and two queues of blocked
//! operations, under one mutex. An operation that can complete does so at
//! once: a send hands its element straight to the oldest blocked receiver
//! (or into the buffer), a receive takes from the buffer (then moves the
//! oldest blocked sender's element into the freed slot) or straight from a
//! blocked sender. Otherwise it blocks: it queues a `Node` naming its
//! element (on its own stack) and its `Sel`, and waits (`wait::wait_once`:
//! a coroutine parks, a native thread sleeps on its futex). Nodes and
//! queues: `chan_queue.rs`.
//!
//! A `Sel` is one blocked call: a `select` queues one `Node` per case,
//! all pointing at the same `Sel`. Its state word decides who completes it:
//! a counterpart, under that channel's lock, moves it WAITING -> CLAIMED
//! (case k), copies the element, then stores DONE (case k, closed or not)
//! as its last access to the `Sel`, and wakes the waiter with a copy of
//! its `Waiter` once the lock is released. The waiter itself, after any
//! wake, settles: DONE is its result; CLAIMED means a copy is under way
//! (locking that channel waits for it); WAITING means it was not chosen,
//! and it moves WAITING -> ABORTED, so no counterpart can choose it any
//! more, and unlinks its nodes from every queue (under each lock, so no
//! counterpart still reads its stack). A counterpart that finds a node
//! whose `Sel` is not WAITING drops it. This makes every queued node
//! point at live memory, and lets a timeout,
//! a cancellation or an fd event race with a hand-off safely: exactly one
//! side wins the state word.
//!
//! `select` locks all its channels at once, in address order (single
//! operations lock one), tries every case from a random start, and queues
//! on all of them only if none can proceed, before unlocking: nobody can
//! choose it while it is deciding, so it never has to claim itself. Its fd
//! cases are waited for with the same `Waiter` on the fds' netpoller lists
//! (coroutines; fds outside the table and native threads re-poll every
//! millisecond).
//!
//! Close wakes every blocked operation with "closed"; receivers still get
//! what is buffered first (a receiver blocks only when the buffer is empty).

use std::sync::Mutex;

use super::chan_queue::{Node, Queue, Sel};
use super::fdtable::lock;
use super::wait::{token_cancelled, wait_once, Outcome};
use super::waiter::Waiter;

/// Largest element, in bytes.
pub const MAX_ELEM: usize = 1 << 20;
/// Most cases in one select.
pub const MAX_CASES: usize = 1 << 16;

/// Why an operation did not complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The channel is closed (EPIPE).
    Closed,
    /// A try found nothing to do (EAGAIN).
    WouldBlock,
    /// The deadline passed (ETIMEDOUT).
    TimedOut,
    /// The coroutine's cancel token was cancelled (ECANCELED).
    Cancelled,
}

/// Whether to wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Try,
    /// Until the monotonic deadline (ns), or for ever.
    Block(Option<u64>),
}

/// One case of a select.
#[derive(Clone, Copy)]
pub enum Case<'a> {
    /// Send the element at the pointer.
    Send(&'a Chan, *const u8),
    /// Receive into the pointer (NULL: discard).
    Recv(&'a Chan, *mut u8),
    /// The fd is readable (or at EOF, in error, invalid).
    Read(i32),
    /// The fd is writable (or in error, invalid).
    Write(i32),
}

pub(super) struct State {
    buf: Vec<u8>,
    head: usize,
    len: usize,
    closed: bool,
    recvq: Queue,
    sendq: Queue,
}

/// A channel.
pub struct Chan {
    elem: usize,
    cap: usize,
    pub(super) st: Mutex<State>,
}

pub(super) enum Attempt {
    /// Done; wake this counterpart (after unlocking).
    Done(Option<Waiter>),
    Closed,
    WouldBlock,
}

impl State {
    pub(super) fn queue(&mut self, send: bool) -> &mut Queue {
        if send {
            &mut self.sendq
        } else {
            &mut self.recvq
        }
    }
}

/// Copies one element (nothing for a zero size or a NULL side).
fn copy(src: *const u8, dst: *mut u8, n: usize) {
    if n != 0 && !src.is_null() && !dst.is_null() {
        // SAFETY: both sides are elements of `n` bytes: the callers'
        // buffers (the C API's contract) or slots of the ring buffer.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, n) };
    }
}

impl Chan {
    /// A channel of `cap` elements of `elem` bytes (0: unbuffered); None
    /// when too large.
    pub fn new(elem: usize, cap: usize) -> Option<Chan> {
        if elem > MAX_ELEM {
            return None;
        }
        let bytes = elem
            .checked_mul(cap)
            .filter(|b| *b <= isize::MAX as usize)?;
        let mut buf = Vec::new();
        buf.try_reserve_exact(bytes).ok()?;
        buf.resize(bytes, 0);
        Some(Chan {
            elem,
            cap,
            st: Mutex::new(State {
                buf,
                head: 0,
                len: 0,
                closed: false,
                recvq: Queue::new(),
                sendq: Queue::new(),
            }),
        })
    }

    pub fn elem_size(&self) -> usize {
        self.elem
    }

    /// Elements buffered now.
    pub fn len(&self) -> usize {
        lock(&self.st).len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn slot(&self, st: &mut State, i: usize) -> *mut u8 {
        let at = (st.head + i) % self.cap * self.elem;
        // SAFETY: `at` + elem is within the buffer (i < cap).
        unsafe { st.buf.as_mut_ptr().add(at) }
    }

    fn try_send(&self, st: &mut State, src: *const u8) -> Attempt {
        if st.closed {
            return Attempt::Closed;
        }
        if let Some(p) = st.recvq.claim_first() {
            copy(src, p.elem, self.elem);
            return Attempt::Done(p.complete(false));
        }
        if st.len < self.cap {
            let at = self.slot(st, st.len);
            copy(src, at, self.elem);
            st.len += 1;
            return Attempt::Done(None);
        }
        Attempt::WouldBlock
    }

    fn try_recv(&self, st: &mut State, dst: *mut u8) -> Attempt {
        if st.len > 0 {
            let at = self.slot(st, 0);
            copy(at, dst, self.elem);
            st.head = (st.head + 1) % self.cap;
            st.len -= 1;
            let mut w = None;
            if let Some(p) = st.sendq.claim_first() {
                let at = self.slot(st, st.len);
                copy(p.elem, at, self.elem);
                st.len += 1;
                w = p.complete(false);
            }
            return Attempt::Done(w);
        }
        if let Some(p) = st.sendq.claim_first() {
            copy(p.elem, dst, self.elem);
            return Attempt::Done(p.complete(false));
        }
        if st.closed {
            return Attempt::Closed;
        }
        Attempt::WouldBlock
    }

    pub(super) fn attempt(&self, st: &mut State, case: &Case) -> Option<Attempt> {
        match *case {
            Case::Send(_, src) => Some(self.try_send(st, src)),
            Case::Recv(_, dst) => Some(self.try_recv(st, dst)),
            _ => None,
        }
    }

    /// Sends the element at `src`.
    pub fn send(&self, src: *const u8, mode: Mode) -> Result<(), Error> {
        self.one(Case::Send(self, src), mode)
    }

    /// Receives an element into `dst` (NULL: discards it).
    pub fn recv(&self, dst: *mut u8, mode: Mode) -> Result<(), Error> {
        self.one(Case::Recv(self, dst), mode)
    }

    /// One operation (a select of one case, without its allocations).
    fn one(&self, case: Case, mode: Mode) -> Result<(), Error> {
        let (elem, send) = match case {
            Case::Send(_, p) => (p as *mut u8, true),
            Case::Recv(_, p) => (p, false),
            _ => return Err(Error::WouldBlock),
        };
        let deadline = match mode {
            Mode::Try => {
                let r = self.attempt(&mut lock(&self.st), &case);
                return finish(r.unwrap_or(Attempt::WouldBlock));
            }
            Mode::Block(d) => d,
        };
        let sel = Sel::new();
        let mut node = Node::new(&sel, 0, elem);
        let np: *mut Node = &mut node;
        let regs = [Reg {
            chan: self,
            node: np,
            send,
            case: 0,
        }];
        loop {
            let mut res = None;
            let mut wake = None;
            let out = wait_once(
                |w| {
                    let cancelled = token_cancelled(&w);
                    let mut st = lock(&self.st);
                    match self.attempt(&mut st, &case) {
                        Some(Attempt::Done(x)) => {
                            wake = x;
                            res = Some(Ok(()));
                            false
                        }
                        Some(Attempt::Closed) => {
                            res = Some(Err(Error::Closed));
                            false
                        }
                        _ if cancelled => {
                            res = Some(Err(Error::Cancelled));
                            false
                        }
                        _ => {
                            sel.arm(w);
                            // SAFETY: `node` stays on this frame until it
                            // is unlinked: by a counterpart, or by `settle`
                            // below, before this function returns.
                            unsafe { st.queue(send).push_back(np) };
                            true
                        }
                    }
                },
                deadline,
            );
            if let Some(w) = wake {
                w.wake();
            }
            if let Some(r) = res {
                return r;
            }
            if out != Outcome::NotParked {
                if let Some((_, closed)) = settle(&sel, &regs) {
                    return if closed { Err(Error::Closed) } else { Ok(()) };
                }
            }
            if out == Outcome::TimedOut && deadline.is_some_and(|d| crate::sys::now_ns() >= d) {
                return Err(Error::TimedOut);
            }
            if super::token::cancelled() {
                return Err(Error::Cancelled);
            }
        }
    }

    /// Closes the channel: blocked and later operations get `Closed`
    /// (receivers once the buffer is empty). Closed twice: `Closed`.
    pub fn close(&self) -> Result<(), Error> {
        let mut wake = Vec::new();
        {
            let mut st = lock(&self.st);
            if st.closed {
                return Err(Error::Closed);
            }
            st.closed = true;
            while let Some(p) = st.recvq.claim_first() {
                wake.extend(p.complete(true));
            }
            while let Some(p) = st.sendq.claim_first() {
                wake.extend(p.complete(true));
            }
        }
        for w in wake {
            w.wake();
        }
        Ok(())
    }
}

/// The result of an attempt that did not wait.
fn finish(a: Attempt) -> Result<(), Error> {
    match a {
        Attempt::Done(w) => {
            if let Some(w) = w {
                w.wake();
            }
            Ok(())
        }
        Attempt::Closed => Err(Error::Closed),
        Attempt::WouldBlock => Err(Error::WouldBlock),
    }
}

pub use super::chan_select::select;
use super::chan_select::{settle, Reg};

#[cfg(test)]
#[path = "chan_tests.rs"]
mod tests;
