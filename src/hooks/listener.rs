//! `accept` on a listening socket another process may share.
//!
//! `socket.rs` waits for a blocking listener to be readable, confirms with
//! a zero-timeout poll and makes the real (blocking) `accept`; within the
//! process one coroutine at a time does that pair, so it never blocks for
//! want of a connection another coroutine took. Another *process* holding
//! the same listener may take it between the poll and the accept, and the
//! worker's thread then blocks in the kernel until the next connection,
//! every coroutine of that worker with it.
//!
//! That is no rare race: a preforking server (Apache's worker MPM: 4
//! children, each with a listener thread polling the one listener they
//! inherited) wakes every child for every connection, each sees it
//! pending, and all but one block in `accept`. Natively only their
//! listener threads wait there; under corun each loser's only worker
//! stopped, with the connections it had already accepted, until a new
//! connection came: under wrk's 200 kept-alive connections, made at the
//! start, a child stayed stopped for the whole run (seen: 25 connections
//! never served, the worker in `inet_csk_accept`).
//!
//! So the accept on a listener that may be shared goes to the blocking pool
//! (`sched::blocking`), where a lost race blocks a helper thread, as
//! natively it blocks the listener thread, and the worker goes on; it
//! costs a hand-off per connection, not per request. A process with a
//! single coroutine makes it inline (`run_blocking` does), as natively.
//!
//! A listener counts as the process's own, and is accepted from inline,
//! when this process made it with `socket` and has made no child process
//! since (`fork`, `clone`, `posix_spawn`, `system`, `popen`: a child shares
//! every fd it inherits): a generation counter bumped at each, recorded on
//! the socket. Anything else (inherited, received, dup'ed) may be shared.
//! A listener of our own passed to another process with SCM_RIGHTS is not
//! noticed: the race stays possible there.
//!
//! Setting O_NONBLOCK on the listener for the accept would be cheaper but
//! is no answer: the flag lives on the open file description the other
//! processes use too, and two of them setting and clearing it around their
//! accepts race again.

use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};

use libc::{sockaddr, socklen_t};

use super::Deadline;
use crate::sched::blocking::{run_blocking_interruptible, SendPtr};
use crate::sched::fdtable::{Dir, FdEntry};
use crate::sched::signals::Interruptible;
use crate::sys::{errno, real, set_errno};

/// Child processes made so far, plus one (0 on a socket: not made here).
static CHILDREN: AtomicU64 = AtomicU64::new(1);

/// The process is about to make a child process (which shares its fds).
#[inline]
pub(crate) fn child_made() {
    CHILDREN.fetch_add(1, Ordering::Relaxed);
}

/// This process made socket `e` with `socket` just now.
pub(crate) fn note_own(e: &FdEntry) {
    e.policy
        .own_gen
        .store(CHILDREN.load(Ordering::Relaxed), Ordering::Relaxed);
}

/// Whether another process may hold the socket's open file description.
pub(crate) fn may_be_shared(e: &FdEntry) -> bool {
    e.policy.own_gen.load(Ordering::Relaxed) != CHILDREN.load(Ordering::Relaxed)
}

/// The real `accept4`, made on the blocking pool (inline when the caller is
/// the process's only coroutine); errno as the call left it.
///
/// A signal for the caller cuts the pooled accept short, as natively it
/// interrupts the blocked accept (`sched/pool_kick.rs`); its handlers have
/// run when the pool returns. Then, as signal(7) says for `accept`: EINTR,
/// unless every handler that ran had SA_RESTART and the socket has no
/// SO_RCVTIMEO; a restart is an EAGAIN here, on which the caller's loop
/// waits for the listener again (`nonblocking_loop`). A kick after which
/// no handler ran (a signal ignored by default) restarts too.
pub(crate) fn accept_on_pool(
    fd: c_int,
    e: &FdEntry,
    addr: *mut sockaddr,
    len: *mut socklen_t,
    flags: c_int,
) -> isize {
    let intr = Interruptible::begin();
    let (a, l) = (SendPtr(addr), SendPtr(len));
    let r = run_blocking_interruptible(move || {
        // SAFETY: the caller's accept4 contract; `addr` and `len` outlive
        // the parked call (the pool returns once the job is done).
        unsafe { real::accept4(fd, a.get(), l.get(), flags) as isize }
    });
    if r >= 0 || errno() != libc::EINTR {
        return r;
    }
    match intr.check() {
        Some(true) if !Deadline::default().ends_in_eintr(fd, e, Dir::Read) => {
            set_errno(libc::EAGAIN)
        }
        Some(_) => set_errno(libc::EINTR),
        None => set_errno(libc::EAGAIN),
    }
    -1
}
