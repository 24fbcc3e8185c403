//! `select` over channel and fd cases: one ready case is taken at random
//! (fairness); otherwise the caller is queued on every channel case and
//! enlisted on every fd case at once, and the first that fires wins
//! (`Sel`'s state word decides, docs/ARCHITECTURE.md). The channel itself
//! is `chan.rs`.

use std::sync::atomic::Ordering;
use std::sync::MutexGuard;

use super::chan::{Attempt, Case, Chan, Error, Mode, State};
use super::chan_queue::{Node, Sel, ABORTED, CASE, CLAIMED, CLOSED, DONE, KIND, WAITING};
use super::fdtable::{self, lock, Dir};
use super::park::{enlist, in_coroutine, Enlist};
use super::wait::{token_cancelled, wait_once, Outcome};
use super::waiter::Waiter;

/// Where one case of a blocked call is queued.
pub(super) struct Reg<'a> {
    pub(super) chan: &'a Chan,
    pub(super) node: *mut Node,
    pub(super) send: bool,
    pub(super) case: usize,
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
        let fd_park = has_fds.then(super::worker::FdPark::begin);
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
        drop(fd_park);
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
pub(super) fn settle(sel: &Sel, regs: &[Reg]) -> Option<(usize, bool)> {
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
pub(super) fn withdraw(regs: &[Reg]) {
    for r in regs {
        let mut st = lock(&r.chan.st);
        // SAFETY: the node is alive (the caller's), and queued, if at all,
        // in this queue.
        unsafe { st.queue(r.send).remove(r.node) };
    }
}
