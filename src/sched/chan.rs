//! Channels (`corun_chan_t`): typed by element size, buffered or not,
//! shared by coroutines on any worker and native threads; and `select`
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

use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};

use super::chan_queue::{Node, Queue, Sel, ABORTED, CASE, CLAIMED, CLOSED, DONE, KIND, WAITING};
use super::fdtable::{self, lock, Dir};
use super::park::{enlist, in_coroutine, Enlist};
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

struct State {
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
    st: Mutex<State>,
}

enum Attempt {
    /// Done; wake this counterpart (after unlocking).
    Done(Option<Waiter>),
    Closed,
    WouldBlock,
}

impl State {
    fn queue(&mut self, send: bool) -> &mut Queue {
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

    fn attempt(&self, st: &mut State, case: &Case) -> Option<Attempt> {
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

/// Where one case of a blocked call is queued.
struct Reg<'a> {
    chan: &'a Chan,
    node: *mut Node,
    send: bool,
    case: usize,
}

std::thread_local! {
    static RNG: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A cheap per-thread random number (select's fairness).
fn random() -> u64 {
    RNG.with(|r| {
        let mut x = r.get();
        if x == 0 {
            x = crate::sys::now_ns() | 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        r.set(x);
        x
    })
}

fn case_chan<'a>(c: &Case<'a>) -> Option<&'a Chan> {
    match *c {
        Case::Send(ch, _) | Case::Recv(ch, _) => Some(ch),
        _ => None,
    }
}

/// The first ready fd case from `start` on: (index, invalid fd).
fn poll_fds(cases: &[Case], start: usize) -> Option<(usize, bool)> {
    let mut pfds = Vec::new();
    let mut idx = Vec::new();
    let n = cases.len();
    for k in 0..n {
        let i = (start + k) % n;
        let (fd, ev) = match cases[i] {
            Case::Read(fd) => (fd, libc::POLLIN),
            Case::Write(fd) => (fd, libc::POLLOUT),
            _ => continue,
        };
        pfds.push(libc::pollfd {
            fd,
            events: ev,
            revents: 0,
        });
        idx.push(i);
    }
    if pfds.is_empty() {
        return None;
    }
    // SAFETY: a valid array of pollfds; the real poll, zero timeout.
    let r = unsafe { crate::sys::real::poll(pfds.as_mut_ptr(), pfds.len() as _, 0) };
    if r <= 0 {
        return None;
    }
    let k = pfds.iter().position(|p| p.revents != 0)?;
    Some((idx[k], pfds[k].revents & libc::POLLNVAL != 0))
}

/// Waits until one of `cases` can proceed and performs it: (its index,
/// whether it found its channel closed or its fd invalid). No case with
/// `Mode::Try`: `WouldBlock`; none until the deadline: `TimedOut`.
pub fn select(cases: &[Case], mode: Mode) -> Result<(usize, bool), Error> {
    let n = cases.len();
    let start = if n > 1 {
        (random() % n as u64) as usize
    } else {
        0
    };
    let mut chans: Vec<&Chan> = cases.iter().filter_map(case_chan).collect();
    chans.sort_by_key(|c| *c as *const Chan as usize);
    chans.dedup_by_key(|c| *c as *const Chan as usize);
    let has_fds = chans.len() < n;
    let deadline = match mode {
        Mode::Try => None,
        Mode::Block(d) => d,
    };
    let sel = Sel::new();
    // One node per channel case, at stable addresses for the whole call.
    let mut nodes: Vec<Node> = Vec::with_capacity(n);
    let mut regs: Vec<Reg> = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let (ch, p, send) = match *c {
            Case::Send(ch, p) => (ch, p as *mut u8, true),
            Case::Recv(ch, p) => (ch, p, false),
            _ => continue,
        };
        nodes.push(Node::new(&sel, i as u32, p));
        regs.push(Reg {
            chan: ch,
            node: std::ptr::null_mut(),
            send,
            case: i,
        });
    }
    for (r, nd) in regs.iter_mut().zip(nodes.iter_mut()) {
        r.node = nd;
    }
    loop {
        // fd cases: snapshot, then look (an edge in between is not lost).
        let coro = in_coroutine();
        let mut snaps = Vec::new();
        let mut polling = false;
        if has_fds {
            for c in cases {
                let (fd, dir) = match *c {
                    Case::Read(fd) => (fd, Dir::Read),
                    Case::Write(fd) => (fd, Dir::Write),
                    _ => continue,
                };
                match fdtable::get(fd).filter(|_| coro) {
                    Some(e) => snaps.push((fd, e, dir, e.snapshot(dir))),
                    None => polling = true,
                }
            }
            if let Some((i, bad)) = poll_fds(cases, start) {
                return Ok((i, bad));
            }
        }
        let until = if polling {
            let soon = crate::sys::now_ns() + 1_000_000;
            Some(deadline.map_or(soon, |d| d.min(soon)))
        } else {
            deadline
        };
        if mode == Mode::Try {
            let mut guards: Vec<MutexGuard<State>> = chans.iter().map(|c| lock(&c.st)).collect();
            let r = try_cases(cases, &chans, &mut guards, start);
            drop(guards);
            return match r {
                Some((r, w)) => {
                    if let Some(w) = w {
                        w.wake();
                    }
                    Ok(r)
                }
                None => Err(Error::WouldBlock),
            };
        }
        let mut res = None;
        let mut wake = None;
        let out = wait_once(
            |w| {
                let cancelled = token_cancelled(&w);
                let mut guards: Vec<MutexGuard<State>> =
                    chans.iter().map(|c| lock(&c.st)).collect();
                if let Some((r, x)) = try_cases(cases, &chans, &mut guards, start) {
                    wake = x;
                    res = Some(Ok(r));
                    return false;
                }
                if cancelled {
                    res = Some(Err(Error::Cancelled));
                    return false;
                }
                sel.arm(w.clone());
                for r in &regs {
                    let g = chans
                        .iter()
                        .position(|c| std::ptr::eq(*c, r.chan))
                        .unwrap_or(0);
                    // SAFETY: `nodes` is neither moved nor resized until
                    // this call returns, after `settle` unlinked them all.
                    unsafe { guards[g].queue(r.send).push_back(r.node) };
                }
                drop(guards);
                for &(fd, e, dir, seen) in &snaps {
                    match enlist(fd, e, dir, seen, w.clone()) {
                        Enlist::Waiting | Enlist::NotPollable(_) => {}
                        Enlist::Changed | Enlist::Closed => {
                            // Ready already: withdraw unless a channel
                            // chose us meanwhile (then its wake comes).
                            return settle(&sel, &regs).is_some();
                        }
                    }
                }
                true
            },
            until,
        );
        if let Some(w) = wake {
            w.wake();
        }
        if let Some(r) = res {
            return r;
        }
        if out != Outcome::NotParked {
            if let Some((i, closed)) = settle(&sel, &regs) {
                return Ok((i, closed));
            }
        }
        let now_past = deadline.is_some_and(|d| crate::sys::now_ns() >= d);
        if out == Outcome::TimedOut && now_past {
            if has_fds {
                if let Some((i, bad)) = poll_fds(cases, start) {
                    return Ok((i, bad));
                }
            }
            return Err(Error::TimedOut);
        }
        if super::token::cancelled() {
            return Err(Error::Cancelled);
        }
    }
}

/// Tries every channel case from `start` on, with all of `chans` locked
/// (`guards`, in the same order): the first that completes (its index,
/// whether it found its channel closed) and the counterpart to wake.
fn try_cases(
    cases: &[Case],
    chans: &[&Chan],
    guards: &mut [MutexGuard<State>],
    start: usize,
) -> Option<((usize, bool), Option<Waiter>)> {
    let n = cases.len();
    for k in 0..n {
        let i = (start + k) % n;
        let Some(ch) = case_chan(&cases[i]) else {
            continue;
        };
        let g = chans.iter().position(|c| std::ptr::eq(*c, ch)).unwrap_or(0);
        match ch.attempt(&mut guards[g], &cases[i]) {
            Some(Attempt::Done(x)) => return Some(((i, false), x)),
            Some(Attempt::Closed) => return Some(((i, true), None)),
            _ => {}
        }
    }
    None
}

/// After a wait: the case that completed this call, or None after
/// withdrawing it from every channel (see the module comment).
fn settle(sel: &Sel, regs: &[Reg]) -> Option<(usize, bool)> {
    let mut s = sel.state.load(Ordering::Acquire);
    if s == ABORTED {
        return None;
    }
    if s == WAITING {
        match sel
            .state
            .compare_exchange(WAITING, ABORTED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => {
                withdraw(regs);
                return None;
            }
            Err(v) => s = v,
        }
    }
    if s & KIND == CLAIMED {
        // A counterpart copies under its channel's lock: wait for it.
        let case = (s & CASE) as usize;
        if let Some(r) = regs.iter().find(|r| r.case == case) {
            drop(lock(&r.chan.st));
        }
        s = sel.state.load(Ordering::Acquire);
    }
    debug_assert_eq!(s & KIND, DONE);
    if regs.len() > 1 {
        withdraw(regs);
    }
    Some(((s & CASE) as usize, s & CLOSED != 0))
}

/// Unlinks every node of a call from its channel's queue.
fn withdraw(regs: &[Reg]) {
    for r in regs {
        let mut st = lock(&r.chan.st);
        // SAFETY: the node is alive (the caller's), and queued, if at all,
        // in this queue.
        unsafe { st.queue(r.send).remove(r.node) };
    }
}

#[cfg(test)]
#[path = "chan_tests.rs"]
mod tests;
