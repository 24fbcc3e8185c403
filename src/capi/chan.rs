//! The channel functions of `include/corun.h`: `corun_chan_*` and
//! `corun_select`, on `sched::chan`.
//!
//! A `corun_chan_t *` is a boxed `Chan`. Results are errno values: EPIPE
//! (closed), EAGAIN (a try found nothing), ETIMEDOUT, ECANCELED (the
//! coroutine's cancel token), EINVAL (a NULL channel, a NULL element of a
//! non-zero size, a bad select case).

use std::ffi::{c_int, c_void};

use crate::sched::chan::{self, Case, Chan, Error, Mode, MAX_CASES};
use crate::sys::set_errno;

/// `corun_sel_t`.
#[repr(C)]
pub struct SelCase {
    op: c_int,
    fd: c_int,
    chan: *mut Chan,
    elem: *mut c_void,
    err: c_int,
}

const SEL_SEND: c_int = 1;
const SEL_RECV: c_int = 2;
const SEL_READ: c_int = 3;
const SEL_WRITE: c_int = 4;

fn errno_of(e: Error) -> c_int {
    match e {
        Error::Closed => libc::EPIPE,
        Error::WouldBlock => libc::EAGAIN,
        Error::TimedOut => libc::ETIMEDOUT,
        Error::Cancelled => libc::ECANCELED,
    }
}

fn result(r: Result<(), Error>) -> c_int {
    r.map_or_else(errno_of, |_| 0)
}

/// A deadline `ns` from now.
fn after(ns: u64) -> Mode {
    Mode::Block(Some(crate::sys::now_ns().saturating_add(ns)))
}

/// The channel behind a handle (None for NULL).
fn chan<'a>(ch: *mut Chan) -> Option<&'a Chan> {
    // SAFETY: a handle from corun_chan_new, not yet freed (the caller's
    // contract), or NULL.
    unsafe { ch.as_ref() }
}

fn send(ch: *mut Chan, elem: *const c_void, mode: Mode) -> c_int {
    match chan(ch) {
        Some(c) if !elem.is_null() || c.elem_size() == 0 => result(c.send(elem as *const u8, mode)),
        _ => libc::EINVAL,
    }
}

fn recv(ch: *mut Chan, elem: *mut c_void, mode: Mode) -> c_int {
    match chan(ch) {
        Some(c) => result(c.recv(elem as *mut u8, mode)),
        None => libc::EINVAL,
    }
}

/// A channel of `capacity` elements of `elem_size` bytes (0: unbuffered).
#[no_mangle]
pub extern "C" fn corun_chan_new(elem_size: usize, capacity: usize) -> *mut Chan {
    if elem_size > chan::MAX_ELEM {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    match Chan::new(elem_size, capacity) {
        Some(c) => Box::into_raw(Box::new(c)),
        None => {
            set_errno(libc::ENOMEM);
            std::ptr::null_mut()
        }
    }
}

#[no_mangle]
pub extern "C" fn corun_chan_send(ch: *mut Chan, elem: *const c_void) -> c_int {
    send(ch, elem, Mode::Block(None))
}

#[no_mangle]
pub extern "C" fn corun_chan_recv(ch: *mut Chan, elem: *mut c_void) -> c_int {
    recv(ch, elem, Mode::Block(None))
}

#[no_mangle]
pub extern "C" fn corun_chan_trysend(ch: *mut Chan, elem: *const c_void) -> c_int {
    send(ch, elem, Mode::Try)
}

#[no_mangle]
pub extern "C" fn corun_chan_tryrecv(ch: *mut Chan, elem: *mut c_void) -> c_int {
    recv(ch, elem, Mode::Try)
}

#[no_mangle]
pub extern "C" fn corun_chan_send_timeout(ch: *mut Chan, elem: *const c_void, ns: u64) -> c_int {
    send(ch, elem, after(ns))
}

#[no_mangle]
pub extern "C" fn corun_chan_recv_timeout(ch: *mut Chan, elem: *mut c_void, ns: u64) -> c_int {
    recv(ch, elem, after(ns))
}

#[no_mangle]
pub extern "C" fn corun_chan_close(ch: *mut Chan) -> c_int {
    match chan(ch) {
        Some(c) => result(c.close()),
        None => libc::EINVAL,
    }
}

/// Elements buffered now (0 for NULL).
#[no_mangle]
pub extern "C" fn corun_chan_len(ch: *mut Chan) -> usize {
    chan(ch).map_or(0, |c| c.len())
}

/// Frees a channel nobody uses any more (NULL: nothing).
#[no_mangle]
pub extern "C" fn corun_chan_free(ch: *mut Chan) {
    if !ch.is_null() {
        // SAFETY: a handle from corun_chan_new, freed once (the caller's
        // contract: no operation is in progress or will start).
        drop(unsafe { Box::from_raw(ch) });
    }
}

/// Waits until one of `n` cases can proceed and performs it; `*fired` is
/// its index and its `err` 0, EPIPE (closed channel) or EBADF (invalid
/// fd). `timeout_ns` < 0: no timeout; 0: EAGAIN when none is ready.
///
/// # Safety
/// `cases` points at `n` cases (or n is 0); `fired` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn corun_select(
    cases: *mut SelCase,
    n: usize,
    timeout_ns: i64,
    fired: *mut usize,
) -> c_int {
    if n > MAX_CASES || (n > 0 && cases.is_null()) {
        return libc::EINVAL;
    }
    let sc: &mut [SelCase] = if n == 0 {
        &mut []
    } else {
        // SAFETY: `n` cases at `cases`, the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(cases, n) }
    };
    let mut v: Vec<Case> = Vec::with_capacity(n);
    for c in sc.iter() {
        let case = match (c.op, chan(c.chan)) {
            (SEL_SEND, Some(ch)) if !c.elem.is_null() || ch.elem_size() == 0 => {
                Case::Send(ch, c.elem as *const u8)
            }
            (SEL_RECV, Some(ch)) => Case::Recv(ch, c.elem as *mut u8),
            (SEL_READ, _) if c.fd >= 0 => Case::Read(c.fd),
            (SEL_WRITE, _) if c.fd >= 0 => Case::Write(c.fd),
            _ => return libc::EINVAL,
        };
        v.push(case);
    }
    let mode = match timeout_ns {
        t if t < 0 => Mode::Block(None),
        0 => Mode::Try,
        t => after(t as u64),
    };
    match chan::select(&v, mode) {
        Ok((i, bad)) => {
            let c = &mut sc[i];
            c.err = match (bad, c.op) {
                (false, _) => 0,
                (true, SEL_SEND | SEL_RECV) => libc::EPIPE,
                (true, _) => libc::EBADF,
            };
            if !fired.is_null() {
                // SAFETY: writable, the caller's contract.
                unsafe { *fired = i };
            }
            0
        }
        Err(e) => errno_of(e),
    }
}
