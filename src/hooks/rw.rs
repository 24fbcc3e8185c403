//! `read`, `write`, `readv`, `writev`, `__read_chk`. The positioned calls
//! (`pread`, `pwrite`...) and `preadv2`/`pwritev2` (which at offset -1
//! without flags are `readv`/`writev`, through `read_iov`/`write_iov`
//! here) are `hooks/pread.rs`.
//!
//! `__read_chk` is `read` as `_FORTIFY_SOURCE` builds call it: it checks the
//! buffer size as glibc's does (a too-small buffer aborts through
//! `__chk_fail`), then is `read`.
//!
//! A blocking read returns as soon as some data is there; a blocking write
//! on a stream returns only when everything is written (or an error or a
//! timeout ends it, in which case the count written so far is returned, as
//! the kernel does). The non-blocking attempts below reproduce both: reads
//! return the first non-EAGAIN result; writes loop over partial results
//! unless the program made the fd non-blocking itself.

use std::ffi::c_int;
use std::sync::atomic::Ordering;

use libc::{c_void, iovec, size_t, ssize_t};

use super::{
    after_nb_read, before_nb_read, drained, eagain, fd_kind, fd_parks, nonblocking_loop,
    nosignal_after, parking_on, ready_now, sent_or_epipe, user_nonblocking, write_all_from,
    Deadline, Io, Written,
};
use crate::sched::blocking::{run_blocking_restartable, OnHandler, SendPtr};
use crate::sched::fdtable::{self, Dir, FdEntry};
use crate::sched::parking;
use crate::sched::prefetch::{note_io_buffer, IoBuf};
use crate::sys::{errno, nocancel, real};

/// A `MSG_DONTWAIT` receive into `iov` on a socket, as a system call made
/// through glibc's `syscall`: `recvfrom` for one buffer (what a `read` is;
/// the kernel then copies no msghdr and no iovec array), `recvmsg` for
/// several. Not glibc's `recvmsg`: its wrapper is a cancellation point,
/// two atomic updates of the thread's cancel state around the call (3% of
/// threaded_http's CPU under corun), for a call that never blocks. A
/// coroutine's cancellation is corun's own (`hooks/cancel.rs`).
fn recv_nowait(fd: c_int, iov: *const iovec, cnt: c_int) -> isize {
    if cnt == 1 {
        // SAFETY: the caller's one iovec, as its read contract says.
        let v = unsafe { &*iov };
        // SAFETY: recvfrom into the caller's buffer, no address wanted.
        return unsafe {
            real::syscall!(
                libc::SYS_recvfrom,
                fd,
                v.iov_base,
                v.iov_len,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut::<c_void>(),
                std::ptr::null_mut::<c_void>(),
            )
        } as isize;
    }
    // SAFETY: a msghdr naming the caller's iovecs, otherwise empty.
    let mut m: libc::msghdr = unsafe { std::mem::zeroed() };
    m.msg_iov = iov as *mut iovec;
    m.msg_iovlen = cnt as usize;
    // SAFETY: as the caller's readv contract.
    unsafe { real::syscall!(libc::SYS_recvmsg, fd, &mut m, libc::MSG_DONTWAIT) as isize }
}

/// A send of `iov` on a socket with `flags`, as `recv_nowait`: `sendto`
/// for one buffer, `sendmsg` for several.
fn send_nowait(fd: c_int, iov: *const iovec, cnt: c_int, flags: c_int) -> isize {
    if cnt == 1 {
        // SAFETY: the caller's one iovec, as its write contract says.
        let v = unsafe { &*iov };
        // SAFETY: sendto from the caller's buffer, no address.
        return unsafe {
            real::syscall!(
                libc::SYS_sendto,
                fd,
                v.iov_base,
                v.iov_len,
                flags,
                std::ptr::null::<c_void>(),
                0 as libc::socklen_t,
            )
        } as isize;
    }
    // SAFETY: a msghdr naming the caller's iovecs, otherwise empty.
    let mut m: libc::msghdr = unsafe { std::mem::zeroed() };
    m.msg_iov = iov as *mut iovec;
    m.msg_iovlen = cnt as usize;
    // SAFETY: as the caller's writev contract.
    unsafe { real::syscall!(libc::SYS_sendmsg, fd, &m, flags) as isize }
}

/// One non-blocking vectored read attempt suited to the fd's kind, or None
/// when the kind needs the plain blocking call.
fn try_readv(fd: c_int, e: &FdEntry, iov: *const iovec, cnt: c_int) -> Option<isize> {
    loop {
        return match fd_kind(fd, e) {
            fdtable::KIND_SOCKET => {
                let r = recv_nowait(fd, iov, cnt);
                if r < 0 && errno() == libc::ENOTSOCK {
                    // Stale kind (the fd was closed behind our back): relearn.
                    e.policy
                        .kind
                        .store(fdtable::KIND_UNKNOWN, Ordering::Relaxed);
                    continue;
                }
                Some(r)
            }
            fdtable::KIND_NOWAIT => {
                // SAFETY: as the caller's readv contract; offset -1 = current position.
                let r = unsafe { real::preadv2(fd, iov, cnt, -1, libc::RWF_NOWAIT) };
                if r < 0 && errno() == libc::EOPNOTSUPP {
                    e.policy.kind.store(fdtable::KIND_OTHER, Ordering::Relaxed);
                    continue;
                }
                Some(r)
            }
            fdtable::KIND_OTHER => {
                if !ready_now(fd, libc::POLLIN) {
                    return Some(eagain());
                }
                // SAFETY: as the caller's readv contract.
                Some(unsafe { real::readv(fd, iov, cnt) })
            }
            _ => None,
        };
    }
}

/// One non-blocking vectored write attempt, as `try_readv`.
/// `continuing`: some bytes of this write were sent already; a failure now
/// must not raise SIGPIPE (the blocking call returns the partial count).
fn try_writev(
    fd: c_int,
    e: &FdEntry,
    iov: *const iovec,
    cnt: c_int,
    continuing: bool,
) -> Option<isize> {
    loop {
        return match fd_kind(fd, e) {
            fdtable::KIND_SOCKET => {
                // SIGPIPE is raised exactly as write() would, until part of
                // the write is out.
                let done = usize::from(continuing);
                let r = send_nowait(fd, iov, cnt, libc::MSG_DONTWAIT | nosignal_after(done));
                let r = sent_or_epipe(r, done, 0);
                if r < 0 && errno() == libc::ENOTSOCK {
                    e.policy
                        .kind
                        .store(fdtable::KIND_UNKNOWN, Ordering::Relaxed);
                    continue;
                }
                Some(r)
            }
            fdtable::KIND_NOWAIT => {
                // SAFETY: as the caller's writev contract.
                let r = unsafe { real::pwritev2(fd, iov, cnt, -1, libc::RWF_NOWAIT) };
                if r < 0 && errno() == libc::EOPNOTSUPP {
                    e.policy.kind.store(fdtable::KIND_OTHER, Ordering::Relaxed);
                    continue;
                }
                Some(r)
            }
            fdtable::KIND_OTHER => {
                if !ready_now(fd, libc::POLLOUT) {
                    return Some(eagain());
                }
                if iov_len(iov, cnt) > OTHER_INLINE_WRITE && !user_nonblocking(fd, e) {
                    return Some(write_other_big(fd, iov, cnt));
                }
                // SAFETY: as the caller's writev contract.
                Some(unsafe { real::writev(fd, iov, cnt) })
            }
            _ => None,
        };
    }
}

/// The largest write to a device without RWF_NOWAIT (a tty) made inline
/// once it polls writable: n_tty reports POLLOUT with room for one byte
/// and fewer than 256 (WAKEUP_CHARS) queued.
const OTHER_INLINE_WRITE: usize = 256;

/// A blocking write to a device that polled writable, larger than
/// `OTHER_INLINE_WRITE`. A tty writes a blocking call whole, waiting in
/// the kernel while it has less room (a pty slave took 10 KiB with no
/// reader here): made inline, it held the worker, and a reader of the
/// master on that worker never ran (libuv's `tty_pty_partial` hung on 1
/// worker). An RWF_NOWAIT attempt first (`/dev/null`, `/dev/zero`,
/// `/dev/urandom` take it: never blocking), else the whole write on the
/// blocking pool while the thread parks, one call as natively (a tty
/// write is not interleaved with another thread's).
fn write_other_big(fd: c_int, iov: *const iovec, cnt: c_int) -> isize {
    // SAFETY: as the caller's writev contract.
    let r = unsafe { real::pwritev2(fd, iov, cnt, -1, libc::RWF_NOWAIT) };
    if r >= 0 || !matches!(errno(), libc::EOPNOTSUPP | libc::EAGAIN) {
        return r;
    }
    let v = SendPtr(iov as *mut iovec);
    // SAFETY: the caller's buffers, alive while it is parked in this call.
    // A signal for the caller cuts the wait for room short, as natively:
    // the part written, or EINTR (restarted under SA_RESTART: signal(7)).
    run_blocking_restartable(OnHandler::RestartIfSaRestart, move |_| unsafe {
        real::writev(fd, v.get(), cnt)
    })
}

/// A read of `iov` that parks instead of blocking; None: make the real call.
pub(crate) fn read_iov(fd: c_int, iov: *const iovec, cnt: c_int) -> Option<isize> {
    let e = fdtable::get(fd)?;
    if fd_kind(fd, e) == fdtable::KIND_FILE {
        return Some(super::file::read_file(fd, iov, cnt, &e.policy));
    }
    note_io_buffer(IoBuf::Read, iov_base(iov, cnt));
    let mut unsupported = false;
    let mut first = true;
    let caller_errno = errno();
    let mut deadline = Deadline::default();
    let io = nonblocking_loop(fd, e, Dir::Read, &mut deadline, |fd, e| {
        if std::mem::take(&mut first) && drained::can_skip(fd, e) {
            return eagain();
        }
        let seen = drained::before(e);
        match try_readv(fd, e, iov, cnt) {
            Some(r) => {
                drained::note(e, seen, r, iov_len(iov, cnt));
                r
            }
            None => {
                unsupported = true;
                0
            }
        }
    });
    match io {
        Io::Done(_) if unsupported => None,
        Io::Done(r) if r < 0 && errno() == libc::EAGAIN && deadline.is_tty_vtime() => {
            // A terminal's VTIME passed with no byte: the read returns 0
            // (`hooks/tty_read.rs`).
            crate::sys::set_errno(caller_errno);
            Some(0)
        }
        Io::Done(r) => Some(r),
        Io::Blocking => None,
    }
}

/// Address of the first buffer of an iovec array (0: none).
fn iov_base(iov: *const iovec, cnt: c_int) -> usize {
    if iov.is_null() || cnt <= 0 {
        return 0;
    }
    // SAFETY: the caller's iovec array has at least one entry.
    unsafe { (*iov).iov_base as usize }
}

/// Total length of an iovec array.
pub(crate) fn iov_len(iov: *const iovec, cnt: c_int) -> usize {
    if iov.is_null() || cnt <= 0 {
        return 0;
    }
    // SAFETY: the caller's iovec array has `cnt` entries.
    let v = unsafe { std::slice::from_raw_parts(iov, cnt as usize) };
    v.iter()
        .map(|x| x.iov_len)
        .fold(0usize, usize::saturating_add)
}

/// The part of `iov` after its first `skip` bytes.
pub(crate) fn iov_tail(iov: *const iovec, cnt: c_int, mut skip: usize) -> Vec<iovec> {
    // SAFETY: as in iov_len.
    let v = unsafe { std::slice::from_raw_parts(iov, cnt as usize) };
    let mut out = Vec::with_capacity(v.len());
    for x in v {
        if skip >= x.iov_len {
            skip -= x.iov_len;
            continue;
        }
        out.push(iovec {
            // SAFETY: `skip` < iov_len, so the pointer stays inside the buffer.
            iov_base: unsafe { (x.iov_base as *mut u8).add(skip) } as *mut c_void,
            iov_len: x.iov_len - skip,
        });
        skip = 0;
    }
    out
}

/// A blocking write of all of `iov` that parks instead of blocking; None:
/// make the real call.
pub(crate) fn write_iov(fd: c_int, iov: *const iovec, cnt: c_int) -> Option<isize> {
    let e = fdtable::get(fd)?;
    let kind = fd_kind(fd, e);
    if kind == fdtable::KIND_FILE {
        return Some(super::file::write_file(fd, iov, cnt, &e.policy));
    }
    note_io_buffer(IoBuf::Write, iov_base(iov, cnt));
    let total = iov_len(iov, cnt);
    let caller_errno = errno();
    let mut sent = 0;
    if kind == fdtable::KIND_SOCKET && !user_nonblocking(fd, e) {
        match socket_write_first(fd, iov, cnt, total) {
            FirstSend::Done(r) => return Some(r),
            FirstSend::Partly(n) => sent = n,
            FirstSend::Again => crate::sys::set_errno(caller_errno),
        }
    }
    write_iov_from(fd, e, iov, cnt, total, sent, caller_errno)
}

/// What the first send of a blocking socket write did.
enum FirstSend {
    /// The call's result: all of it sent, or an error to return.
    Done(isize),
    /// This many bytes (fewer than asked) went out: the rest waits.
    Partly(usize),
    /// Nothing sent, nothing to report (EAGAIN, or a stale kind): the
    /// general loop makes the call.
    Again,
}

/// The first attempt of a blocking write on a socket, made before the
/// general loop (`write_all`) is entered: a keep-alive server's reply
/// nearly always goes out whole in it, and returned from here it takes
/// none of the loop's frames (closures, deadline, the fd kept across a
/// dup2), fewer instructions and fewer lines of a cold coroutine stack
/// (callgrind, threaded_http at 1,000 connections: see README). The same
/// send as the loop's first (`try_writev` with nothing sent yet).
#[inline(never)]
fn socket_write_first(fd: c_int, iov: *const iovec, cnt: c_int, total: usize) -> FirstSend {
    let r = send_nowait(fd, iov, cnt, libc::MSG_DONTWAIT | nosignal_after(0));
    if r >= 0 {
        let n = r as usize;
        return if n >= total || n == 0 {
            FirstSend::Done(r)
        } else {
            FirstSend::Partly(n)
        };
    }
    match errno() {
        libc::EAGAIN | libc::ENOTSOCK => FirstSend::Again,
        _ => FirstSend::Done(sent_or_epipe(r, 0, 0)),
    }
}

/// `write_iov` once `sent` bytes are out, through the general loop.
fn write_iov_from(
    fd: c_int,
    e: &FdEntry,
    iov: *const iovec,
    cnt: c_int,
    total: usize,
    sent: usize,
    caller_errno: i32,
) -> Option<isize> {
    // The unsent part of `iov`, rebuilt only when more has been sent.
    let mut tail: Vec<iovec> = Vec::new();
    let mut tail_at = 0;
    let written = write_all_from(fd, e, total, sent, caller_errno, |fd, e, done| {
        if done == 0 {
            return try_writev(fd, e, iov, cnt, false);
        }
        if tail_at != done {
            tail = iov_tail(iov, cnt, done);
            tail_at = done;
        }
        try_writev(fd, e, tail.as_ptr(), tail.len() as c_int, true)
    });
    match written {
        Written::Done(r) => Some(r),
        Written::Rest(0) => None,
        Written::Rest(done) => {
            let rest = iov_tail(iov, cnt, done);
            // SAFETY: writing the rest of the caller's buffers.
            let r = unsafe { real::writev(fd, rest.as_ptr(), rest.len() as c_int) };
            Some((done + r.max(0) as usize) as isize)
        }
    }
}

#[no_mangle]
#[link_section = ".text.hot.corun"] // a forked child's path: build.rs
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    if crate::sched::lone::nothing_parks() {
        // A lone entry (hooks/mod.rs): what the rest does when nothing parks.
        // SAFETY: the caller's read contract.
        return unsafe { real::read(fd, buf, n) };
    }
    super::rw_entry();
    if let Some(e) = super::program_nonblocking(fd) {
        // SAFETY: the caller's read contract.
        return unsafe { read_as_is(e, fd, buf, n) };
    }
    // SAFETY: as above.
    unsafe { read_hooked(fd, buf, n) }
}

/// The program's own non-blocking fd (`program_nonblocking`): its call as
/// is, apart from the entry so that the lone one keeps no frame.
#[inline(never)]
unsafe fn read_as_is(e: &'static FdEntry, fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    // SAFETY: the caller's read contract.
    super::nb_read_as_is(Some(e), || unsafe { nocancel::read(fd, buf, n) })
}

#[inline(never)]
unsafe fn read_hooked(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    let parks = parking();
    let mut e = super::read_entry(fd, parks);
    if parks && super::entry_parks(e) {
        let iov = iovec {
            iov_base: buf,
            iov_len: n,
        };
        if let Some(r) = read_iov(fd, &iov, 1) {
            return r;
        }
        e = fdtable::peek(fd);
    }
    let before = super::before_nb_read_at(e);
    // SAFETY: the caller's read contract.
    after_nb_read(before, unsafe { real::read(fd, buf, n) })
}

#[no_mangle]
#[link_section = ".text.hot.corun"] // a forked child's path: build.rs
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
    if crate::sched::lone::nothing_parks() {
        // A lone entry (hooks/mod.rs): what the rest does when nothing parks.
        // SAFETY: the caller's write contract.
        return unsafe { real::write(fd, buf, n) };
    }
    super::rw_entry();
    if super::program_nonblocking(fd).is_some() {
        // SAFETY: as above (an fd the program made non-blocking itself).
        return unsafe { nocancel::write(fd, buf, n) };
    }
    // SAFETY: as above.
    unsafe { write_hooked(fd, buf, n) }
}

#[inline(never)]
unsafe fn write_hooked(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
    if parking_on(fd) {
        let iov = iovec {
            iov_base: buf as *mut c_void,
            iov_len: n,
        };
        if let Some(r) = write_iov(fd, &iov, 1) {
            return r;
        }
    }
    // SAFETY: the caller's write contract.
    unsafe { real::write(fd, buf, n) }
}

#[no_mangle]
pub unsafe extern "C" fn readv(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
    if crate::sched::lone::nothing_parks() {
        // A lone entry (hooks/mod.rs): what the rest does when nothing parks.
        // SAFETY: the caller's readv contract.
        return unsafe { real::readv(fd, iov, cnt) };
    }
    super::rw_entry();
    if let Some(e) = super::program_nonblocking(fd) {
        // SAFETY: the caller's readv contract.
        return unsafe { readv_as_is(e, fd, iov, cnt) };
    }
    // SAFETY: as above.
    unsafe { readv_hooked(fd, iov, cnt) }
}

/// The program's own non-blocking fd (`program_nonblocking`): its call as
/// is, apart from the entry so that the lone one keeps no frame.
#[inline(never)]
unsafe fn readv_as_is(e: &'static FdEntry, fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
    // SAFETY: the caller's readv contract.
    super::nb_read_as_is(Some(e), || unsafe { nocancel::readv(fd, iov, cnt) })
}

#[inline(never)]
unsafe fn readv_hooked(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
    let parks = parking();
    if parks && fd_parks(fd) && cnt > 0 && cnt <= libc::UIO_MAXIOV {
        if let Some(r) = read_iov(fd, iov, cnt) {
            return r;
        }
    }
    let before = before_nb_read(fd, parks);
    // SAFETY: the caller's readv contract.
    after_nb_read(before, unsafe { real::readv(fd, iov, cnt) })
}

#[no_mangle]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
    if crate::sched::lone::nothing_parks() {
        // A lone entry (hooks/mod.rs): what the rest does when nothing parks.
        // SAFETY: the caller's writev contract.
        return unsafe { real::writev(fd, iov, cnt) };
    }
    super::rw_entry();
    if super::program_nonblocking(fd).is_some() {
        // SAFETY: as above (an fd the program made non-blocking itself).
        return unsafe { nocancel::writev(fd, iov, cnt) };
    }
    // SAFETY: as above.
    unsafe { writev_hooked(fd, iov, cnt) }
}

#[inline(never)]
unsafe fn writev_hooked(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
    if super::program_nonblocking(fd).is_none()
        && parking_on(fd)
        && cnt > 0
        && cnt <= libc::UIO_MAXIOV
    {
        if let Some(r) = write_iov(fd, iov, cnt) {
            return r;
        }
    }
    // SAFETY: the caller's writev contract.
    unsafe { real::writev(fd, iov, cnt) }
}

extern "C" {
    /// glibc's report of a fortified call given a buffer too small: prints
    /// "buffer overflow detected" and aborts.
    pub(super) fn __chk_fail() -> !;
}

#[no_mangle]
pub unsafe extern "C" fn __read_chk(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    buflen: size_t,
) -> ssize_t {
    if n > buflen {
        // SAFETY: glibc's own failure report, as the real __read_chk does.
        unsafe { __chk_fail() }
    }
    // SAFETY: the caller's read contract.
    unsafe { read(fd, buf, n) }
}
