//! `poll`, `ppoll`, `select`, `pselect`, and the fortified `__poll_chk`,
//! `__ppoll_chk`.
//!
//! The kernel stays the judge of readiness: every answer a coroutine gets
//! comes from the real call made with a zero timeout, so revents (POLLHUP,
//! POLLERR, POLLNVAL, POLLPRI...), the select sets, the count and the errno
//! are exactly the kernel's. Only the waiting is corun's:
//!
//! ```text
//!   real call, timeout 0        -> something (or an error)? return it
//!   loop:
//!     snapshot each fd's readiness sequence (read side for POLLIN/PRI or
//!       for an fd asking nothing but HUP/ERR, write side for POLLOUT)
//!     real call, timeout 0      -> something? return it
//!     deadline passed?          -> return 0
//!     park on all those fds at once (park_until_any_ready) or the deadline
//! ```
//!
//! A coroutine that keeps getting answers at once (no park) for a whole
//! time slice lets the others of its worker run (`sched/slice.rs`), as the
//! kernel's preemption would: one of them may be what the loop waits for.
//!
//! The snapshot comes before the check, so an edge between the check and
//! the park makes the park return at once. Regular files are always ready
//! for poll (the first check returns them); fds epoll refuses cannot change
//! readiness and are left out of the park. A zero timeout is the real call.
//!
//! A signal handler that runs in the coroutine while it waits ends the wait
//! with EINTR, whatever SA_RESTART says, as the kernel does. A signal of
//! corun's own (the preemption monitor's SIGURG, a worker's kick) that
//! lands in a zero-timeout poll or select, the checks here included, makes
//! the kernel fail it with EINTR too: such a call is made again
//! (`instant`), since no handler of the program's ran. The signal
//! mask of `ppoll`/`pselect` is the coroutine's mask for the whole call
//! (`with_wait_mask`), parked or not: a signal it lets in, pending or sent
//! meanwhile, runs its handler in the coroutine and the call fails with
//! EINTR (`make` waits for SIGCHLD that way). `select` writes the time left
//! back into its timeval, as Linux does; `ppoll` and `pselect` leave theirs
//! alone, as glibc does.

use std::ffi::c_int;

use libc::{fd_set, nfds_t, pollfd, sigset_t, timespec, timeval};

use super::sleep::valid_timespec;
use crate::sched::fdtable::{self, Dir, Snapshot};
use crate::sched::signals::{self, Interruptible};
use crate::sched::{current, park_until_any_ready, parking};
use crate::sys::{errno, now_ns, real, set_errno, timespec_ns};

pub(crate) mod next {
    use libc::{c_int, fd_set, sigset_t, timespec, timeval};
    crate::sys::real::real_fns! {
        fn select(n: c_int, r: *mut fd_set, w: *mut fd_set, x: *mut fd_set, t: *mut timeval) -> c_int;
        fn pselect(n: c_int, r: *mut fd_set, w: *mut fd_set, x: *mut fd_set, t: *const timespec,
            mask: *const sigset_t) -> c_int;
    }
}

const READ_EVENTS: i16 =
    libc::POLLIN | libc::POLLPRI | libc::POLLRDNORM | libc::POLLRDBAND | libc::POLLRDHUP;
const WRITE_EVENTS: i16 = libc::POLLOUT | libc::POLLWRNORM | libc::POLLWRBAND;

/// Adds `fd`'s current snapshot for `dir` to `waits`.
fn watch(waits: &mut Vec<(i32, Dir, Snapshot)>, fd: i32, dir: Dir) {
    if let Some(e) = fdtable::get(fd) {
        waits.push((fd, dir, e.snapshot(dir)));
    }
}

/// What the pollfds wait for, snapshotted now.
fn poll_interests(fds: &[pollfd]) -> Vec<(i32, Dir, Snapshot)> {
    let mut waits = Vec::with_capacity(fds.len());
    for p in fds {
        if p.fd < 0 {
            continue;
        }
        let wr = p.events & WRITE_EVENTS != 0;
        // HUP and ERR are always reported; the netpoller counts them on both
        // sides, so an fd asking only for them waits on the read side.
        if p.events & READ_EVENTS != 0 || !wr {
            watch(&mut waits, p.fd, Dir::Read);
        }
        if wr {
            watch(&mut waits, p.fd, Dir::Write);
        }
    }
    waits
}

/// What a timespec timeout means for a parking wait: Some(None) waits
/// forever (NULL), Some(Some(deadline)) waits until then; None is a zero
/// or invalid timeout, which the real call handles (at once) by itself.
///
/// # Safety
/// `ts` is NULL or readable.
pub(crate) unsafe fn parking_deadline(ts: *const timespec) -> Option<Option<u64>> {
    if ts.is_null() {
        return Some(None);
    }
    // SAFETY: non-null, readable per this function's contract.
    let t = unsafe { *ts };
    (valid_timespec(&t) && (t.tv_sec, t.tv_nsec) != (0, 0))
        .then(|| Some(now_ns().saturating_add(timespec_ns(&t))))
}

/// Whether `ts` is a zero timeout (not NULL: that waits for ever).
///
/// # Safety
/// `ts` is NULL or readable.
unsafe fn zero_timespec(ts: *const timespec) -> bool {
    // SAFETY: non-null, readable per this function's contract.
    !ts.is_null() && unsafe { ((*ts).tv_sec, (*ts).tv_nsec) } == (0, 0)
}

/// A deadline `ms` from now; None for a negative (infinite) timeout.
pub(crate) fn deadline_ms(ms: c_int) -> Option<u64> {
    (ms >= 0).then(|| now_ns().saturating_add(ms as u64 * 1_000_000))
}

/// Runs a wait with `mask` (ppoll's, pselect's, epoll_pwait's; NULL: none)
/// as the coroutine's signal mask meanwhile, as the kernel does: a signal
/// it lets through, pending already, is delivered at once. `f` gets the
/// baseline that tells whether a handler ran since.
pub(crate) fn with_wait_mask(
    mask: *const sigset_t,
    f: impl FnOnce(&Interruptible) -> c_int,
) -> c_int {
    let intr = Interruptible::begin();
    let t = current();
    let old = match (t, mask.is_null()) {
        (Some(t), false) => {
            // SAFETY: non-null and readable per the caller's contract.
            let m = unsafe { *(mask as *const u64) };
            let old = signals::set_mask(&t, m);
            signals::sync_here();
            signals::run_pending(&t);
            Some(old)
        }
        _ => None,
    };
    let r = f(&intr);
    if let (Some(t), Some(old)) = (t, old) {
        let e = errno();
        signals::set_mask(&t, old);
        signals::sync_here();
        set_errno(e);
    }
    r
}

/// A poll or select with a zero timeout, made again while it fails with
/// EINTR and no handler of the program's ran during it. The kernel fails
/// poll and select with EINTR for any handled signal, zero timeout and
/// SA_RESTART or not; in a coroutine that signal may be corun's own (the
/// preemption monitor sends SIGURG to a worker whose run lasts, and a
/// check made while other coroutines' timers are due is one), and the
/// program, which natively could not have seen EINTR there, did:
/// hooks_poll's `select` of 100 ms ended with EINTR and its sets
/// untouched, 1 run in 20 at load 25. Outside a coroutine, the call once.
fn instant(mut call: impl FnMut() -> c_int) -> c_int {
    loop {
        let before = signals::handlers_run();
        let r = call();
        if r != -1 || before.is_none() || errno() != libc::EINTR {
            return r;
        }
        if signals::handlers_run() != before {
            return r;
        }
    }
}

/// The waiting loop shared by every call here. `check` makes the real call
/// with a zero timeout; `interests` snapshots what it waits on. The first
/// check comes before any snapshot unless `readable`: the kernel then
/// vouches for the caller's memory (a bad pointer is EFAULT, not a crash)
/// before this code reads it. A handler that ran since `intr` began ends
/// the wait with EINTR.
fn wait_loop(
    deadline: Option<u64>,
    readable: bool,
    intr: &Interruptible,
    mut check: impl FnMut() -> c_int,
    mut interests: impl FnMut() -> Vec<(i32, Dir, Snapshot)>,
) -> c_int {
    if !readable {
        let r = instant(&mut check);
        if r != 0 {
            return r;
        }
    }
    loop {
        let waits = interests();
        let r = instant(&mut check);
        if r != 0 {
            return r;
        }
        if intr.check().is_some() {
            set_errno(libc::EINTR);
            return -1;
        }
        if deadline.is_some_and(|d| now_ns() >= d) {
            return 0;
        }
        if crate::sched::token::cancel_point() {
            crate::sys::set_errno(libc::ECANCELED);
            return -1;
        }
        park_until_any_ready(&waits, deadline);
    }
}

/// poll/ppoll in a coroutine; `ts`/`mask` as ppoll's.
fn poll_parking(
    fds: *mut pollfd,
    n: nfds_t,
    deadline: Option<u64>,
    mask: *const sigset_t,
) -> c_int {
    let zero = timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // A pollfd array on the coroutine's own stack above this frame (APR,
    // most programs: `struct pollfd pfd` in the caller) is readable: the
    // snapshot may come first, and one zero-timeout check per round is
    // enough (Apache's reads that find nothing made three).
    let here = &zero as *const timespec as usize;
    let end =
        (fds as usize).saturating_add((n as usize).saturating_mul(std::mem::size_of::<pollfd>()));
    let on_stack = !fds.is_null()
        && crate::sched::current_stack().is_some_and(|(_, top)| fds as usize > here && end <= top);
    with_wait_mask(mask, |intr| {
        if on_stack {
            // SAFETY: the entries are on our stack above this frame.
            if let Some(r) = unsafe { poll_one_input(fds, n, deadline, intr) } {
                return r;
            }
        }
        wait_loop(
            deadline,
            on_stack,
            intr,
            // SAFETY: the caller's ppoll contract; the kernel validates `fds`.
            || unsafe { real::ppoll(fds, n, &zero, mask) },
            || {
                if fds.is_null() || n == 0 {
                    return Vec::new();
                }
                // SAFETY: the zero-timeout check just read these `n` entries
                // successfully, or they are on our stack: readable.
                poll_interests(unsafe { std::slice::from_raw_parts(fds, n as usize) })
            },
        )
    })
}

/// One socket polled for input right after a read of the program's found
/// it empty (Apache: read until EAGAIN, then poll the connection): the
/// kernel's answer is known without asking it twice.
///
/// - Before the wait: no read-side edge since that read
///   (`FdPolicy::read_empty_since`), so a zero-timeout `ppoll` would find
///   nothing: park at once.
/// - After the wake: exactly one edge came, and what epoll reported with
///   it (the socket's state when the netpoller took it) was input and
///   nothing else of the read side (no hang-up, error or urgent data):
///   that is what `ppoll` would answer, POLLIN (and POLLRDNORM if asked).
///
/// Anything else (a signal handler ran, the deadline passed, another
/// edge, a hang-up) goes back to the general loop, which asks the kernel.
/// Apache made 1.3 `ppoll` calls per request (of 15 system calls), each
/// of these saves one. Some(result), or None for the general loop.
///
/// # Safety
/// `fds` holds `n` readable and writable entries.
unsafe fn poll_one_input(
    fds: *mut pollfd,
    n: nfds_t,
    deadline: Option<u64>,
    intr: &Interruptible,
) -> Option<c_int> {
    if n != 1 {
        return None;
    }
    // SAFETY: per the contract.
    let p = unsafe { &mut *fds };
    let input = libc::POLLIN | libc::POLLRDNORM;
    if p.events & input == 0 || p.events & !input != 0 {
        return None;
    }
    let e = fdtable::peek(p.fd)?;
    let seen = e.snapshot(Dir::Read);
    if !e.policy.read_empty_since(seen)
        || intr.check().is_some()
        || deadline.is_some_and(|d| now_ns() >= d)
        || crate::sched::token::cancel_point()
    {
        return None;
    }
    park_until_any_ready(&[(p.fd, Dir::Read, seen)], deadline);
    let ev = e.one_read_edge_since(seen)?;
    let read_side =
        (libc::EPOLLIN | libc::EPOLLPRI | libc::EPOLLHUP | libc::EPOLLERR | libc::EPOLLRDHUP)
            as u32;
    if ev & read_side != libc::EPOLLIN as u32 || intr.check().is_some() {
        return None;
    }
    p.revents = p.events & input;
    Some(1)
}

#[no_mangle]
pub unsafe extern "C" fn poll(fds: *mut pollfd, n: nfds_t, timeout: c_int) -> c_int {
    let r = if parking() && timeout != 0 {
        poll_parking(fds, n, deadline_ms(timeout), std::ptr::null())
    } else if timeout == 0 {
        // SAFETY: the caller's poll contract.
        instant(|| unsafe { real::poll(fds, n, 0) })
    } else {
        // SAFETY: the caller's poll contract.
        unsafe { real::poll(fds, n, timeout) }
    };
    slice_spent(r)
}

/// `r`, after the others of this worker had a turn if the caller held it
/// for a whole slice of calls that did not wait (`sched/slice.rs`: a loop
/// on a descriptor that stays ready until another thread reads it).
#[inline]
fn slice_spent(r: c_int) -> c_int {
    crate::sched::slice::yield_if_slice_spent();
    r
}

/// Whether a call with a signal mask argument (ppoll, pselect,
/// epoll_pwait) should park: always in a coroutine when there is a mask,
/// even the process's only one. Its mask must be applied the corun way: the
/// kernel would apply it to the worker thread, while delivery follows the
/// coroutine's own mask, which the call changes for its duration.
pub(crate) fn parking_with(mask: *const sigset_t) -> bool {
    if mask.is_null() {
        parking()
    } else {
        crate::sched::in_coroutine()
    }
}

#[no_mangle]
pub unsafe extern "C" fn ppoll(
    fds: *mut pollfd,
    n: nfds_t,
    ts: *const timespec,
    mask: *const sigset_t,
) -> c_int {
    if parking_with(mask) {
        // SAFETY: NULL or readable per the caller's contract.
        let deadline = unsafe { super::poll::parking_deadline(ts) };
        if let Some(d) = deadline {
            return slice_spent(poll_parking(fds, n, d, mask));
        }
    }
    // SAFETY: the caller's ppoll contract.
    let call = || unsafe { real::ppoll(fds, n, ts, mask) };
    // SAFETY: NULL or readable per the caller's contract.
    slice_spent(if unsafe { zero_timespec(ts) } {
        instant(call)
    } else {
        call()
    })
}

extern "C" {
    fn __chk_fail() -> !;
}

#[no_mangle]
pub unsafe extern "C" fn __poll_chk(
    fds: *mut pollfd,
    n: nfds_t,
    timeout: c_int,
    fdslen: libc::size_t,
) -> c_int {
    if fdslen / std::mem::size_of::<pollfd>() < n as usize {
        // SAFETY: glibc's own failure report, as the real __poll_chk does.
        unsafe { __chk_fail() }
    }
    // SAFETY: the caller's poll contract.
    unsafe { poll(fds, n, timeout) }
}

#[no_mangle]
pub unsafe extern "C" fn __ppoll_chk(
    fds: *mut pollfd,
    n: nfds_t,
    ts: *const timespec,
    mask: *const sigset_t,
    fdslen: libc::size_t,
) -> c_int {
    if fdslen / std::mem::size_of::<pollfd>() < n as usize {
        // SAFETY: as in __poll_chk.
        unsafe { __chk_fail() }
    }
    // SAFETY: the caller's ppoll contract.
    unsafe { ppoll(fds, n, ts, mask) }
}

/// One fd_set (or larger bitmap, for nfds past FD_SETSIZE) as words.
struct Bits {
    user: *mut fd_set,
    words: Vec<u64>,
}

impl Bits {
    fn new(user: *mut fd_set, nfds: usize) -> Bits {
        let n = nfds.div_ceil(64);
        let mut words = vec![0u64; n];
        if !user.is_null() {
            // SAFETY: select's contract: the set holds at least `nfds` bits
            // (fd_set is 1024 bits; larger nfds come with larger bitmaps).
            unsafe {
                std::ptr::copy_nonoverlapping(user as *const u64, words.as_mut_ptr(), n);
            }
        }
        Bits { user, words }
    }

    fn fds(&self, nfds: usize) -> impl Iterator<Item = i32> + '_ {
        (0..nfds)
            .filter(move |&i| self.words[i / 64] & (1u64 << (i % 64)) != 0)
            .map(|i| i as i32)
    }

    /// A scratch copy for one check (None when the program passed NULL).
    fn scratch(&self) -> Option<Vec<u64>> {
        (!self.user.is_null()).then(|| self.words.clone())
    }

    /// Writes a check's result back to the program's set.
    fn store(&self, from: &Option<Vec<u64>>) {
        if let Some(v) = from {
            // SAFETY: as in `new`: the set is writable for these words.
            unsafe {
                std::ptr::copy_nonoverlapping(v.as_ptr(), self.user as *mut u64, v.len());
            }
        }
    }
}

fn ptr(v: &mut Option<Vec<u64>>) -> *mut fd_set {
    v.as_mut()
        .map_or(std::ptr::null_mut(), |v| v.as_mut_ptr() as *mut fd_set)
}

/// select/pselect in a coroutine. Returns the result and leaves the
/// program's sets as the kernel's last answer.
fn select_parking(
    nfds: c_int,
    r: *mut fd_set,
    w: *mut fd_set,
    x: *mut fd_set,
    deadline: Option<u64>,
    mask: Option<*const sigset_t>,
) -> c_int {
    let n = nfds.max(0) as usize;
    let (rb, wb, xb) = (Bits::new(r, n), Bits::new(w, n), Bits::new(x, n));
    let mut out = (None, None, None);
    let result = with_wait_mask(mask.unwrap_or(std::ptr::null()), |intr| {
        wait_loop(
            deadline,
            true, // the sets were copied above
            intr,
            || {
                out = (rb.scratch(), wb.scratch(), xb.scratch());
                let (pr, pw, px) = (ptr(&mut out.0), ptr(&mut out.1), ptr(&mut out.2));
                match mask {
                    Some(m) => {
                        let zero = timespec {
                            tv_sec: 0,
                            tv_nsec: 0,
                        };
                        // SAFETY: scratch sets of `n` bits; the caller's mask.
                        unsafe { next::pselect(nfds, pr, pw, px, &zero, m) }
                    }
                    None => {
                        let mut zero = timeval {
                            tv_sec: 0,
                            tv_usec: 0,
                        };
                        // SAFETY: scratch sets of `n` bits.
                        unsafe { next::select(nfds, pr, pw, px, &mut zero) }
                    }
                }
            },
            || {
                let mut waits = Vec::new();
                for fd in rb.fds(n) {
                    watch(&mut waits, fd, Dir::Read);
                }
                for fd in wb.fds(n) {
                    watch(&mut waits, fd, Dir::Write);
                }
                for fd in xb.fds(n) {
                    watch(&mut waits, fd, Dir::Read);
                }
                waits
            },
        )
    });
    if result >= 0 {
        rb.store(&out.0);
        wb.store(&out.1);
        xb.store(&out.2);
    }
    result
}

#[no_mangle]
pub unsafe extern "C" fn select(
    nfds: c_int,
    r: *mut fd_set,
    w: *mut fd_set,
    x: *mut fd_set,
    t: *mut timeval,
) -> c_int {
    if parking() && nfds >= 0 {
        let deadline = if t.is_null() {
            Some(None)
        } else {
            // SAFETY: non-null and readable per the select contract.
            let tv = unsafe { *t };
            let valid = tv.tv_sec >= 0 && (0..1_000_000).contains(&tv.tv_usec);
            (valid && (tv.tv_sec, tv.tv_usec) != (0, 0)).then(|| {
                let ns = (tv.tv_sec as u64)
                    .saturating_mul(1_000_000_000)
                    .saturating_add(tv.tv_usec as u64 * 1000);
                Some(now_ns().saturating_add(ns))
            })
        };
        if let Some(d) = deadline {
            let res = select_parking(nfds, r, w, x, d, None);
            if let Some(end) = d {
                // Linux writes the time left back.
                let left = crate::sys::ns_timespec(end.saturating_sub(now_ns()));
                // SAFETY: non-null (a deadline exists) and writable.
                unsafe {
                    *t = timeval {
                        tv_sec: left.tv_sec,
                        tv_usec: left.tv_nsec / 1000,
                    }
                };
            }
            return slice_spent(res);
        }
    }
    // SAFETY: NULL or readable per the select contract.
    let zero = !t.is_null() && unsafe { ((*t).tv_sec, (*t).tv_usec) } == (0, 0);
    // SAFETY: the caller's select contract.
    let call = || unsafe { next::select(nfds, r, w, x, t) };
    slice_spent(if zero { instant(call) } else { call() })
}

#[no_mangle]
pub unsafe extern "C" fn pselect(
    nfds: c_int,
    r: *mut fd_set,
    w: *mut fd_set,
    x: *mut fd_set,
    ts: *const timespec,
    mask: *const sigset_t,
) -> c_int {
    if parking_with(mask) && nfds >= 0 {
        // SAFETY: NULL or readable per the caller's contract.
        let deadline = unsafe { super::poll::parking_deadline(ts) };
        if let Some(d) = deadline {
            return slice_spent(select_parking(nfds, r, w, x, d, Some(mask)));
        }
    }
    // SAFETY: the caller's pselect contract.
    let call = || unsafe { next::pselect(nfds, r, w, x, ts, mask) };
    // SAFETY: NULL or readable per the caller's contract.
    slice_spent(if unsafe { zero_timespec(ts) } {
        instant(call)
    } else {
        call()
    })
}
