//! liburing's waits: `__io_uring_get_cqe`, `io_uring_wait_cqes`,
//! `io_uring_submit_and_wait`, `io_uring_submit_and_wait_timeout`, and
//! `io_uring_queue_init_params`/`io_uring_queue_exit` to keep the ring fd's
//! entry right.
//!
//! # Why here
//!
//! A program waits for io_uring completions in `io_uring_enter` with
//! IORING_ENTER_GETEVENTS. liburing (Debian's 2.3) makes that system call
//! inline, so the only places corun can see the wait are liburing's
//! exported functions: the inline `io_uring_wait_cqe`, `io_uring_wait_cqe_nr`
//! and `io_uring_peek_cqe` of <liburing.h> all call `__io_uring_get_cqe`,
//! and `io_uring_wait_cqe_timeout` calls `io_uring_wait_cqes` (through
//! liburing's own PLT, so this hook sees it too). MariaDB's InnoDB waits in
//! the first one on a thread of its own: under corun that thread is a
//! coroutine, and its wait held its worker (with `main` on it, the server
//! never finished starting).
//!
//! # How a wait parks
//!
//! The kernel reports a ring fd readable when its completion queue holds
//! an entry (or overflowed entries or task work wait to be flushed into
//! it), so a wait for `n` completions is:
//!
//! ```text
//!   loop:
//!     snapshot the ring fd's read readiness
//!     overflow or task work flagged? io_uring_enter(GETEVENTS, 0): flushes
//!     n entries between the CQ head and tail? done
//!     deadline passed? done (-ETIME)
//!     park on the ring fd (the netpoller's epoll) or the deadline
//!   then liburing's own call, which finds the entries without waiting
//! ```
//!
//! What corun reads of the program's `struct io_uring` is liburing's ABI,
//! which its inline functions compile into every program: the CQ head and
//! tail pointers, the SQ flags pointer, the setup flags and the ring fd
//! (offsets below, stable across liburing 2.x). The fd is checked to be an
//! io_uring (its /proc/self/fd link, once per fd generation) before corun
//! relies on it. Rings whose completions a poll of the fd does not report
//! (IORING_SETUP_IOPOLL: completions are reaped by the waiter itself;
//! COOP_TASKRUN and DEFER_TASKRUN: they appear only when the submitting
//! thread enters the kernel) keep liburing's blocking call.
//!
//! liburing's waits are not cancellation points: cancellation is held off
//! while parked here, as natively. The sigmask argument of the waits is not
//! applied while parked (the worker's mask is in force), as for `ppoll`.
//!
//! A thread that made any of these calls never moves to another worker
//! (`sched::shed`): SINGLE_ISSUER and DEFER_TASKRUN rings take submissions
//! from the task that set them up only (-EEXIST), registered ring fds are
//! per task (-EBADF), COOP_TASKRUN completion work waits for the task that
//! submitted.
//!
//! Not seen (they block the worker when they wait): `__io_uring_get_cqe`
//! with `submit` > 0 (liburing calls it so for a timeout on kernels without
//! IORING_FEAT_EXT_ARG, before 5.11), a program's own `io_uring_enter`
//! (liburing's exported `io_uring_enter`/`io_uring_enter2`, or the raw
//! system call), `__io_uring_sqring_wait` (SQPOLL), and io_uring use
//! without liburing.

use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use libc::sigset_t;

use super::fdctl::note_new_fd;
use crate::sched::fdtable::{self, Dir, KIND_UNKNOWN};
use crate::sched::{bind_to_kernel_thread, in_coroutine, park_until_ready, FdWait};
use crate::sys::now_ns;

/// liburing's `struct __kernel_timespec` (64-bit fields on every ABI).
#[repr(C)]
pub struct KernelTimespec {
    tv_sec: i64,
    tv_nsec: i64,
}

type Ring = c_void;
type Cqe = c_void;

mod next {
    use super::{Cqe, KernelTimespec, Ring};
    use libc::sigset_t;
    use std::ffi::{c_int, c_uint, c_void};
    crate::sys::real::real_fns! {
        fn __io_uring_get_cqe(ring: *mut Ring, cqe: *mut *mut Cqe, submit: c_uint, wait_nr: c_uint,
            sigmask: *mut sigset_t) -> c_int;
        fn io_uring_wait_cqes(ring: *mut Ring, cqe: *mut *mut Cqe, wait_nr: c_uint,
            ts: *mut KernelTimespec, sigmask: *mut sigset_t) -> c_int;
        fn io_uring_submit(ring: *mut Ring) -> c_int;
        fn io_uring_submit_and_wait(ring: *mut Ring, wait_nr: c_uint) -> c_int;
        fn io_uring_submit_and_wait_timeout(ring: *mut Ring, cqe: *mut *mut Cqe, wait_nr: c_uint,
            ts: *mut KernelTimespec, sigmask: *mut sigset_t) -> c_int;
        fn io_uring_queue_init_params(entries: c_uint, ring: *mut Ring, p: *mut c_void) -> c_int;
        fn io_uring_queue_exit(ring: *mut Ring) -> ();
        fn io_uring_register_ring_fd(ring: *mut Ring) -> c_int;
    }
}

// Offsets in liburing's `struct io_uring` (x86_64): `struct io_uring_sq sq`
// (104 bytes: eight pointers, two unsigned, size_t, pointer, two unsigned,
// two of padding), then `struct io_uring_cq cq` (88 bytes: seven pointers,
// size_t, pointer, four unsigned), then `unsigned flags; int ring_fd;`.
const SQ_KFLAGS: usize = 32;
const CQ_KHEAD: usize = 104;
const CQ_KTAIL: usize = 112;
const SETUP_FLAGS: usize = 192;
const RING_FD: usize = 196;

// <linux/io_uring.h>
const IORING_SETUP_IOPOLL: u32 = 1 << 0;
const IORING_SETUP_COOP_TASKRUN: u32 = 1 << 8;
const IORING_SETUP_DEFER_TASKRUN: u32 = 1 << 13;
const IORING_SQ_CQ_OVERFLOW: u32 = 1 << 1;
const IORING_SQ_TASKRUN: u32 = 1 << 2;
const IORING_ENTER_GETEVENTS: c_uint = 1 << 0;

/// What corun reads of a program's ring.
struct View {
    fd: c_int,
    khead: *const AtomicU32,
    ktail: *const AtomicU32,
    kflags: *const AtomicU32,
}

impl View {
    /// The ring at `ring`, if corun can wait for it by polling its fd.
    ///
    /// # Safety
    /// `ring` is a `struct io_uring` liburing initialised (what every
    /// liburing function is given).
    unsafe fn of(ring: *mut Ring) -> Option<View> {
        if ring.is_null() {
            return None;
        }
        let at = |off: usize| ring.cast::<u8>().wrapping_add(off);
        // SAFETY: fields of the caller's initialised ring, at liburing's
        // ABI offsets (see above); plain reads of words liburing wrote at
        // setup and never changes.
        let (flags, fd, khead, ktail, kflags) = unsafe {
            (
                *at(SETUP_FLAGS).cast::<u32>(),
                *at(RING_FD).cast::<c_int>(),
                *at(CQ_KHEAD).cast::<*const AtomicU32>(),
                *at(CQ_KTAIL).cast::<*const AtomicU32>(),
                *at(SQ_KFLAGS).cast::<*const AtomicU32>(),
            )
        };
        let unpollable =
            IORING_SETUP_IOPOLL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_DEFER_TASKRUN;
        if flags & unpollable != 0 || khead.is_null() || ktail.is_null() || kflags.is_null() {
            return None;
        }
        is_ring_fd(fd).then_some(View {
            fd,
            khead,
            ktail,
            kflags,
        })
    }

    /// Completions between the CQ head and tail.
    fn ready(&self) -> u32 {
        // SAFETY: the ring's mapped CQ indices (valid while the ring is, and
        // the program waits on it); the kernel writes the tail, the program
        // the head.
        unsafe {
            (*self.ktail)
                .load(Ordering::Acquire)
                .wrapping_sub((*self.khead).load(Ordering::Acquire))
        }
    }

    /// Completions the kernel holds back until someone enters with
    /// GETEVENTS: overflowed entries, task work (flagged in the SQ flags).
    fn flush(&self) {
        // SAFETY: as in `ready`, the SQ flags word of the mapped ring.
        let f = unsafe { (*self.kflags).load(Ordering::Acquire) };
        if f & (IORING_SQ_CQ_OVERFLOW | IORING_SQ_TASKRUN) != 0 {
            // SAFETY: io_uring_enter(fd, 0, 0, GETEVENTS, NULL, 0) waits for
            // nothing (min_complete 0) and reads no memory of ours.
            unsafe {
                crate::sys::real::syscall!(
                    libc::SYS_io_uring_enter,
                    self.fd,
                    0 as c_uint,
                    0 as c_uint,
                    IORING_ENTER_GETEVENTS,
                    std::ptr::null::<c_void>(),
                    0usize,
                )
            };
        }
    }
}

/// fds known to be io_uring instances: `(fd + 1) << 32 | generation`.
static RINGS: [AtomicU64; 8] = [const { AtomicU64::new(0) }; 8];
static NEXT_SLOT: AtomicU32 = AtomicU32::new(0);

/// Whether `fd` is an io_uring instance (asked of /proc once per fd
/// generation, remembered for a few fds).
fn is_ring_fd(fd: c_int) -> bool {
    let Some(e) = fdtable::get(fd) else {
        return false;
    };
    let key = ((fd as u64 + 1) << 32) | e.gen.load(Ordering::Acquire) as u64;
    if RINGS.iter().any(|s| s.load(Ordering::Relaxed) == key) {
        return true;
    }
    // "/proc/self/fd/<fd>\0", without allocating.
    let mut path = [0u8; 32];
    let prefix = b"/proc/self/fd/";
    path[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 10];
    let (mut v, mut k) = (fd as u32, 0);
    loop {
        digits[k] = b'0' + (v % 10) as u8;
        k += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for (i, d) in digits[..k].iter().rev().enumerate() {
        path[prefix.len() + i] = *d;
    }
    let mut buf = [0u8; 32];
    // SAFETY: `path` is NUL-terminated (zeroed past the digits); `buf` has
    // the length given.
    let n = unsafe { libc::readlink(path.as_ptr().cast(), buf.as_mut_ptr().cast(), buf.len()) };
    let yes = n > 0 && &buf[..n as usize] == b"anon_inode:[io_uring]";
    if yes {
        let i = NEXT_SLOT.fetch_add(1, Ordering::Relaxed) as usize % RINGS.len();
        RINGS[i].store(key, Ordering::Relaxed);
    }
    yes
}

/// How a wait for completions ended.
enum Waited {
    Ready,
    TimedOut,
    /// The ring fd was closed meanwhile.
    Closed,
    /// The fd cannot be polled: the caller makes liburing's blocking call.
    Unsupported,
}

/// Parks the calling coroutine until `ring` holds `want` completions or
/// the monotonic `deadline` passes. Not a cancellation point.
fn wait_for(ring: &View, want: u32, deadline: Option<u64>) -> Waited {
    let mut old: c_int = 0;
    // SAFETY: our own hook, given a valid state and out-pointer.
    unsafe {
        super::cancel::pthread_setcancelstate(super::cancel::PTHREAD_CANCEL_DISABLE, &mut old)
    };
    let r = loop {
        let Some(e) = fdtable::get(ring.fd) else {
            break Waited::Unsupported;
        };
        let seen = e.snapshot(Dir::Read);
        ring.flush();
        if ring.ready() >= want {
            break Waited::Ready;
        }
        if deadline.is_some_and(|d| now_ns() >= d) {
            break Waited::TimedOut;
        }
        match park_until_ready(ring.fd, Dir::Read, seen, deadline) {
            FdWait::Ready | FdWait::TimedOut => {}
            FdWait::Closed => break Waited::Closed,
            FdWait::NotPollable(_) => break Waited::Unsupported,
        }
    };
    // SAFETY: as above; restores the caller's state.
    unsafe { super::cancel::pthread_setcancelstate(old, std::ptr::null_mut()) };
    r
}

/// The monotonic deadline `ts` from now, or Err(()) for a timespec the
/// kernel would refuse (the caller lets liburing make the call).
fn deadline_of(ts: *const KernelTimespec) -> Result<u64, ()> {
    // SAFETY: the caller's timeout, which liburing would read too.
    let ts = unsafe { &*ts };
    if ts.tv_sec < 0 || !(0..1_000_000_000).contains(&ts.tv_nsec) {
        return Err(());
    }
    let ns = (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64);
    Ok(now_ns().saturating_add(ns))
}

/// Peeks the first completion once `wait_for` found enough: liburing's own
/// call, which does not wait then. -EAGAIN means the entries were
/// liburing's internal ones (it consumed them): wait again.
fn peek(ring: *mut Ring, cqe: *mut *mut Cqe, sigmask: *mut sigset_t) -> c_int {
    // SAFETY: the caller's ring and out-pointer; wait_nr 0, submit 0.
    unsafe { next::__io_uring_get_cqe(ring, cqe, 0, 0, sigmask) }
}

/// Waits (parked) for `want` completions and peeks the first into `cqe`:
/// 0, -ETIME, -EBADF, or liburing's error; None: corun cannot wait here.
fn wait_and_peek(
    view: &View,
    ring: *mut Ring,
    cqe: *mut *mut Cqe,
    want: u32,
    deadline: Option<u64>,
    sigmask: *mut sigset_t,
) -> Option<c_int> {
    loop {
        match wait_for(view, want, deadline) {
            Waited::Ready => {}
            Waited::TimedOut => {
                // SAFETY: the caller's out-pointer, as liburing fills it.
                unsafe { *cqe = std::ptr::null_mut() };
                return Some(-libc::ETIME);
            }
            Waited::Closed => return Some(-libc::EBADF),
            Waited::Unsupported => return None,
        }
        let r = peek(ring, cqe, sigmask);
        if r != -libc::EAGAIN {
            return Some(r);
        }
    }
}

/// `io_uring_wait_cqe(_nr)` and `io_uring_peek_cqe` (inline in liburing.h)
/// end here.
#[no_mangle]
pub unsafe extern "C" fn __io_uring_get_cqe(
    ring: *mut Ring,
    cqe: *mut *mut Cqe,
    submit: c_uint,
    wait_nr: c_uint,
    sigmask: *mut sigset_t,
) -> c_int {
    bind_to_kernel_thread();
    if wait_nr > 0 && submit == 0 && in_coroutine() {
        // SAFETY: liburing's contract: `ring` is an initialised ring.
        if let Some(v) = unsafe { View::of(ring) } {
            if let Some(r) = wait_and_peek(&v, ring, cqe, wait_nr, None, sigmask) {
                return r;
            }
        }
    }
    // SAFETY: the caller's call, as made.
    unsafe { next::__io_uring_get_cqe(ring, cqe, submit, wait_nr, sigmask) }
}

/// Also reached by `io_uring_wait_cqe_timeout`.
#[no_mangle]
pub unsafe extern "C" fn io_uring_wait_cqes(
    ring: *mut Ring,
    cqe: *mut *mut Cqe,
    wait_nr: c_uint,
    ts: *mut KernelTimespec,
    sigmask: *mut sigset_t,
) -> c_int {
    bind_to_kernel_thread();
    // Without a timeout liburing calls __io_uring_get_cqe (above).
    if wait_nr > 0 && !ts.is_null() && in_coroutine() {
        // SAFETY: liburing's contract.
        if let (Some(v), Ok(d)) = (unsafe { View::of(ring) }, deadline_of(ts)) {
            if let Some(r) = wait_and_peek(&v, ring, cqe, wait_nr, Some(d), sigmask) {
                return r;
            }
        }
    }
    // SAFETY: the caller's call, as made.
    unsafe { next::io_uring_wait_cqes(ring, cqe, wait_nr, ts, sigmask) }
}

/// Submits, then waits for `wait_nr` completions; returns the number
/// submitted.
#[no_mangle]
pub unsafe extern "C" fn io_uring_submit_and_wait(ring: *mut Ring, wait_nr: c_uint) -> c_int {
    bind_to_kernel_thread();
    if wait_nr > 0 && in_coroutine() {
        // SAFETY: liburing's contract.
        if let Some(v) = unsafe { View::of(ring) } {
            // SAFETY: the caller's ring.
            let s = unsafe { next::io_uring_submit(ring) };
            if s < 0 {
                return s;
            }
            match wait_for(&v, wait_nr, None) {
                Waited::Ready => return s,
                Waited::Closed => return -libc::EBADF,
                Waited::TimedOut | Waited::Unsupported => {
                    // Submitted already: liburing's call only waits now.
                    // SAFETY: the caller's ring.
                    let r = unsafe { next::io_uring_submit_and_wait(ring, wait_nr) };
                    return if r < 0 { r } else { s };
                }
            }
        }
    }
    // SAFETY: the caller's call, as made.
    unsafe { next::io_uring_submit_and_wait(ring, wait_nr) }
}

/// Submits, then waits for `wait_nr` completions or the timeout. Returns
/// what liburing 2.3 returns: 0 if a completion was there before the call,
/// else the number submitted (even when the wait timed out: the cqe is
/// then NULL), -ETIME if it timed out with nothing submitted, or an error.
#[no_mangle]
pub unsafe extern "C" fn io_uring_submit_and_wait_timeout(
    ring: *mut Ring,
    cqe: *mut *mut Cqe,
    wait_nr: c_uint,
    ts: *mut KernelTimespec,
    sigmask: *mut sigset_t,
) -> c_int {
    bind_to_kernel_thread();
    if wait_nr > 0 && in_coroutine() {
        let deadline = if ts.is_null() {
            Ok(None)
        } else {
            deadline_of(ts).map(Some)
        };
        // SAFETY: liburing's contract.
        if let (Some(v), Ok(d)) = (unsafe { View::of(ring) }, deadline) {
            let had = v.ready() > 0;
            // SAFETY: the caller's ring.
            let s = unsafe { next::io_uring_submit(ring) };
            if s < 0 {
                return s;
            }
            match wait_and_peek(&v, ring, cqe, wait_nr, d, sigmask) {
                Some(0) => return if had { 0 } else { s },
                // The kernel's io_uring_enter returns the number it
                // submitted before the wait's -ETIME, and liburing passes
                // that on (with no completion).
                Some(r) if r == -libc::ETIME && s > 0 => return s,
                Some(r) => return r,
                None => {
                    // Submitted already: wait without a timeout (the
                    // fd cannot be polled; such rings were refused above).
                    // SAFETY: the caller's ring and out-pointer.
                    return unsafe { next::__io_uring_get_cqe(ring, cqe, 0, wait_nr, sigmask) };
                }
            }
        }
    }
    // SAFETY: the caller's call, as made.
    unsafe { next::io_uring_submit_and_wait_timeout(ring, cqe, wait_nr, ts, sigmask) }
}

/// `io_uring_queue_init` calls it (through liburing's PLT). The ring fd is
/// made by an inline system call: what corun knew of an earlier file with
/// that number is forgotten here.
#[no_mangle]
pub unsafe extern "C" fn io_uring_queue_init_params(
    entries: c_uint,
    ring: *mut Ring,
    p: *mut c_void,
) -> c_int {
    bind_to_kernel_thread();
    // SAFETY: the caller's call, as made.
    let r = unsafe { next::io_uring_queue_init_params(entries, ring, p) };
    if r == 0 {
        // SAFETY: liburing just initialised the ring.
        let fd = unsafe { *ring.cast::<u8>().add(RING_FD).cast::<c_int>() };
        note_new_fd(fd, KIND_UNKNOWN, false);
    }
    r
}

/// Submits (liburing's system call is inline). The caller stays on its
/// kernel thread from now on, as with every liburing call corun sees
/// (`sched::bind_to_kernel_thread`): a ring is tied to the task that made
/// or used it in ways a move breaks.
#[no_mangle]
pub unsafe extern "C" fn io_uring_submit(ring: *mut Ring) -> c_int {
    bind_to_kernel_thread();
    // SAFETY: the caller's call, as made.
    unsafe { next::io_uring_submit(ring) }
}

/// The registered ring fd is in the calling kernel task's table only.
#[no_mangle]
pub unsafe extern "C" fn io_uring_register_ring_fd(ring: *mut Ring) -> c_int {
    bind_to_kernel_thread();
    // SAFETY: the caller's call, as made.
    unsafe { next::io_uring_register_ring_fd(ring) }
}

/// liburing closes the ring fd with an inline system call: corun forgets
/// it first (coroutines parked on it wake with EBADF).
#[no_mangle]
pub unsafe extern "C" fn io_uring_queue_exit(ring: *mut Ring) {
    if !ring.is_null() {
        // SAFETY: the caller's initialised ring.
        let fd = unsafe { *ring.cast::<u8>().add(RING_FD).cast::<c_int>() };
        if fd >= 0 {
            fdtable::forget(fd);
        }
    }
    // SAFETY: the caller's call, as made.
    unsafe { next::io_uring_queue_exit(ring) }
}
