//! `recv`, `send`, `accept`, `accept4`, `connect`, `socket`.
//!
//! `recv`/`send` add MSG_DONTWAIT to the attempt (unless the program passed
//! it: then it wants EAGAIN). `send` on a stream loops like `write`.
//!
//! `accept` has no per-call non-blocking flag. It waits for the listening
//! socket to be readable, confirms with a zero-timeout poll, then makes the
//! real call. Within the process, one coroutine at a time does that pair
//! for a given listener (a try-lock in the fd entry; the others wait for
//! readability and are woken when the holder is done), so two workers never
//! race for one connection. Another *process* accepting the same connection
//! between the poll and the accept would make the call block until the
//! next connection: the one place corun may block a worker on a socket,
//! noted in the README.
//!
//! `connect` sets O_NONBLOCK on the socket for the duration of the call
//! only, and restores the flags before anything else runs; the socket was
//! normally just created by this process. On EINPROGRESS it parks until
//! writable (or SO_SNDTIMEO) and reads SO_ERROR, which is what a blocking
//! connect returns.

use std::ffi::c_int;
use std::sync::atomic::Ordering;

use libc::{c_void, size_t, sockaddr, socklen_t, ssize_t};

use super::{deadline_in, eagain, nonblocking_loop, ready_now, user_nonblocking, Io};
use crate::sched::fdtable::{self, Dir};
use crate::sched::{in_coroutine, park_until_ready, FdWait};
use crate::sys::{errno, now_ns, real, set_errno};

/// recv/recvfrom with MSG_DONTWAIT attempts (MSG_WAITALL accumulates).
pub(crate) fn recv_parking(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    flags: c_int,
    addr: *mut sockaddr,
    alen: *mut socklen_t,
) -> Option<isize> {
    let e = fdtable::get(fd)?;
    let deadline = deadline_in(e.rcv_timeo.load(Ordering::Relaxed));
    let waitall = flags & libc::MSG_WAITALL != 0 && flags & libc::MSG_PEEK == 0;
    let mut got = 0usize;
    loop {
        let io = nonblocking_loop(fd, e, Dir::Read, deadline, || {
            // SAFETY: the caller's recvfrom contract, from offset `got`.
            unsafe {
                real::recvfrom(
                    fd,
                    (buf as *mut u8).add(got) as *mut c_void,
                    n - got,
                    (flags & !libc::MSG_WAITALL) | libc::MSG_DONTWAIT,
                    addr,
                    alen,
                )
            }
        });
        let r = match io {
            Io::Done(r) => r,
            Io::Blocking => return None,
        };
        if !waitall {
            return Some(r);
        }
        if r < 0 {
            return Some(if got > 0 { got as isize } else { -1 });
        }
        got += r as usize;
        if r == 0 || got >= n || user_nonblocking(fd, e) {
            return Some(got as isize);
        }
    }
}

/// send/sendto with MSG_DONTWAIT attempts, looping over partial sends.
pub(crate) fn send_parking(
    fd: c_int,
    buf: *const c_void,
    n: size_t,
    flags: c_int,
    addr: *const sockaddr,
    alen: socklen_t,
) -> Option<isize> {
    let e = fdtable::get(fd)?;
    let deadline = deadline_in(e.snd_timeo.load(Ordering::Relaxed));
    let mut sent = 0usize;
    loop {
        // After a partial send, a failure returns the count, without SIGPIPE,
        // and a connection that failed meanwhile keeps its error pending.
        let nosig = if sent > 0 { libc::MSG_NOSIGNAL } else { 0 };
        let mut failed = false;
        let io = nonblocking_loop(fd, e, Dir::Write, deadline, || {
            if sent > 0 && super::rw::stream_socket_failed(fd, e) {
                failed = true;
                return 0;
            }
            // SAFETY: the caller's sendto contract, from offset `sent`.
            unsafe {
                real::sendto(
                    fd,
                    (buf as *const u8).add(sent) as *const c_void,
                    n - sent,
                    flags | libc::MSG_DONTWAIT | nosig,
                    addr,
                    alen,
                )
            }
        });
        let r = match io {
            Io::Done(_) if failed => return Some(sent as isize),
            Io::Done(r) => r,
            Io::Blocking => return None,
        };
        if r < 0 {
            return Some(if sent > 0 { sent as isize } else { -1 });
        }
        sent += r as usize;
        if sent >= n || r == 0 || user_nonblocking(fd, e) {
            return Some(sent as isize);
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn recv(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t {
    if in_coroutine() && flags & libc::MSG_DONTWAIT == 0 {
        if let Some(r) = recv_parking(
            fd,
            buf,
            n,
            flags,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        ) {
            return r;
        }
    }
    // SAFETY: the caller's recv contract.
    unsafe { real::recv(fd, buf, n, flags) }
}

#[no_mangle]
pub unsafe extern "C" fn send(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t {
    if in_coroutine() && flags & libc::MSG_DONTWAIT == 0 {
        if let Some(r) = send_parking(fd, buf, n, flags, std::ptr::null(), 0) {
            return r;
        }
    }
    // SAFETY: the caller's send contract.
    unsafe { real::send(fd, buf, n, flags) }
}

/// Records what a new socket fd is: kind socket, the program's
/// non-blocking wish from its flags; forgets anything about the old fd of
/// that number (closed behind corun's back, e.g. by fclose).
pub(crate) fn note_new_socket(fd: c_int, nonblock: bool) {
    if let Some(e) = fdtable::get(fd) {
        e.reset();
        e.kind.store(fdtable::KIND_SOCKET, Ordering::Relaxed);
        super::set_user_nonblocking(fd, nonblock);
    }
}

/// SO_ACCEPTCONN: the socket is listening.
fn is_listening(fd: c_int) -> bool {
    let mut v: c_int = 0;
    let mut l = std::mem::size_of::<c_int>() as socklen_t;
    // SAFETY: valid out-pointers of the right size.
    let r = unsafe {
        real::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ACCEPTCONN,
            &mut v as *mut c_int as *mut c_void,
            &mut l,
        )
    };
    r == 0 && v != 0
}

fn accept_parking(
    fd: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
    flags: c_int,
) -> Option<c_int> {
    let e = fdtable::get(fd)?;
    if user_nonblocking(fd, e) {
        return None;
    }
    let deadline = deadline_in(e.rcv_timeo.load(Ordering::Relaxed));
    let mut listening: Option<bool> = None;
    let io = nonblocking_loop(fd, e, Dir::Read, deadline, || {
        // One coroutine of the process at a time checks and accepts: two
        // coroutines on two workers both seeing the listener readable would
        // both call the blocking accept, and the loser would hold its worker
        // until the next connection.
        if !e.try_begin_accept() {
            return eagain();
        }
        let r = if !ready_now(fd, libc::POLLIN)
            // Only a listening socket is worth waiting on: on anything else
            // accept fails at once (EINVAL, ENOTSOCK...), and so must we.
            && *listening.get_or_insert_with(|| is_listening(fd))
        {
            eagain()
        } else {
            // SAFETY: the caller's accept4 contract.
            unsafe { real::accept4(fd, addr, len, flags) as isize }
        };
        let saved = crate::sys::errno();
        e.end_accept();
        crate::sys::set_errno(saved);
        r
    });
    match io {
        Io::Done(r) => Some(r as c_int),
        Io::Blocking => None,
    }
}

#[no_mangle]
pub unsafe extern "C" fn accept4(
    fd: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
    flags: c_int,
) -> c_int {
    let r = match in_coroutine()
        .then(|| accept_parking(fd, addr, len, flags))
        .flatten()
    {
        Some(r) => r,
        // SAFETY: the caller's accept4 contract.
        None => unsafe { real::accept4(fd, addr, len, flags) },
    };
    if r >= 0 {
        let saved = errno();
        note_new_socket(r, flags & libc::SOCK_NONBLOCK != 0);
        set_errno(saved);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn accept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int {
    let r = match in_coroutine()
        .then(|| accept_parking(fd, addr, len, 0))
        .flatten()
    {
        Some(r) => r,
        // SAFETY: the caller's accept contract.
        None => unsafe { real::accept(fd, addr, len) },
    };
    if r >= 0 {
        let saved = errno();
        note_new_socket(r, false);
        set_errno(saved);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn socket(domain: c_int, ty: c_int, proto: c_int) -> c_int {
    // SAFETY: plain integers.
    let fd = unsafe { real::socket(domain, ty, proto) };
    if fd >= 0 {
        let saved = errno();
        note_new_socket(fd, ty & libc::SOCK_NONBLOCK != 0);
        set_errno(saved);
    }
    fd
}

/// Sets or clears O_NONBLOCK with the raw syscall; returns the old flags.
fn set_nonblock_raw(fd: c_int, on: bool) -> Option<c_int> {
    // SAFETY: raw fcntl on the caller's fd, no memory involved.
    let fl = unsafe { libc::syscall(libc::SYS_fcntl, fd, libc::F_GETFL) } as c_int;
    if fl < 0 {
        return None;
    }
    let nfl = if on {
        fl | libc::O_NONBLOCK
    } else {
        fl & !libc::O_NONBLOCK
    };
    if nfl != fl {
        // SAFETY: as above.
        unsafe { libc::syscall(libc::SYS_fcntl, fd, libc::F_SETFL, nfl) };
    }
    Some(fl)
}

/// One connect attempt with O_NONBLOCK set for the duration of the call.
fn connect_nonblocking(fd: c_int, addr: *const sockaddr, len: socklen_t) -> Option<(c_int, c_int)> {
    let old = set_nonblock_raw(fd, true)?;
    // SAFETY: the caller's connect contract.
    let r = unsafe { real::connect(fd, addr, len) };
    let err = errno();
    if old & libc::O_NONBLOCK == 0 {
        // SAFETY: restoring the flags read above.
        unsafe { libc::syscall(libc::SYS_fcntl, fd, libc::F_SETFL, old) };
    }
    Some((r, err))
}

/// A blocking connect that parks: connect without blocking; while the
/// kernel says the connection is in progress (EINPROGRESS, then EALREADY)
/// wait for writability and call connect again. The kernel's answer to
/// that later call is exactly what a blocking connect returns (0 once
/// established, the connection's error otherwise), and it leaves the
/// socket in the state a blocking connect would (connected, or
/// unconnected after a failure).
fn connect_parking(fd: c_int, addr: *const sockaddr, len: socklen_t) -> Option<c_int> {
    let e = fdtable::get(fd)?;
    if user_nonblocking(fd, e) {
        return None;
    }
    let deadline = deadline_in(e.snd_timeo.load(Ordering::Relaxed));
    let mut started = false;
    loop {
        let seen = e.snapshot(Dir::Write);
        let (r, err) = connect_nonblocking(fd, addr, len)?;
        if r == 0 {
            return Some(0);
        }
        match err {
            libc::EINPROGRESS | libc::EALREADY if started || err == libc::EINPROGRESS => {
                started = true;
                match park_until_ready(fd, Dir::Write, seen, deadline) {
                    FdWait::Ready => continue,
                    FdWait::Closed => {
                        set_errno(libc::EBADF);
                        return Some(-1);
                    }
                    FdWait::TimedOut => {
                        set_errno(libc::EINPROGRESS);
                        return Some(-1);
                    }
                    FdWait::NotPollable(e) => {
                        set_errno(e);
                        return Some(-1);
                    }
                }
            }
            libc::EAGAIN => {
                // AF_UNIX with a full backlog: a blocking connect waits for room.
                if deadline.is_some_and(|d| now_ns() >= d) {
                    set_errno(libc::EAGAIN);
                    return Some(-1);
                }
                crate::sched::sleep_until(now_ns() + 1_000_000);
            }
            _ => {
                set_errno(err);
                return Some(-1);
            }
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn connect(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
    if in_coroutine() {
        if let Some(r) = connect_parking(fd, addr, len) {
            return r;
        }
    }
    // SAFETY: the caller's connect contract.
    unsafe { real::connect(fd, addr, len) }
}
