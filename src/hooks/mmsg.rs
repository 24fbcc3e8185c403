//! `recvmmsg` and `sendmmsg`, split from `sendrecv.rs` (the loops of
//! attempts with MSG_DONTWAIT are the same idea, per message):
//!
//! - `recvmmsg` without MSG_WAITFORONE waits for `vlen` datagrams (the
//!   kernel does: the flag exists to stop after the first), checking its
//!   `timeout` after each datagram as the kernel does, and writing the time
//!   left back; an error after some datagrams returns the count;
//! - `sendmmsg` sends every message completely, in order; it returns the
//!   count sent when an error stops it after the first.

use std::ffi::{c_int, c_uint};

use libc::{iovec, mmsghdr, msghdr, timespec};

use super::rw::{iov_len, iov_tail};
use super::sendrecv::sendmsg_parking;
use super::{nonblocking_loop, nosignal_after, sent_or_epipe, user_nonblocking, Deadline, Io};
use crate::sched::fdtable::{self, Dir};
use crate::sched::parking;
use crate::sys::{errno, now_ns, set_errno};

pub(crate) mod next {
    use super::*;
    crate::sys::real::real_fns! {
        fn recvmmsg(fd: c_int, vec: *mut mmsghdr, vlen: c_uint, flags: c_int, t: *mut timespec) -> c_int;
        fn sendmmsg(fd: c_int, vec: *mut mmsghdr, vlen: c_uint, flags: c_int) -> c_int;
    }
}

fn recvmmsg_parking(
    fd: c_int,
    vec: *mut mmsghdr,
    vlen: c_uint,
    flags: c_int,
    timeout: *mut timespec,
) -> Option<c_int> {
    let e = fdtable::get(fd)?;
    let vlen = vlen.min(libc::UIO_MAXIOV as c_uint);
    let end = if timeout.is_null() {
        None
    } else {
        // SAFETY: non-null, readable per the recvmmsg contract.
        let ts = unsafe { *timeout };
        if !super::sleep::valid_timespec(&ts) {
            return None;
        }
        Some(now_ns().saturating_add(crate::sys::timespec_ns(&ts)))
    };
    let mut got: c_uint = 0;
    let mut err = 0;
    while got < vlen {
        let io = nonblocking_loop(fd, e, Dir::Read, &mut Deadline::default(), |fd, _| {
            // SAFETY: the rest of the caller's vector.
            unsafe {
                next::recvmmsg(
                    fd,
                    vec.add(got as usize),
                    vlen - got,
                    (flags & !libc::MSG_WAITFORONE) | libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                ) as isize
            }
        });
        let r = match io {
            Io::Done(r) => r,
            Io::Blocking => return None,
        };
        if r <= 0 {
            err = errno();
            break;
        }
        got += r as c_uint;
        if flags & libc::MSG_WAITFORONE != 0 || user_nonblocking(fd, e) {
            break;
        }
        if end.is_some_and(|d| now_ns() >= d) {
            break;
        }
    }
    if let Some(d) = end {
        // The kernel writes the time left back.
        // SAFETY: non-null and writable per the contract.
        unsafe { *timeout = crate::sys::ns_timespec(d.saturating_sub(now_ns())) };
    }
    if got == 0 {
        set_errno(err);
        return Some(-1);
    }
    Some(got as c_int)
}

fn sendmmsg_parking(fd: c_int, vec: *mut mmsghdr, vlen: c_uint, flags: c_int) -> Option<c_int> {
    let e = fdtable::get(fd)?;
    let vlen = vlen.min(libc::UIO_MAXIOV as c_uint);
    let mut sent: c_uint = 0;
    let mut err = 0;
    while sent < vlen {
        let io = nonblocking_loop(fd, e, Dir::Write, &mut Deadline::default(), |fd, _| {
            // SAFETY: the rest of the caller's vector.
            unsafe {
                let r = next::sendmmsg(
                    fd,
                    vec.add(sent as usize),
                    vlen - sent,
                    flags | libc::MSG_DONTWAIT | nosignal_after(0),
                ) as isize;
                sent_or_epipe(r, 0, flags)
            }
        });
        let r = match io {
            Io::Done(r) => r,
            Io::Blocking => return None,
        };
        if r <= 0 {
            err = errno();
            break;
        }
        sent += r as c_uint;
        // A stream socket may take part of the last message: a blocking
        // sendmmsg would have sent all of it before going on.
        // SAFETY: entry sent-1 is one the kernel just filled.
        let last = unsafe { &mut *vec.add(sent as usize - 1) };
        let want = iov_len(last.msg_hdr.msg_iov, last.msg_hdr.msg_iovlen as c_int);
        let have = last.msg_len as usize;
        if have < want && !user_nonblocking(fd, e) {
            let tail = iov_tail(last.msg_hdr.msg_iov, last.msg_hdr.msg_iovlen as c_int, have);
            // SAFETY: an empty msghdr naming the unsent rest.
            let mut m: msghdr = unsafe { std::mem::zeroed() };
            m.msg_iov = tail.as_ptr() as *mut iovec;
            m.msg_iovlen = tail.len();
            if let Some(r) = sendmsg_parking(fd, &m, flags) {
                if r > 0 {
                    last.msg_len += r as c_uint;
                }
                if last.msg_len as usize != want {
                    break;
                }
            }
        }
        if user_nonblocking(fd, e) {
            break;
        }
    }
    if sent == 0 {
        set_errno(err);
        return Some(-1);
    }
    Some(sent as c_int)
}

#[no_mangle]
pub unsafe extern "C" fn recvmmsg(
    fd: c_int,
    vec: *mut mmsghdr,
    vlen: c_uint,
    flags: c_int,
    timeout: *mut timespec,
) -> c_int {
    if parking() && flags & libc::MSG_DONTWAIT == 0 && !vec.is_null() && vlen > 0 {
        if let Some(r) = recvmmsg_parking(fd, vec, vlen, flags, timeout) {
            return r;
        }
    }
    // SAFETY: the caller's recvmmsg contract.
    unsafe { next::recvmmsg(fd, vec, vlen, flags, timeout) }
}

#[no_mangle]
pub unsafe extern "C" fn sendmmsg(
    fd: c_int,
    vec: *mut mmsghdr,
    vlen: c_uint,
    flags: c_int,
) -> c_int {
    if parking() && flags & libc::MSG_DONTWAIT == 0 && !vec.is_null() && vlen > 0 {
        if let Some(r) = sendmmsg_parking(fd, vec, vlen, flags) {
            return r;
        }
    }
    // SAFETY: the caller's sendmmsg contract.
    unsafe { next::sendmmsg(fd, vec, vlen, flags) }
}
