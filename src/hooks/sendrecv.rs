//! `recv`, `recvfrom`, `recvmsg`, `send`, `sendto`, `sendmsg`, and the
//! fortified `__recv_chk`, `__recvfrom_chk` (`recvmmsg` and `sendmmsg`:
//! `mmsg.rs`).
//!
//! Each attempt adds MSG_DONTWAIT (a call that already has it is the
//! program asking for EAGAIN, and passes through). What the blocking call
//! would have done is rebuilt around the attempts:
//!
//! - a receive returns the first non-EAGAIN result; with MSG_WAITALL (and
//!   not MSG_PEEK) it accumulates until the buffer is full, EOF, an error or
//!   SO_RCVTIMEO, and then reports the count received so far, as Linux does;
//! - a send on a stream socket loops over partial sends until everything is
//!   sent; an error or SO_SNDTIMEO after a partial send reports the partial
//!   count (without SIGPIPE, leaving a connection error pending for the
//!   next call, as the kernel does). Ancillary data goes with the first attempt only (the kernel
//!   attaches it to the first byte).
//!
//! A program that made the socket non-blocking gets EAGAIN at the first
//! attempt that finds nothing (the loop asks `user_nonblocking`).

use std::ffi::c_int;

use libc::{c_void, iovec, msghdr, size_t, sockaddr, socklen_t, ssize_t};

use super::rw::{iov_len, iov_tail};
use super::{
    after_nb_read, before_nb_read, before_nb_read_at, drained, eagain, entry_parks, fd_parks,
    nb_read_as_is, nonblocking_loop, nosignal_after, parking_on, program_nonblocking, read_entry,
    sent_or_epipe, user_nonblocking, write_all, write_all_from, Deadline, Io, Written,
};
use crate::sched::fdtable::{self, Dir};
use crate::sys::real;

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
    let mut deadline = Deadline::default();
    let waitall = flags & libc::MSG_WAITALL != 0 && flags & libc::MSG_PEEK == 0;
    let mut got = 0usize;
    // A plain receive is a read (`drained.rs`): its first attempt may be
    // skipped, and a short one marks the socket drained.
    let mut first = flags == 0;
    loop {
        let io = nonblocking_loop(fd, e, Dir::Read, &mut deadline, |fd, e| {
            if std::mem::take(&mut first) && drained::can_skip(fd, e) {
                return eagain();
            }
            let seen = drained::before(e);
            // SAFETY: the caller's recvfrom contract, from offset `got`.
            let r = unsafe {
                real::recvfrom(
                    fd,
                    (buf as *mut u8).add(got) as *mut c_void,
                    n - got,
                    (flags & !libc::MSG_WAITALL) | libc::MSG_DONTWAIT,
                    addr,
                    alen,
                )
            };
            if flags == 0 {
                drained::note(e, seen, r, n);
            }
            r
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
    // The first send before the general loop, as `rw::write_iov` does: a
    // reply that goes out whole returns without the loop's frames.
    let caller_errno = crate::sys::errno();
    // SAFETY: the caller's sendto contract.
    let r = unsafe {
        real::sendto(
            fd,
            buf,
            n,
            flags | libc::MSG_DONTWAIT | nosignal_after(0),
            addr,
            alen,
        )
    };
    let mut first = 0;
    if r >= 0 {
        if r as usize >= n || r == 0 || user_nonblocking(fd, e) {
            return Some(r);
        }
        first = r as usize;
    } else if crate::sys::errno() != libc::EAGAIN {
        return Some(sent_or_epipe(r, 0, flags));
    } else {
        crate::sys::set_errno(caller_errno);
    }
    let written = write_all_from(fd, e, n, first, caller_errno, |fd, _, sent| {
        // SAFETY: the caller's sendto contract, from offset `sent`.
        let r = unsafe {
            real::sendto(
                fd,
                (buf as *const u8).add(sent) as *const c_void,
                n - sent,
                flags | libc::MSG_DONTWAIT | nosignal_after(sent),
                addr,
                alen,
            )
        };
        Some(sent_or_epipe(r, sent, flags))
    });
    sent_result(written)
}

/// A socket always has a way to wait: `Rest` only comes before any byte
/// (make the real call) or, on a socket, never.
fn sent_result(w: Written) -> Option<isize> {
    match w {
        Written::Done(r) => Some(r),
        Written::Rest(0) => None,
        Written::Rest(sent) => Some(sent as isize),
    }
}

/// recvmsg with MSG_DONTWAIT attempts; MSG_WAITALL fills the rest of the
/// iovecs (control data and the address come with the first part).
fn recvmsg_parking(fd: c_int, msg: *mut msghdr, flags: c_int) -> Option<isize> {
    let e = fdtable::get(fd)?;
    let mut deadline = Deadline::default();
    let first = nonblocking_loop(fd, e, Dir::Read, &mut deadline, |fd, _| {
        // SAFETY: the caller's recvmsg contract.
        unsafe { real::recvmsg(fd, msg, (flags & !libc::MSG_WAITALL) | libc::MSG_DONTWAIT) }
    });
    let r = match first {
        Io::Done(r) => r,
        Io::Blocking => return None,
    };
    let waitall = flags & libc::MSG_WAITALL != 0 && flags & libc::MSG_PEEK == 0;
    if !waitall || r <= 0 {
        return Some(r);
    }
    // SAFETY: the caller's msghdr is readable (the kernel just used it).
    let (iov, cnt) = unsafe { ((*msg).msg_iov, (*msg).msg_iovlen as c_int) };
    let total = iov_len(iov, cnt);
    let mut got = r as usize;
    while got < total && !user_nonblocking(fd, e) {
        let tail = iov_tail(iov, cnt, got);
        // SAFETY: an empty msghdr naming the rest of the caller's buffers.
        let mut m: msghdr = unsafe { std::mem::zeroed() };
        m.msg_iov = tail.as_ptr() as *mut iovec;
        m.msg_iovlen = tail.len();
        let io = nonblocking_loop(fd, e, Dir::Read, &mut deadline, |fd, _| {
            // SAFETY: writes only into the caller's buffers.
            unsafe {
                real::recvmsg(
                    fd,
                    &mut m,
                    (flags & !libc::MSG_WAITALL) | libc::MSG_DONTWAIT,
                )
            }
        });
        match io {
            Io::Done(r) if r > 0 => got += r as usize,
            _ => break,
        }
    }
    Some(got as isize)
}

/// sendmsg with MSG_DONTWAIT attempts, looping over partial sends
/// (ancillary data goes with the first part only).
pub(super) fn sendmsg_parking(fd: c_int, msg: *const msghdr, flags: c_int) -> Option<isize> {
    let e = fdtable::get(fd)?;
    // SAFETY: the caller's msghdr is readable per the sendmsg contract.
    let (iov, cnt) = unsafe { ((*msg).msg_iov, (*msg).msg_iovlen as c_int) };
    let mut tail: Vec<iovec> = Vec::new();
    let mut tail_at = 0;
    let written = write_all(fd, e, iov_len(iov, cnt), |fd, _, sent| {
        // SAFETY: as above; a copy we may point at the unsent tail.
        let mut m: msghdr = unsafe { *msg };
        if sent > 0 {
            if tail_at != sent {
                tail = iov_tail(iov, cnt, sent);
                tail_at = sent;
            }
            m.msg_iov = tail.as_ptr() as *mut iovec;
            m.msg_iovlen = tail.len();
            m.msg_control = std::ptr::null_mut();
            m.msg_controllen = 0;
        }
        // SAFETY: the caller's sendmsg contract.
        let r = unsafe { real::sendmsg(fd, &m, flags | libc::MSG_DONTWAIT | nosignal_after(sent)) };
        Some(sent_or_epipe(r, sent, flags))
    });
    sent_result(written)
}

/// A receive made as the program asked, without `sched::parking()`: with
/// MSG_DONTWAIT, or on a descriptor it made non-blocking itself; the fd's
/// entry (None: none yet) for `nb_read_as_is`.
#[inline(always)]
fn as_is(fd: c_int, flags: c_int) -> Option<Option<&'static fdtable::FdEntry>> {
    if flags & libc::MSG_DONTWAIT != 0 {
        return Some(fdtable::peek(fd));
    }
    program_nonblocking(fd).map(Some)
}

#[no_mangle]
pub unsafe extern "C" fn recv(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t {
    if crate::sched::lone::nothing_parks() {
        // A lone entry (hooks/mod.rs): what the rest does when nothing parks.
        // SAFETY: the caller's recv contract.
        return unsafe { real::recv(fd, buf, n, flags) };
    }
    // SAFETY: as above.
    unsafe { recv_hooked(fd, buf, n, flags) }
}

#[inline(never)]
unsafe fn recv_hooked(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t {
    if let Some(e) = as_is(fd, flags) {
        // SAFETY: the caller's recv contract.
        return nb_read_as_is(e, || unsafe { real::recv(fd, buf, n, flags) });
    }
    let parks = crate::sched::parking();
    let mut e = read_entry(fd, parks);
    if parks && entry_parks(e) && flags & libc::MSG_DONTWAIT == 0 {
        let (addr, alen) = (std::ptr::null_mut(), std::ptr::null_mut());
        if let Some(r) = recv_parking(fd, buf, n, flags, addr, alen) {
            return r;
        }
        e = fdtable::peek(fd);
    }
    let before = before_nb_read_at(e);
    // SAFETY: the caller's recv contract.
    after_nb_read(before, unsafe { real::recv(fd, buf, n, flags) })
}

#[no_mangle]
pub unsafe extern "C" fn recvfrom(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    flags: c_int,
    addr: *mut sockaddr,
    alen: *mut socklen_t,
) -> ssize_t {
    if crate::sched::lone::nothing_parks() {
        // A lone entry (hooks/mod.rs): what the rest does when nothing parks.
        // SAFETY: the caller's recvfrom contract.
        return unsafe { real::recvfrom(fd, buf, n, flags, addr, alen) };
    }
    // SAFETY: as above.
    unsafe { recvfrom_hooked(fd, buf, n, flags, addr, alen) }
}

#[inline(never)]
unsafe fn recvfrom_hooked(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    flags: c_int,
    addr: *mut sockaddr,
    alen: *mut socklen_t,
) -> ssize_t {
    if let Some(e) = as_is(fd, flags) {
        // SAFETY: the caller's recvfrom contract.
        return nb_read_as_is(e, || unsafe {
            real::recvfrom(fd, buf, n, flags, addr, alen)
        });
    }
    let parks = crate::sched::parking();
    let mut e = read_entry(fd, parks);
    if parks && entry_parks(e) && flags & libc::MSG_DONTWAIT == 0 {
        if let Some(r) = recv_parking(fd, buf, n, flags, addr, alen) {
            return r;
        }
        e = fdtable::peek(fd);
    }
    let before = before_nb_read_at(e);
    // SAFETY: the caller's recvfrom contract.
    after_nb_read(before, unsafe {
        real::recvfrom(fd, buf, n, flags, addr, alen)
    })
}

#[no_mangle]
pub unsafe extern "C" fn recvmsg(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t {
    if crate::sched::lone::nothing_parks() {
        // A lone entry (hooks/mod.rs): what the rest does when nothing parks.
        // SAFETY: the caller's recvmsg contract.
        return unsafe { real::recvmsg(fd, msg, flags) };
    }
    // SAFETY: as above.
    unsafe { recvmsg_hooked(fd, msg, flags) }
}

#[inline(never)]
unsafe fn recvmsg_hooked(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t {
    if let Some(e) = as_is(fd, flags) {
        // SAFETY: the caller's recvmsg contract.
        return nb_read_as_is(e, || unsafe { real::recvmsg(fd, msg, flags) });
    }
    let parks = crate::sched::parking();
    if parks && fd_parks(fd) && flags & libc::MSG_DONTWAIT == 0 && !msg.is_null() {
        if let Some(r) = recvmsg_parking(fd, msg, flags) {
            return r;
        }
    }
    let before = before_nb_read(fd, parks);
    // SAFETY: the caller's recvmsg contract.
    after_nb_read(before, unsafe { real::recvmsg(fd, msg, flags) })
}

#[no_mangle]
pub unsafe extern "C" fn send(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t {
    if crate::sched::lone::nothing_parks()
        || flags & libc::MSG_DONTWAIT != 0
        || program_nonblocking(fd).is_some()
    {
        // A lone entry (hooks/mod.rs): what the rest does when nothing
        // parks, or when the program asked for a non-blocking call.
        // SAFETY: the caller's send contract.
        return unsafe { real::send(fd, buf, n, flags) };
    }
    // SAFETY: as above.
    unsafe { send_hooked(fd, buf, n, flags) }
}

#[inline(never)]
unsafe fn send_hooked(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t {
    if parking_on(fd) && flags & libc::MSG_DONTWAIT == 0 {
        if let Some(r) = send_parking(fd, buf, n, flags, std::ptr::null(), 0) {
            return r;
        }
    }
    // SAFETY: the caller's send contract.
    unsafe { real::send(fd, buf, n, flags) }
}

#[no_mangle]
pub unsafe extern "C" fn sendto(
    fd: c_int,
    buf: *const c_void,
    n: size_t,
    flags: c_int,
    addr: *const sockaddr,
    alen: socklen_t,
) -> ssize_t {
    if crate::sched::lone::nothing_parks()
        || flags & libc::MSG_DONTWAIT != 0
        || program_nonblocking(fd).is_some()
    {
        // A lone entry (hooks/mod.rs): what the rest does when nothing
        // parks, or when the program asked for a non-blocking call.
        // SAFETY: the caller's sendto contract.
        return unsafe { real::sendto(fd, buf, n, flags, addr, alen) };
    }
    // SAFETY: as above.
    unsafe { sendto_hooked(fd, buf, n, flags, addr, alen) }
}

#[inline(never)]
unsafe fn sendto_hooked(
    fd: c_int,
    buf: *const c_void,
    n: size_t,
    flags: c_int,
    addr: *const sockaddr,
    alen: socklen_t,
) -> ssize_t {
    if parking_on(fd) && flags & libc::MSG_DONTWAIT == 0 {
        if let Some(r) = send_parking(fd, buf, n, flags, addr, alen) {
            return r;
        }
    }
    // SAFETY: the caller's sendto contract.
    unsafe { real::sendto(fd, buf, n, flags, addr, alen) }
}

#[no_mangle]
pub unsafe extern "C" fn sendmsg(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t {
    if crate::sched::lone::nothing_parks()
        || flags & libc::MSG_DONTWAIT != 0
        || program_nonblocking(fd).is_some()
    {
        // A lone entry (hooks/mod.rs): what the rest does when nothing
        // parks, or when the program asked for a non-blocking call.
        // SAFETY: the caller's sendmsg contract.
        return unsafe { real::sendmsg(fd, msg, flags) };
    }
    // SAFETY: as above.
    unsafe { sendmsg_hooked(fd, msg, flags) }
}

#[inline(never)]
unsafe fn sendmsg_hooked(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t {
    if parking_on(fd) && flags & libc::MSG_DONTWAIT == 0 && !msg.is_null() {
        if let Some(r) = sendmsg_parking(fd, msg, flags) {
            return r;
        }
    }
    // SAFETY: the caller's sendmsg contract.
    unsafe { real::sendmsg(fd, msg, flags) }
}

extern "C" {
    fn __chk_fail() -> !;
}

#[no_mangle]
pub unsafe extern "C" fn __recv_chk(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    buflen: size_t,
    flags: c_int,
) -> ssize_t {
    if n > buflen {
        // SAFETY: glibc's own failure report, as the real __recv_chk does.
        unsafe { __chk_fail() }
    }
    // SAFETY: the caller's recv contract.
    unsafe { recv(fd, buf, n, flags) }
}

#[no_mangle]
pub unsafe extern "C" fn __recvfrom_chk(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    buflen: size_t,
    flags: c_int,
    addr: *mut sockaddr,
    alen: *mut socklen_t,
) -> ssize_t {
    if n > buflen {
        // SAFETY: as in __recv_chk.
        unsafe { __chk_fail() }
    }
    // SAFETY: the caller's recvfrom contract.
    unsafe { recvfrom(fd, buf, n, flags, addr, alen) }
}
