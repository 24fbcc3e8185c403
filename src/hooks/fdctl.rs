//! `close`, `close_range`, `closefrom`, `fclose`, `dup`, `dup2`,
//! `dup3`, `fcntl`, `fcntl64`, `ioctl`, `flock`, `lockf`, `lockf64`, `pipe`,
//! `pipe2`.
//!
//! These never block; corun interposes them to keep its per-fd knowledge
//! true (docs/ARCHITECTURE.md §5.1): `close` (and the calls that close fds for the
//! program: `close_range`, `closefrom`, stdio's `fclose`, and `pclose` in
//! `process/popen.rs`) wakes any
//! coroutine parked on the fd (it fails with EBADF) and bumps the fd's
//! generation so a stale epoll event cannot reach the next file of that
//! number; the dup family copies what corun knew to the new fd and marks
//! both as sharing their open file description (a socket timeout set
//! through one is then read from the kernel for the other); `fcntl(F_SETFL)`
//! and `ioctl(FIONBIO)` record the program's non-blocking wish (and make
//! every cached wish be asked again: dups share it), and F_SETFL makes the
//! fd's file-write decision be learned again (`file::flags_set`: O_DIRECT);
//! `pipe2` records it from its flags.
//! A `dup2`/`dup3` over an fd that calls are parked on keeps the old file
//! for them first (`sched::fdkeep`): natively they go on with it.
//! Bookkeeping happens for every caller, coroutine or not; fds of the
//! runtime itself cannot be closed by the program (it gets EBADF, as it
//! would natively for an fd it never opened).

use std::ffi::c_int;
use std::sync::atomic::Ordering;

use libc::c_ulong;

use crate::sched::{fdkeep, fdtable};
use crate::sys::{errno, real, set_errno};

fn is_runtime_fd(fd: c_int) -> bool {
    fdtable::is_runtime(fd)
}

/// `newfd` now refers to the same description as `oldfd`.
fn note_dup(oldfd: c_int, newfd: c_int) {
    let saved = errno();
    if let Some(n) = fdtable::get(newfd) {
        n.reset();
        if let Some(o) = fdtable::get(oldfd) {
            n.policy.copy_from(&o.policy);
            o.policy.shared.store(true, Ordering::Relaxed);
        }
        n.policy.shared.store(true, Ordering::Relaxed);
    }
    set_errno(saved);
}

/// `fd` is a new file (a pipe end...): forget what an earlier fd of that
/// number left behind, record its kind and the program's wish.
pub(crate) fn note_new_fd(fd: c_int, kind: u8, nonblock: bool) {
    let saved = errno();
    if let Some(e) = fdtable::get(fd) {
        e.reset();
        e.policy.kind.store(kind, Ordering::Relaxed);
        super::set_user_nonblocking(fd, nonblock);
    }
    set_errno(saved);
}

pub(crate) mod next {
    use std::ffi::c_int;
    crate::sys::real::real_fns! {
        fn fclose(f: *mut libc::FILE) -> c_int;
        fn freopen(path: *const libc::c_char, mode: *const libc::c_char, f: *mut libc::FILE) -> *mut libc::FILE;
        fn freopen64(path: *const libc::c_char, mode: *const libc::c_char, f: *mut libc::FILE) -> *mut libc::FILE;
    }
}

#[no_mangle]
#[link_section = ".text.hot.corun"] // a forked child's path: build.rs
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if !crate::sched::lone::nothing_parks() {
        // Before the fd is forgotten: a cancelled close leaves it open.
        super::cancel_entry();
    }
    if !fdtable::forget_for_close(fd) {
        return super::ebadf();
    }
    if crate::sched::lone::nothing_parks() {
        // SAFETY: plain integer.
        return unsafe { real::close(fd) };
    }
    close_forgotten(fd)
}

/// The rest of `close` in a process where something may park.
#[inline(never)]
fn close_forgotten(fd: c_int) -> c_int {
    if crate::sched::sole_coroutine() {
        // Nothing can park in this process (no second coroutine, no
        // cancel token: fd waits are made as natively), or the only
        // coroutine closes: no other can take a snapshot and register
        // between `forget` and the real close (what `forget_after_close`
        // is for).
        // SAFETY: plain integer.
        return unsafe { real::close(fd) };
    }
    let gen = fdtable::generation(fd);
    // SAFETY: plain integer.
    let r = unsafe { real::close(fd) };
    let e = crate::sys::errno();
    fdtable::forget_after_close(fd, gen);
    crate::sys::set_errno(e);
    r
}

#[no_mangle]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    // SAFETY: plain integer.
    let r = unsafe { real::dup(fd) };
    if r >= 0 {
        note_dup(fd, r);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn dup2(fd: c_int, fd2: c_int) -> c_int {
    if is_runtime_fd(fd2) || is_runtime_fd(fd) {
        set_errno(libc::EBADF);
        return -1;
    }
    if fd != fd2 {
        fdkeep::keep_for_parked(fd2);
    }
    // SAFETY: plain integers.
    let r = unsafe { real::dup2(fd, fd2) };
    if r >= 0 && fd != fd2 {
        note_dup(fd, r);
    } else if r < 0 {
        let e = errno();
        fdkeep::discard(fd2);
        set_errno(e);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn dup3(fd: c_int, fd2: c_int, flags: c_int) -> c_int {
    if is_runtime_fd(fd2) || is_runtime_fd(fd) {
        set_errno(libc::EBADF);
        return -1;
    }
    if fd != fd2 {
        fdkeep::keep_for_parked(fd2);
    }
    // SAFETY: plain integers.
    let r = unsafe { real::dup3(fd, fd2, flags) };
    if r >= 0 {
        note_dup(fd, r);
    } else {
        let e = errno();
        fdkeep::discard(fd2);
        set_errno(e);
    }
    r
}

/// Bookkeeping after a successful fcntl.
fn after_fcntl(fd: c_int, cmd: c_int, arg: c_ulong, r: c_int) {
    if r < 0 {
        return;
    }
    match cmd {
        libc::F_SETFL => {
            super::changed_user_nonblocking(fd, arg as c_int & libc::O_NONBLOCK != 0);
            super::file::flags_set(fd, arg as c_int);
        }
        libc::F_DUPFD | libc::F_DUPFD_CLOEXEC => note_dup(fd, r),
        _ => {}
    }
}

/// A file lock that waits (F_SETLKW, F_OFD_SETLKW) waits for another
/// process, with nothing to poll: in a coroutine it goes to the blocking
/// pool. Record locks belong to the process (F_SETLKW) or to the open file
/// description (OFD locks), never to the thread, so any thread may take them.
fn lock_waits(cmd: c_int) -> bool {
    matches!(cmd, libc::F_SETLKW | libc::F_OFD_SETLKW) && crate::sched::in_coroutine()
}

/// A file lock call that may wait, made first in its form that does not
/// (F_SETLK for F_SETLKW, LOCK_NB, F_TLOCK): an unlock, or a lock nobody
/// else holds, is answered inline, as natively, and only a lock that is
/// held (EAGAIN, EACCES) waits on the blocking pool. Before, every lock
/// and unlock was two thread hand-offs: Kea's logger takes and releases
/// an fcntl lock around each log line, four hand-offs a line.
///
/// A signal for the waiting thread cuts the wait short as natively
/// (signal(7): file locks fail with EINTR, or are restarted when every
/// handler that ran had SA_RESTART); a lock the helper got as the signal
/// came is kept and returned.
fn lock_or_wait(try_now: impl FnOnce() -> c_int, mut wait: impl FnMut() -> c_int + Send) -> c_int {
    use crate::sched::blocking::{run_blocking_restartable, OnHandler};
    let saved = errno();
    let r = try_now();
    if r == 0 || !matches!(errno(), libc::EAGAIN | libc::EACCES) {
        return r;
    }
    set_errno(saved);
    run_blocking_restartable(OnHandler::RestartIfSaRestart, |_| wait() as isize) as c_int
}

/// F_SETLK for F_SETLKW, F_OFD_SETLK for F_OFD_SETLKW.
fn no_wait_cmd(cmd: c_int) -> c_int {
    if cmd == libc::F_SETLKW {
        libc::F_SETLK
    } else {
        libc::F_OFD_SETLK
    }
}

#[no_mangle]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    if is_runtime_fd(fd) {
        set_errno(libc::EBADF);
        return -1;
    }
    if lock_waits(cmd) {
        // `arg` (a struct flock pointer) stays valid while the caller is
        // parked.
        return lock_or_wait(
            // SAFETY: as below, the same flock in the form that does not wait.
            || unsafe { real::fcntl(fd, no_wait_cmd(cmd), arg) },
            // SAFETY: the caller's fcntl contract.
            move || unsafe { real::fcntl(fd, cmd, arg) },
        );
    }
    // SAFETY: the caller's fcntl contract; the variadic third argument is
    // passed in the same register as a fixed one on x86_64 and aarch64.
    let r = unsafe { real::fcntl(fd, cmd, arg) };
    after_fcntl(fd, cmd, arg, r);
    r
}

#[no_mangle]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    if is_runtime_fd(fd) {
        set_errno(libc::EBADF);
        return -1;
    }
    if lock_waits(cmd) {
        return lock_or_wait(
            // SAFETY: as fcntl.
            || unsafe { real::fcntl64(fd, no_wait_cmd(cmd), arg) },
            // SAFETY: as fcntl.
            move || unsafe { real::fcntl64(fd, cmd, arg) },
        );
    }
    // SAFETY: as fcntl.
    let r = unsafe { real::fcntl64(fd, cmd, arg) };
    after_fcntl(fd, cmd, arg, r);
    r
}

mod real_flock {
    use std::ffi::c_int;
    crate::sys::real::real_fns! {
        fn flock(fd: c_int, op: c_int) -> c_int;
    }
}

#[no_mangle]
pub unsafe extern "C" fn flock(fd: c_int, op: c_int) -> c_int {
    if op & libc::LOCK_NB == 0
        && op & (libc::LOCK_EX | libc::LOCK_SH) != 0
        && crate::sched::in_coroutine()
    {
        return lock_or_wait(
            // SAFETY: plain integers.
            || unsafe { real_flock::flock(fd, op | libc::LOCK_NB) },
            // SAFETY: plain integers.
            move || unsafe { real_flock::flock(fd, op) },
        );
    }
    // SAFETY: plain integers.
    unsafe { real_flock::flock(fd, op) }
}

mod real_lockf {
    use std::ffi::c_int;
    crate::sys::real::real_fns! {
        fn lockf(fd: c_int, cmd: c_int, len: libc::off_t) -> c_int;
        fn lockf64(fd: c_int, cmd: c_int, len: libc::off64_t) -> c_int;
    }
}

/// `lockf(F_LOCK)` waits as F_SETLKW does (glibc makes it one, with its
/// internal fcntl, which the hook above never sees): on the pool.
#[no_mangle]
pub unsafe extern "C" fn lockf(fd: c_int, cmd: c_int, len: libc::off_t) -> c_int {
    if cmd == libc::F_LOCK && crate::sched::in_coroutine() {
        return lock_or_wait(
            // SAFETY: plain integers.
            || unsafe { real_lockf::lockf(fd, libc::F_TLOCK, len) },
            // SAFETY: plain integers.
            move || unsafe { real_lockf::lockf(fd, cmd, len) },
        );
    }
    // SAFETY: plain integers.
    unsafe { real_lockf::lockf(fd, cmd, len) }
}

#[no_mangle]
pub unsafe extern "C" fn lockf64(fd: c_int, cmd: c_int, len: libc::off64_t) -> c_int {
    if cmd == libc::F_LOCK && crate::sched::in_coroutine() {
        return lock_or_wait(
            // SAFETY: plain integers.
            || unsafe { real_lockf::lockf64(fd, libc::F_TLOCK, len) },
            // SAFETY: plain integers.
            move || unsafe { real_lockf::lockf64(fd, cmd, len) },
        );
    }
    // SAFETY: plain integers.
    unsafe { real_lockf::lockf64(fd, cmd, len) }
}

#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: c_int, req: c_ulong, arg: c_ulong) -> c_int {
    // SAFETY: the caller's ioctl contract (variadic argument as in fcntl).
    let r = unsafe { real::ioctl(fd, req, arg) };
    if r >= 0 && req == libc::FIONBIO && arg != 0 {
        // SAFETY: FIONBIO takes a pointer to int, readable per the contract.
        let on = unsafe { *(arg as *const c_int) } != 0;
        super::changed_user_nonblocking(fd, on);
    }
    r
}

mod real_range {
    use std::ffi::{c_int, c_uint};
    crate::sys::real::real_fns! {
        fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int;
    }
}

/// corun's own fds in [first, last], in increasing order.
fn runtime_fds_in(first: u32, last: u32) -> Vec<u32> {
    let (lo, hi) = fdtable::runtime_span();
    if hi < 0 {
        return Vec::new();
    }
    let top = last.min(fdtable::MAX_FD as u32 - 1).min(hi as u32);
    (first.max(lo.max(0) as u32)..=top)
        .filter(|&fd| is_runtime_fd(fd as c_int))
        .collect()
}

/// Closes [lo, hi] and forgets what was known of those fds.
fn close_segment(lo: u32, hi: u32, flags: c_int) -> c_int {
    if flags & libc::CLOSE_RANGE_CLOEXEC as c_int == 0 {
        fdtable::forget_range(lo, hi);
    }
    // SAFETY: plain integers.
    unsafe { real_range::close_range(lo, hi, flags) }
}

/// close_range over [first, last] that leaves corun's own fds open: the
/// range is cut around them (a daemon closing "every fd" must not take the
/// runtime's epoll and eventfds with it; natively those fds do not exist).
fn close_range_sparing(first: u32, last: u32, flags: c_int) -> c_int {
    let mut r = 0;
    let mut lo = Some(first);
    for rt in runtime_fds_in(first, last) {
        if let Some(l) = lo {
            if l < rt && close_segment(l, rt - 1, flags) < 0 {
                r = -1;
            }
        }
        lo = rt.checked_add(1);
    }
    if let Some(l) = lo {
        if l <= last && close_segment(l, last, flags) < 0 {
            r = -1;
        }
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn pipe(fds: *mut c_int) -> c_int {
    // SAFETY: the caller's pipe contract (two ints).
    unsafe { pipe2(fds, 0) }
}

#[no_mangle]
pub unsafe extern "C" fn pipe2(fds: *mut c_int, flags: c_int) -> c_int {
    // SAFETY: the caller's pipe2 contract (two ints).
    let r = unsafe { real::pipe2(fds, flags) };
    if r == 0 {
        for i in 0..2 {
            // SAFETY: the kernel just wrote both.
            let fd = unsafe { *fds.add(i) };
            note_new_fd(fd, fdtable::KIND_NOWAIT, flags & libc::O_NONBLOCK != 0);
        }
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn close_range(
    first: libc::c_uint,
    last: libc::c_uint,
    flags: c_int,
) -> c_int {
    if first > last {
        set_errno(libc::EINVAL);
        return -1;
    }
    close_range_sparing(first, last, flags)
}

#[no_mangle]
pub unsafe extern "C" fn closefrom(low: c_int) {
    close_range_sparing(low.max(0) as u32, u32::MAX, 0);
}

#[no_mangle]
pub unsafe extern "C" fn fclose(f: *mut libc::FILE) -> c_int {
    crate::hooks::stdio_write::before_fclose(f);
    if !f.is_null() {
        // SAFETY: the caller's fclose contract: `f` is an open stream.
        let fd = unsafe { libc::fileno(f) };
        fdtable::forget(fd);
    }
    // SAFETY: the caller's fclose contract.
    unsafe { next::fclose(f) }
}

/// `freopen` closes the stream's fd and opens the new file, usually at the
/// same number, inside glibc where no hook sees it: what corun knew of the
/// old file (its epoll registration above all) must go, or a wait on the
/// new one would never wake.
unsafe fn reopen(f: *mut libc::FILE, call: impl FnOnce() -> *mut libc::FILE) -> *mut libc::FILE {
    if !f.is_null() {
        // SAFETY: the caller's freopen contract: `f` is an open stream.
        fdtable::forget(unsafe { libc::fileno(f) });
    }
    let r = call();
    if !r.is_null() {
        // SAFETY: glibc just returned an open stream.
        fdtable::forget(unsafe { libc::fileno(r) });
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn freopen(
    path: *const libc::c_char,
    mode: *const libc::c_char,
    f: *mut libc::FILE,
) -> *mut libc::FILE {
    // SAFETY: the caller's freopen contract.
    unsafe { reopen(f, || next::freopen(path, mode, f)) }
}

#[no_mangle]
pub unsafe extern "C" fn freopen64(
    path: *const libc::c_char,
    mode: *const libc::c_char,
    f: *mut libc::FILE,
) -> *mut libc::FILE {
    // SAFETY: the caller's freopen contract.
    unsafe { reopen(f, || next::freopen64(path, mode, f)) }
}
