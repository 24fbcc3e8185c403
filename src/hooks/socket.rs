//! `socket`, `socketpair`, `accept`, `accept4`, `connect`, `shutdown`,
//! `setsockopt`, `getsockopt`. (The data calls are in `sendrecv.rs`.)
//!
//! `socket`, `socketpair` and `accept` record what the new fds are (kind
//! socket, the program's SOCK_NONBLOCK wish, no timeouts; an accepted socket
//! inherits the listener's SO_RCVTIMEO/SO_SNDTIMEO, as Linux copies them),
//! forgetting whatever an earlier fd of that number left behind.
//! `setsockopt` records SO_RCVTIMEO/SO_SNDTIMEO after the kernel accepted
//! them; `getsockopt` and `shutdown` pass through (the kernel's answer is the
//! truth; shutdown's wake-up of parked readers comes from the netpoller,
//! which sees the hang-up).
//!
//! `accept` honours SO_RCVTIMEO: -1/EAGAIN at the deadline, as Linux.
//!
//! `accept` has no per-call non-blocking flag. It waits for the listening
//! socket to be readable, confirms with a zero-timeout poll, then makes the
//! real call. Within the process, one coroutine at a time does that pair
//! for a given listener (a try-lock in the fd entry; the others wait for
//! readability and are woken when the holder is done), so two workers never
//! race for one connection. Another *process* accepting the same connection
//! between the poll and the accept would make the call block until the
//! next connection: on a listener another process may share, the accept
//! is made on the blocking pool (`listener.rs`).
//!
//! `connect` sets O_NONBLOCK on the socket for the duration of the call
//! only, and restores the flags before anything else runs; the socket was
//! normally just created by this process. On EINPROGRESS it parks until
//! writable (or SO_SNDTIMEO: -1/EINPROGRESS at the deadline, the connection
//! going on in the background, as Linux) and reads SO_ERROR, which is what
//! a blocking connect returns.

use std::ffi::c_int;
use std::sync::atomic::Ordering;

use libc::{c_void, sockaddr, socklen_t};

use super::{
    eagain, nonblocking_loop, ready_now, sock_timeout, user_nonblocking, Deadline, Io, TIMEO_NONE,
};
use crate::sched::fdtable::{self, Dir};
use crate::sched::signals::Interruptible;
use crate::sched::{park_until_ready, parking, FdWait};
use crate::sys::{errno, now_ns, real, set_errno};

/// Records what a new socket fd is: kind socket, the program's
/// non-blocking wish from its flags, the given timeouts, whether it is a
/// TCP stream; forgets anything about the old fd of that number (closed
/// behind corun's back, e.g. by fclose).
pub(crate) fn note_new_socket(fd: c_int, nonblock: bool, timeo: (u64, u64), tcp: bool) {
    let saved = errno();
    if let Some(e) = fdtable::get(fd) {
        e.reset();
        e.policy.kind.store(fdtable::KIND_SOCKET, Ordering::Relaxed);
        e.policy.tcp.store(tcp, Ordering::Relaxed);
        e.policy.rcv_timeo.store(timeo.0, Ordering::Relaxed);
        e.policy.snd_timeo.store(timeo.1, Ordering::Relaxed);
        super::set_user_nonblocking(fd, nonblock);
    }
    set_errno(saved);
}

/// The timeouts an accepted socket inherits from its listener (0 where not
/// known: asked of the kernel when needed).
fn listener_timeouts(fd: c_int) -> (u64, u64) {
    match fdtable::peek(fd) {
        Some(e) if !e.policy.shared.load(Ordering::Relaxed) => (
            e.policy.rcv_timeo.load(Ordering::Relaxed),
            e.policy.snd_timeo.load(Ordering::Relaxed),
        ),
        _ => (0, 0),
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
    let mut listening: Option<bool> = None;
    let io = nonblocking_loop(fd, e, Dir::Read, &mut Deadline::default(), |fd, e| {
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
        } else if super::listener::may_be_shared(e)
            && *listening.get_or_insert_with(|| is_listening(fd))
        {
            // Another process may take the connection first: the blocking
            // accept waits on a helper thread, not on the worker.
            super::listener::accept_on_pool(fd, e, addr, len, flags)
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
    let r = match parking()
        .then(|| accept_parking(fd, addr, len, flags))
        .flatten()
    {
        Some(r) => r,
        // SAFETY: the caller's accept4 contract.
        None => unsafe { real::accept4(fd, addr, len, flags) },
    };
    if r >= 0 {
        let tcp = fdtable::peek(fd).is_some_and(|l| l.policy.tcp.load(Ordering::Relaxed));
        note_new_socket(
            r,
            flags & libc::SOCK_NONBLOCK != 0,
            listener_timeouts(fd),
            tcp,
        );
    }
    r
}

/// `accept` is `accept4` without flags (the kernel's two calls differ in
/// nothing else).
#[no_mangle]
pub unsafe extern "C" fn accept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int {
    // SAFETY: the caller's accept contract.
    unsafe { accept4(fd, addr, len, 0) }
}

#[no_mangle]
pub unsafe extern "C" fn socket(domain: c_int, ty: c_int, proto: c_int) -> c_int {
    // SAFETY: plain integers.
    let fd = unsafe { real::socket(domain, ty, proto) };
    if fd >= 0 {
        let tcp = matches!(domain, libc::AF_INET | libc::AF_INET6)
            && ty & 0xf == libc::SOCK_STREAM
            && matches!(proto, 0 | libc::IPPROTO_TCP);
        note_new_socket(
            fd,
            ty & libc::SOCK_NONBLOCK != 0,
            (TIMEO_NONE, TIMEO_NONE),
            tcp,
        );
        if let Some(e) = fdtable::get(fd) {
            super::listener::note_own(e);
        }
    }
    fd
}

#[no_mangle]
pub unsafe extern "C" fn socketpair(
    domain: c_int,
    ty: c_int,
    proto: c_int,
    sv: *mut c_int,
) -> c_int {
    // SAFETY: the caller's socketpair contract (sv holds two ints).
    let r = unsafe { real::socketpair(domain, ty, proto, sv) };
    if r == 0 {
        for i in 0..2 {
            // SAFETY: the kernel just wrote both.
            let fd = unsafe { *sv.add(i) };
            note_new_socket(
                fd,
                ty & libc::SOCK_NONBLOCK != 0,
                (TIMEO_NONE, TIMEO_NONE),
                false,
            );
        }
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn shutdown(fd: c_int, how: c_int) -> c_int {
    // SAFETY: plain integers.
    let r = unsafe { real::shutdown(fd, how) };
    if r == 0 {
        // Reads now end at once: none may skip its attempt (`drained.rs`).
        if let Some(e) = fdtable::peek(fd) {
            e.drained.store(0, Ordering::Release);
        }
    }
    r
}

/// SO_RCVTIMEO/SO_SNDTIMEO in both their names (the `_NEW` ones take a
/// 64-bit timeval, which on 64-bit Linux is `struct timeval`).
fn timeo_dir(level: c_int, name: c_int) -> Option<Dir> {
    const SO_RCVTIMEO_NEW: c_int = 66;
    const SO_SNDTIMEO_NEW: c_int = 67;
    if level != libc::SOL_SOCKET {
        return None;
    }
    match name {
        libc::SO_RCVTIMEO | SO_RCVTIMEO_NEW => Some(Dir::Read),
        libc::SO_SNDTIMEO | SO_SNDTIMEO_NEW => Some(Dir::Write),
        _ => None,
    }
}

#[no_mangle]
pub unsafe extern "C" fn setsockopt(
    fd: c_int,
    level: c_int,
    name: c_int,
    val: *const c_void,
    len: socklen_t,
) -> c_int {
    // SAFETY: the caller's setsockopt contract.
    let r = unsafe { real::setsockopt(fd, level, name, val, len) };
    if r != 0 {
        return r;
    }
    if level == libc::IPPROTO_TCP && name == libc::TCP_ULP {
        // An upper layer (kernel TLS) reads in records: a short read may
        // leave data (`drained.rs`).
        if let Some(e) = fdtable::peek(fd) {
            e.policy.tcp.store(false, Ordering::Relaxed);
        }
    }
    if let (Some(dir), Some(e)) = (timeo_dir(level, name), fdtable::get(fd)) {
        if !val.is_null() && len as usize >= std::mem::size_of::<libc::timeval>() {
            // SAFETY: the kernel just read a timeval from it.
            let tv = unsafe { std::ptr::read_unaligned(val as *const libc::timeval) };
            e.policy
                .timeo(dir)
                .store(super::timeval_ns(&tv), Ordering::Relaxed);
        }
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn getsockopt(
    fd: c_int,
    level: c_int,
    name: c_int,
    val: *mut c_void,
    len: *mut socklen_t,
) -> c_int {
    // SAFETY: the caller's getsockopt contract.
    unsafe { real::getsockopt(fd, level, name, val, len) }
}

/// Sets or clears O_NONBLOCK with one raw FIONBIO (the hook would record it
/// as the program's wish). Returns false if the kernel refused.
fn set_nonblock_raw(fd: c_int, on: bool) -> bool {
    let v: c_int = on.into();
    // SAFETY: FIONBIO reads an int from a live local.
    unsafe {
        crate::sys::real::syscall!(libc::SYS_ioctl, fd, libc::FIONBIO, &v as *const c_int) == 0
    }
}

/// One connect attempt with O_NONBLOCK set for the duration of the call.
/// Only made on an fd the program keeps blocking (checked by the caller),
/// so clearing the flag afterwards restores it: two syscalls around the
/// connect, not a read of the flags and two writes.
fn connect_nonblocking(fd: c_int, addr: *const sockaddr, len: socklen_t) -> Option<(c_int, c_int)> {
    if !set_nonblock_raw(fd, true) {
        return None;
    }
    // SAFETY: the caller's connect contract.
    let r = unsafe { real::connect(fd, addr, len) };
    let err = errno();
    set_nonblock_raw(fd, false);
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
    let mut started = false;
    let mut deadline = None;
    let mut deadline_known = false;
    let caller_errno = errno();
    let mut intr: Option<Interruptible> = None;
    loop {
        let seen = e.snapshot(Dir::Write);
        let (r, err) = connect_nonblocking(fd, addr, len)?;
        if r == 0 {
            // A blocking connect that succeeds leaves errno alone: not the
            // EINPROGRESS of the attempt before the park.
            set_errno(caller_errno);
            return Some(0);
        }
        if !deadline_known {
            deadline = sock_timeout(fd, e, Dir::Write).map(|t| now_ns().saturating_add(t));
            deadline_known = true;
        }
        if matches!(err, libc::EINPROGRESS | libc::EALREADY | libc::EAGAIN) {
            // A handler that ran while it waited: EINTR (the connection goes
            // on in the background, as after a native interrupted connect),
            // unless SA_RESTART and no timeout.
            let i = intr.get_or_insert_with(Interruptible::begin);
            if let Some(restart) = i.check() {
                if !restart || deadline.is_some() {
                    set_errno(libc::EINTR);
                    return Some(-1);
                }
                *i = Interruptible::begin();
            }
        }
        match err {
            libc::EINPROGRESS | libc::EALREADY if started || err == libc::EINPROGRESS => {
                started = true;
                if crate::sched::token::cancel_point() {
                    set_errno(libc::ECANCELED);
                    return Some(-1);
                }
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
                if !crate::sched::token::sleep_until(now_ns() + 1_000_000) {
                    set_errno(libc::ECANCELED);
                    return Some(-1);
                }
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
    if parking() {
        if let Some(r) = connect_parking(fd, addr, len) {
            return r;
        }
    }
    // SAFETY: the caller's connect contract.
    unsafe { real::connect(fd, addr, len) }
}
