//! `sendfile`, `sendfile64`, `splice`.
//!
//! Neither call has a per-call non-blocking flag for a socket: the socket
//! side blocks unless O_NONBLOCK is set on the open file description, which
//! corun never does (docs/ARCHITECTURE.md §5.1). So:
//!
//! - `sendfile` from a regular file to a pipe waits until the pipe has room
//!   and then makes the real call, which moves what fits without waiting
//!   (natively too, a blocking sendfile into a pipe returns a short count
//!   once the pipe is full).
//! - `sendfile` from a regular file to a socket, in a coroutine, is
//!   done as the kernel would, with a bounce buffer: `pread` a chunk of the
//!   file, write it with the parking `write` (MSG_DONTWAIT / RWF_NOWAIT
//!   attempts, park on EAGAIN), advance. The count, the file offset (the
//!   `offset` argument, or the file position when it is NULL) and the
//!   errors (EPIPE with SIGPIPE, SO_SNDTIMEO with the partial count) are
//!   those of the blocking call; only the zero copy is lost. Any other
//!   combination passes through.
//! - `splice` waits until its socket or pipe ends are ready (parking), then
//!   makes the real call with SPLICE_F_NONBLOCK, and parks again on EAGAIN.
//!   A socket -> pipe splice then never blocks (the kernel stops at the data
//!   that is there). A pipe -> socket splice is capped at 16 KiB per call
//!   (a short count, which splice callers loop on), so that a writable
//!   socket takes it without waiting; a socket with less room than that
//!   can still block its worker briefly (README: known limits).
//!
//! A program that asked for non-blocking (SPLICE_F_NONBLOCK, or O_NONBLOCK
//! on the socket) gets the real call.

use std::ffi::c_int;
use std::sync::atomic::Ordering;

use libc::{loff_t, off_t, size_t, ssize_t};

use super::rw::write_iov;
use super::{fd_kind, ready_now, user_nonblocking};
use crate::sched::fdtable::{self, Dir, KIND_FILE, KIND_NOWAIT, KIND_SOCKET};
use crate::sched::{park_until_any_ready, parking};
use crate::sys::{errno, real, set_errno};

mod next {
    use libc::{c_int, c_uint, loff_t, off_t, size_t, ssize_t};
    crate::sys::real::real_fns! {
        fn sendfile(out: c_int, inp: c_int, off: *mut off_t, n: size_t) -> ssize_t;
        fn sendfile64(out: c_int, inp: c_int, off: *mut off_t, n: size_t) -> ssize_t;
        fn splice(inp: c_int, off_in: *mut loff_t, out: c_int, off_out: *mut loff_t,
            n: size_t, flags: c_uint) -> ssize_t;
    }
}

const CHUNK: usize = 64 * 1024;
const SPLICE_TO_SOCKET_MAX: usize = 16 * 1024;

/// Whether `fd` is a socket or pipe the program left blocking.
fn parkable(fd: c_int) -> bool {
    match fdtable::get(fd) {
        Some(e) => {
            let k = fd_kind(fd, e);
            (k == KIND_SOCKET || k == KIND_NOWAIT) && !user_nonblocking(fd, e)
        }
        None => false,
    }
}

fn is_pipe(fd: c_int) -> bool {
    // SAFETY: a zeroed stat is a valid out-buffer; raw syscall (the stat
    // family may be interposed).
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let r = unsafe { crate::sys::real::syscall!(libc::SYS_fstat, fd, &mut st) };
    r == 0 && st.st_mode & libc::S_IFMT == libc::S_IFIFO
}

fn is_file(fd: c_int) -> bool {
    fdtable::get(fd).is_some_and(|e| fd_kind(fd, e) == KIND_FILE)
}

/// sendfile to a pipe: wait until it has room, then the real call, which
/// then moves what fits without waiting (a short count, as natively: a
/// blocking sendfile into a pipe returns once it has filled it).
fn sendfile_to_pipe(
    out: c_int,
    inp: c_int,
    offset: *mut off_t,
    count: size_t,
    real_fn: unsafe fn(c_int, c_int, *mut off_t, size_t) -> ssize_t,
) -> ssize_t {
    let e = match fdtable::get(out) {
        // SAFETY: the caller's sendfile contract.
        None => return unsafe { real_fn(out, inp, offset, count) },
        Some(e) => e,
    };
    loop {
        let seen = e.snapshot(Dir::Write);
        if ready_now(out, libc::POLLOUT) {
            // SAFETY: the caller's sendfile contract.
            return unsafe { real_fn(out, inp, offset, count) };
        }
        park_until_any_ready(&[(out, Dir::Write, seen)], None);
    }
}

/// sendfile through a bounce buffer (to a socket) or after readiness (to
/// a pipe); None: make the real call.
fn sendfile_parking(
    out: c_int,
    inp: c_int,
    offset: *mut off_t,
    count: size_t,
    real_fn: unsafe fn(c_int, c_int, *mut off_t, size_t) -> ssize_t,
) -> Option<ssize_t> {
    if !is_file(inp) || !parkable(out) {
        return None;
    }
    if fdtable::get(out).is_some_and(|e| e.policy.kind.load(Ordering::Relaxed) == KIND_NOWAIT) {
        return Some(sendfile_to_pipe(out, inp, offset, count, real_fn));
    }
    let mut pos: i64 = if offset.is_null() {
        // SAFETY: lseek is not interposed; plain integers.
        let p = unsafe { libc::lseek64(inp, 0, libc::SEEK_CUR) };
        if p < 0 {
            return None;
        }
        p
    } else {
        // SAFETY: non-null and readable per the sendfile contract.
        unsafe { *offset }
    };
    let mut buf = vec![0u8; CHUNK.min(count.max(1))];
    let mut sent = 0usize;
    let mut failed = false;
    while sent < count {
        let want = buf.len().min(count - sent);
        // SAFETY: `buf` is writable for `want` bytes.
        let n = unsafe { real::pread64(inp, buf.as_mut_ptr().cast(), want, pos) };
        if n < 0 {
            failed = sent == 0;
            break;
        }
        if n == 0 {
            break;
        }
        let iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: n as usize,
        };
        let w = match write_iov(out, &iov, 1) {
            Some(w) => w,
            None => {
                set_errno(libc::EINVAL);
                -1
            }
        };
        if w < 0 {
            failed = sent == 0;
            break;
        }
        sent += w as usize;
        pos += w as i64;
        if (w as usize) < n as usize {
            break;
        }
    }
    let err = errno();
    if offset.is_null() {
        // SAFETY: as above.
        unsafe { libc::lseek64(inp, pos, libc::SEEK_SET) };
    } else {
        // SAFETY: non-null and writable per the sendfile contract.
        unsafe { *offset = pos };
    }
    set_errno(err);
    Some(if failed { -1 } else { sent as ssize_t })
}

#[no_mangle]
pub unsafe extern "C" fn sendfile(out: c_int, inp: c_int, off: *mut off_t, n: size_t) -> ssize_t {
    if crate::sched::lone::nothing_parks() {
        // A lone entry (hooks/mod.rs): what the rest does when nothing parks.
        // SAFETY: the caller's sendfile contract.
        return unsafe { next::sendfile(out, inp, off, n) };
    }
    // SAFETY: as above.
    unsafe { sendfile_hooked(out, inp, off, n) }
}

#[inline(never)]
unsafe fn sendfile_hooked(out: c_int, inp: c_int, off: *mut off_t, n: size_t) -> ssize_t {
    if parking() {
        if let Some(r) = sendfile_parking(out, inp, off, n, next::sendfile) {
            return r;
        }
    }
    // SAFETY: the caller's sendfile contract.
    unsafe { next::sendfile(out, inp, off, n) }
}

#[no_mangle]
pub unsafe extern "C" fn sendfile64(out: c_int, inp: c_int, off: *mut off_t, n: size_t) -> ssize_t {
    if crate::sched::lone::nothing_parks() {
        // A lone entry (hooks/mod.rs): what the rest does when nothing parks.
        // SAFETY: the caller's sendfile64 contract.
        return unsafe { next::sendfile64(out, inp, off, n) };
    }
    // SAFETY: as above.
    unsafe { sendfile64_hooked(out, inp, off, n) }
}

#[inline(never)]
unsafe fn sendfile64_hooked(out: c_int, inp: c_int, off: *mut off_t, n: size_t) -> ssize_t {
    if parking() {
        if let Some(r) = sendfile_parking(out, inp, off, n, next::sendfile64) {
            return r;
        }
    }
    // SAFETY: the caller's sendfile contract.
    unsafe { next::sendfile64(out, inp, off, n) }
}

/// splice with readiness first; None: make the real call.
fn splice_parking(
    inp: c_int,
    off_in: *mut loff_t,
    out: c_int,
    off_out: *mut loff_t,
    n: size_t,
    flags: u32,
) -> Option<ssize_t> {
    let (pin, pout) = (parkable(inp), parkable(out));
    if !pin && !pout || !is_pipe(inp) && !is_pipe(out) {
        // Nothing to wait on, or no pipe at all (the kernel says EINVAL).
        return None;
    }
    // Only blocking ends that are sockets or pipes are waited on; a
    // non-blocking one makes the real call the program asked for.
    let nonblocking_end = |fd: c_int| {
        fdtable::get(fd).is_some_and(|e| {
            let k = fd_kind(fd, e);
            (k == KIND_SOCKET || k == KIND_NOWAIT) && user_nonblocking(fd, e)
        })
    };
    if nonblocking_end(inp) || nonblocking_end(out) {
        return None;
    }
    let to_socket =
        fdtable::get(out).is_some_and(|e| e.policy.kind.load(Ordering::Relaxed) == KIND_SOCKET);
    let n = if to_socket {
        n.min(SPLICE_TO_SOCKET_MAX)
    } else {
        n
    };
    loop {
        let mut waits = Vec::with_capacity(2);
        if pin {
            if let Some(e) = fdtable::get(inp) {
                waits.push((inp, Dir::Read, e.snapshot(Dir::Read)));
            }
        }
        if pout {
            if let Some(e) = fdtable::get(out) {
                waits.push((out, Dir::Write, e.snapshot(Dir::Write)));
            }
        }
        let ready =
            (!pin || ready_now(inp, libc::POLLIN)) && (!pout || ready_now(out, libc::POLLOUT));
        if ready {
            // SAFETY: the caller's splice contract.
            let r = unsafe {
                next::splice(
                    inp,
                    off_in,
                    out,
                    off_out,
                    n,
                    flags | libc::SPLICE_F_NONBLOCK,
                )
            };
            if r >= 0 || errno() != libc::EAGAIN {
                return Some(r);
            }
        }
        park_until_any_ready(&waits, None);
    }
}

#[no_mangle]
pub unsafe extern "C" fn splice(
    inp: c_int,
    off_in: *mut loff_t,
    out: c_int,
    off_out: *mut loff_t,
    n: size_t,
    flags: std::ffi::c_uint,
) -> ssize_t {
    if parking() && flags & libc::SPLICE_F_NONBLOCK == 0 {
        if let Some(r) = splice_parking(inp, off_in, out, off_out, n, flags) {
            return r;
        }
    }
    // SAFETY: the caller's splice contract.
    unsafe { next::splice(inp, off_in, out, off_out, n, flags) }
}
