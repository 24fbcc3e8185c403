//! A blocking read on a TCP socket that the previous read left empty parks
//! at once, without the non-blocking attempt that would fail.
//!
//! A keep-alive server's connection thread reads a request, writes the
//! reply, and reads again: the next request cannot be there yet (the
//! client has not even read the reply), so that read's attempt is an
//! EAGAIN, one system call of the three each request costs (epoll_http and
//! Go's net.Conn make it too). corun can know it will fail without asking:
//!
//! - A TCP read that returns less than asked emptied the receive queue
//!   (`tcp_recvmsg` copies until the length or the queue runs out; data
//!   still in the backlog is queued as the call releases the socket, and
//!   that raises a readiness edge). Exceptions, as `tcp_recvmsg_locked`
//!   reads (Linux 6.x): urgent data (the read stops at its mark, data
//!   left), and the end of the stream or an error that came with or
//!   before the last data (the read returns the data; the next one
//!   returns 0 or the error at once, with no edge to come). The netpoller
//!   sees both as EPOLLPRI, EPOLLRDHUP, EPOLLHUP or EPOLLERR, and after
//!   that this socket's reads are never skipped (`undrainable_gen`); an
//!   edge not yet collected is still pending, which is all a skip needs.
//! - Every registration is edge-triggered: data that arrives after that
//!   read raises an edge, which is either in the epoll's ready list or was
//!   collected by a netpoller, which moved the fd's read sequence.
//!
//! So when the fd's generation and read sequence are still those seen
//! just before a short read (`FdEntry::drained`), the socket has nothing,
//! or has data whose edge the next poll will collect: parking is exactly
//! what the failed attempt would have led to, and the park's registration
//! check (`park::enlist`) retries at once if the sequence moved meanwhile.
//! An fd not yet in this worker's epoll is registered by the park, and
//! EPOLL_CTL_ADD reports data already there.
//!
//! The cost: a read made right after `poll` (or a MSG_PEEK) saw new data
//! whose edge no netpoller has collected yet parks until one does (on a
//! busy worker, within `POLL_EVERY` tasks) instead of reading at once.
//!
//! Only the first attempt of a call is skipped (after a wake, a change or
//! a timeout the call reads), only for a socket the program keeps
//! blocking (its own O_NONBLOCK wants the attempt's answer), and only on
//! TCP sockets corun saw made (`FdPolicy::tcp`): a short read on a Unix
//! stream socket may leave data (a message from another sender with
//! SO_PASSCRED, passed fds), and a datagram socket returns one datagram.

use std::sync::atomic::Ordering;

use crate::sched::fdtable::{self, Dir, FdEntry};

/// Whether this call's first read attempt on `fd` can be skipped (it would
/// return EAGAIN, or data whose edge is pending: see the file's comment).
#[inline]
pub(crate) fn can_skip(fd: i32, e: &FdEntry) -> bool {
    let mark = e.drained.load(Ordering::Acquire);
    if mark == 0 || mark != stamp(e) {
        return false;
    }
    e.policy.kind.load(Ordering::Relaxed) == fdtable::KIND_SOCKET
        && e.policy.tcp.load(Ordering::Relaxed)
        && !super::user_nonblocking(fd, e)
}

/// Before an attempt to read `want` bytes: what `note` needs.
#[inline]
pub(crate) fn before(e: &FdEntry) -> u64 {
    stamp(e)
}

/// After the attempt that `before` returned `seen` for: a short read on a
/// TCP socket marks it drained as of `seen`; any other outcome clears it.
#[inline]
pub(crate) fn note(e: &FdEntry, seen: u64, r: isize, want: usize) {
    let short = r > 0 && (r as usize) < want;
    let gen = (seen.wrapping_sub(1) >> 32) as u32;
    let mark = if short
        && e.policy.tcp.load(Ordering::Relaxed)
        && e.undrainable_gen.load(Ordering::Acquire) != gen.wrapping_add(1)
    {
        seen
    } else {
        0
    };
    if e.drained.load(Ordering::Relaxed) != mark {
        e.drained.store(mark, Ordering::Release);
    }
}

/// The fd's generation and read sequence now, as `FdEntry::drained` holds
/// them (never 0).
#[inline]
fn stamp(e: &FdEntry) -> u64 {
    let s = e.snapshot(Dir::Read);
    ((u64::from(s.gen) << 32) | u64::from(s.seq)).wrapping_add(1)
}
