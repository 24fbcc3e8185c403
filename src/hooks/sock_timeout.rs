//! A socket's SO_RCVTIMEO/SO_SNDTIMEO as a blocking call under corun obeys
//! them: what `setsockopt` recorded in the fd entry, else asked of the
//! kernel once (an inherited socket, or one whose description is shared),
//! and the deadline of one call, looked up only at its first EAGAIN (the
//! fast path never reads it). See `hooks/mod.rs` for the calls that use it.

use std::sync::atomic::Ordering;

use crate::sched::fdtable::{self, Dir, FdEntry};

use super::fd_kind;

/// Stored in `rcv_timeo`/`snd_timeo`: the socket has no timeout (0 means
/// not known yet).
pub(crate) const TIMEO_NONE: u64 = u64::MAX;

/// SO_RCVTIMEO (reads) or SO_SNDTIMEO (writes) of `fd` in ns, None when
/// there is none or `fd` is not a socket. Asked of the kernel when not
/// known (an inherited socket) or when the description is shared.
pub(crate) fn sock_timeout(fd: i32, e: &FdEntry, dir: Dir) -> Option<u64> {
    let slot = e.policy.timeo(dir);
    let v = slot.load(Ordering::Relaxed);
    if v != 0 && !e.policy.shared.load(Ordering::Relaxed) {
        return (v != TIMEO_NONE).then_some(v);
    }
    if fd_kind(fd, e) != fdtable::KIND_SOCKET {
        return None;
    }
    let name = match dir {
        Dir::Read => libc::SO_RCVTIMEO,
        Dir::Write => libc::SO_SNDTIMEO,
    };
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    let mut len = std::mem::size_of::<libc::timeval>() as libc::socklen_t;
    // SAFETY: valid out-pointers of the declared size.
    let r = unsafe {
        crate::sys::real::getsockopt(
            fd,
            libc::SOL_SOCKET,
            name,
            &mut tv as *mut libc::timeval as *mut libc::c_void,
            &mut len,
        )
    };
    let ns = if r == 0 { timeval_ns(&tv) } else { TIMEO_NONE };
    slot.store(ns, Ordering::Relaxed);
    (ns != TIMEO_NONE).then_some(ns)
}

/// A socket timeout as the kernel reads it: zero is none, a negative one
/// expires at once (1 ns here).
pub(crate) fn timeval_ns(tv: &libc::timeval) -> u64 {
    if tv.tv_sec == 0 && tv.tv_usec == 0 {
        TIMEO_NONE
    } else if tv.tv_sec < 0 {
        1
    } else {
        (tv.tv_sec as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(tv.tv_usec.max(0) as u64 * 1000)
            .clamp(1, TIMEO_NONE - 1)
    }
}

/// The deadline of one blocking call, computed at its first EAGAIN (the
/// fast path never looks the socket timeout up): a socket's timeout, or
/// for a read of a terminal with VMIN = 0 its VTIME (`hooks/tty_read.rs`).
#[derive(Default)]
pub(crate) struct Deadline {
    at: Option<Option<u64>>,
    /// The deadline is a terminal's VTIME: reaching it ends the read with
    /// 0, and a signal handler with SA_RESTART lets the read go on (n_tty
    /// restarts), unlike a socket timeout's EINTR.
    tty: bool,
}

impl Deadline {
    /// A deadline the call itself gives (monotonic ns; None: none), not the
    /// socket's timeout.
    pub(crate) fn at(deadline: Option<u64>) -> Deadline {
        Deadline {
            at: Some(deadline),
            tty: false,
        }
    }

    pub(crate) fn get(&mut self, fd: i32, e: &FdEntry, dir: Dir) -> Option<u64> {
        let tty = &mut self.tty;
        *self.at.get_or_insert_with(|| {
            let wait = sock_timeout(fd, e, dir).or_else(|| {
                let t = (dir == Dir::Read && fd_kind(fd, e) == fdtable::KIND_OTHER)
                    .then(|| super::tty_read::vmin0_wait_ns(fd))
                    .flatten();
                *tty = t.is_some();
                t
            });
            wait.map(|t| crate::sys::now_ns().saturating_add(t))
        })
    }

    /// Whether a signal handler that ran while the call waited ends it with
    /// EINTR even with SA_RESTART: a socket with a timeout (signal(7)) or a
    /// deadline of the call's own.
    pub(crate) fn ends_in_eintr(&mut self, fd: i32, e: &FdEntry, dir: Dir) -> bool {
        self.get(fd, e, dir).is_some() && !self.tty
    }

    /// Whether the deadline is a terminal's VTIME (as of the last `get`).
    pub(crate) fn is_tty_vtime(&self) -> bool {
        self.tty
    }
}
