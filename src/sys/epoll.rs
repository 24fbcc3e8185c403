//! epoll and eventfd, as thin as they come.
//!
//! The netpoller registers each fd once, edge-triggered, for input, output,
//! priority data and peer hang-up. Waits take a nanosecond timeout through `epoll_pwait2`
//! (Linux 5.11), so a 100 us sleep is not rounded up to a millisecond; on an
//! older kernel (ENOSYS) the wait falls back to `epoll_pwait` in milliseconds,
//! rounded up, never down. Calls go straight to the kernel with `syscall(2)`:
//! `epoll_wait` is interposed by corun and must not be re-entered here.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};

/// Interest of every registration: edge-triggered in/out/rdhup, and pri
/// (out-of-band data; `poll` with POLLPRI waits for it).
pub const INTEREST: u32 =
    (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLPRI | libc::EPOLLET) as u32;

static NO_PWAIT2: AtomicBool = AtomicBool::new(false);

/// Whether the kernel was seen to lack `epoll_pwait2` (Linux < 5.11, or
/// valgrind): waits then take a millisecond timeout through `epoll_pwait`.
pub fn pwait2_missing() -> bool {
    NO_PWAIT2.load(Ordering::Relaxed)
}

/// An `epoll_pwait2` failed with ENOSYS.
pub fn note_pwait2_missing() {
    NO_PWAIT2.store(true, Ordering::Relaxed);
}

/// An epoll instance owned by one worker.
#[derive(Clone, Copy)]
pub struct Epoll {
    fd: i32,
}

impl Epoll {
    pub fn new() -> std::io::Result<Epoll> {
        // SAFETY: epoll_create1 has no memory preconditions.
        // (raw syscall: `epoll_create1` is interposed by corun)
        let fd = unsafe { crate::sys::real::syscall!(libc::SYS_epoll_create1, libc::EPOLL_CLOEXEC) }
            as i32;
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Epoll {
            fd: super::move_fd_high(fd),
        })
    }

    /// No instance yet (a worker whose thread has not started): -1.
    pub const fn unopened() -> Epoll {
        Epoll { fd: -1 }
    }

    /// The instance `fd` (one `new` made).
    pub const fn from_fd(fd: i32) -> Epoll {
        Epoll { fd }
    }

    pub fn fd(&self) -> i32 {
        self.fd
    }

    /// Registers `fd` with `data`; an fd already present (a dup of a
    /// description registered before) is modified instead.
    pub fn register(&self, fd: i32, data: u64) -> Result<(), i32> {
        let mut ev = libc::epoll_event {
            events: INTEREST,
            u64: data,
        };
        // SAFETY: `ev` is a valid epoll_event for the duration of the call.
        let r = unsafe { libc::epoll_ctl(self.fd, libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if r == 0 {
            return Ok(());
        }
        let e = super::errno();
        if e == libc::EEXIST {
            // SAFETY: as above.
            let r = unsafe { libc::epoll_ctl(self.fd, libc::EPOLL_CTL_MOD, fd, &mut ev) };
            if r == 0 {
                return Ok(());
            }
            return Err(super::errno());
        }
        Err(e)
    }

    /// Removes `fd` (used when a registration must move, e.g. after fork).
    pub fn deregister(&self, fd: i32) {
        // SAFETY: a NULL event is allowed for EPOLL_CTL_DEL since Linux 2.6.9.
        unsafe { libc::epoll_ctl(self.fd, libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
    }

    /// Waits for events; `timeout_ns` None blocks, Some(0) polls.
    /// Returns the events the kernel wrote to the front of `events` (none
    /// on EINTR). The buffer may be uninitialised: the kernel only writes
    /// it, and a worker polls every 61 tasks, where zeroing 256 entries
    /// (3 KiB) cost 100 instructions per yield round trip.
    pub fn wait<'a>(
        &self,
        events: &'a mut [MaybeUninit<libc::epoll_event>],
        timeout_ns: Option<u64>,
    ) -> &'a [libc::epoll_event] {
        let n = self.wait_raw(events, timeout_ns);
        // SAFETY: the kernel initialised the first `n` entries (n <= len).
        unsafe { std::slice::from_raw_parts(events.as_ptr().cast::<libc::epoll_event>(), n) }
    }

    fn wait_raw(
        &self,
        events: &mut [MaybeUninit<libc::epoll_event>],
        timeout_ns: Option<u64>,
    ) -> usize {
        let max = events.len() as i32;
        let n = if !NO_PWAIT2.load(Ordering::Relaxed) {
            let ts = timeout_ns.map(super::ns_timespec);
            let tsp = ts
                .as_ref()
                .map_or(std::ptr::null(), |t| t as *const libc::timespec);
            // SAFETY: `events` is writable for `max` entries; `tsp` is NULL or valid.
            let n = unsafe {
                crate::sys::real::syscall!(
                    libc::SYS_epoll_pwait2,
                    self.fd,
                    events.as_mut_ptr(),
                    max,
                    tsp,
                    std::ptr::null::<libc::sigset_t>(),
                    0usize,
                )
            };
            if n < 0 && super::errno() == libc::ENOSYS {
                NO_PWAIT2.store(true, Ordering::Relaxed);
                return self.wait_raw(events, timeout_ns);
            }
            n
        } else {
            let ms: i64 = match timeout_ns {
                None => -1,
                Some(ns) => ns.div_ceil(1_000_000).min(i32::MAX as u64) as i64,
            };
            // SAFETY: as above.
            unsafe {
                crate::sys::real::syscall!(
                    libc::SYS_epoll_pwait,
                    self.fd,
                    events.as_mut_ptr(),
                    max,
                    ms,
                    std::ptr::null::<libc::sigset_t>(),
                    0usize,
                )
            }
        };
        if n < 0 {
            0
        } else {
            (n as usize).min(events.len())
        }
    }
}

/// An eventfd a worker sleeps on, written by whoever wakes it. The fd is
/// atomic only so a forked child can give itself a new one.
pub struct EventFd {
    fd: std::sync::atomic::AtomicI32,
}

impl EventFd {
    pub fn new() -> std::io::Result<EventFd> {
        // SAFETY: eventfd has no memory preconditions.
        // (raw syscall: `eventfd` is interposed by corun)
        let fd = unsafe {
            crate::sys::real::syscall!(
                libc::SYS_eventfd2,
                0,
                libc::EFD_CLOEXEC | libc::EFD_NONBLOCK,
            )
        } as i32;
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(EventFd {
            fd: std::sync::atomic::AtomicI32::new(super::move_fd_high(fd)),
        })
    }

    /// No eventfd yet (a worker whose thread has not started): -1, which
    /// `renew` replaces. Nobody signals it meanwhile: only a sleeping
    /// worker is signalled.
    pub const fn unopened() -> EventFd {
        EventFd {
            fd: std::sync::atomic::AtomicI32::new(-1),
        }
    }

    pub fn fd(&self) -> i32 {
        self.fd.load(Ordering::Relaxed)
    }

    /// Replaces the fd by a fresh eventfd (in a forked child: the old one is
    /// shared with the parent; at a worker's start: none yet). The old fd
    /// is left open for the parent's sake only in the parent; here it is
    /// closed.
    pub fn renew(&self) -> std::io::Result<()> {
        let new = EventFd::new()?.fd();
        let old = self.fd.swap(new, Ordering::Relaxed);
        if old >= 0 {
            // SAFETY: raw close of our own old fd (the hook would refuse it).
            unsafe { crate::sys::real::syscall!(libc::SYS_close, old) };
        }
        Ok(())
    }

    /// Adds one to the counter, making the fd readable.
    pub fn signal(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 (raw syscall: `write` is hooked).
        unsafe {
            crate::sys::real::syscall!(libc::SYS_write, self.fd(), &one as *const u64, 8usize)
        };
    }

    /// Resets the counter to zero.
    pub fn drain(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a live u64; the fd is non-blocking.
        unsafe {
            crate::sys::real::syscall!(libc::SYS_read, self.fd(), &mut v as *mut u64, 8usize)
        };
    }
}
