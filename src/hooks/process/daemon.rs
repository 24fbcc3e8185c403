//! `daemon` and `forkpty`: glibc's fork from inside libc.
//!
//! Both make their child with libc's internal fork, which no interposed
//! `fork` sees. Called from a coroutine, the child kept the parent's
//! runtime as it was: the parent's other coroutines, threads the child
//! does not have natively, went on running there (a `ticker` thread made
//! before `daemon()` still ticked in the daemon), the child waited on the
//! parent's epoll instances, and coroutines placed on a worker whose
//! thread stayed in the parent never ran. So from a coroutine they are
//! made here of the calls they are documented to make (daemon(3),
//! forkpty(3), login_tty(3)), with corun's `fork`, `open`, `dup2` and
//! `close`; outside coroutines they are glibc's.

use std::ffi::{c_char, c_int, c_void};

use crate::hooks::fdctl::{close, dup2};
use crate::sched::in_coroutine;

mod next {
    use std::ffi::{c_char, c_int, c_void};
    crate::sys::real::real_fns! {
        fn daemon(nochdir: c_int, noclose: c_int) -> c_int;
        fn forkpty(amaster: *mut c_int, name: *mut c_char, termp: *const c_void,
            winp: *const c_void) -> c_int;
        fn openpty(amaster: *mut c_int, aslave: *mut c_int, name: *mut c_char,
            termp: *const c_void, winp: *const c_void) -> c_int;
    }
}

#[no_mangle]
pub unsafe extern "C" fn daemon(nochdir: c_int, noclose: c_int) -> c_int {
    if !in_coroutine() {
        // SAFETY: plain integers.
        return unsafe { next::daemon(nochdir, noclose) };
    }
    // SAFETY: corun's fork, no arguments.
    match unsafe { super::fork() } {
        -1 => return -1,
        0 => {}
        // SAFETY: the parent ends at once, as glibc's daemon ends it.
        _ => unsafe { libc::_exit(0) },
    }
    // SAFETY: setsid and chdir take no pointers but a NUL-terminated path.
    unsafe {
        if libc::setsid() == -1 {
            return -1;
        }
        if nochdir == 0 {
            let _ = libc::chdir(c"/".as_ptr());
        }
    }
    if noclose == 0 {
        return stdio_to_dev_null();
    }
    0
}

/// daemon(3)'s last step: stdin, stdout and stderr become /dev/null, once
/// it is known to be the null device (ENODEV otherwise, as glibc says).
fn stdio_to_dev_null() -> c_int {
    // SAFETY: corun's open of a NUL-terminated path.
    let fd = unsafe { crate::hooks::file::open(c"/dev/null".as_ptr(), libc::O_RDWR, 0) };
    if fd < 0 {
        return -1;
    }
    // SAFETY: an all-zero stat is a valid out-buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat of the fd just opened into a live local.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        let e = crate::sys::errno();
        // SAFETY: corun's close of the fd opened above.
        unsafe { close(fd) };
        crate::sys::set_errno(e);
        return -1;
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFCHR || st.st_rdev != libc::makedev(1, 3) {
        // SAFETY: as above.
        unsafe { close(fd) };
        crate::sys::set_errno(libc::ENODEV);
        return -1;
    }
    for std_fd in 0..3 {
        // SAFETY: corun's dup2 of two fd numbers.
        unsafe { dup2(fd, std_fd) };
    }
    if fd > 2 {
        // SAFETY: as above.
        unsafe { close(fd) };
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn forkpty(
    amaster: *mut c_int,
    name: *mut c_char,
    termp: *const c_void,
    winp: *const c_void,
) -> c_int {
    if !in_coroutine() {
        // SAFETY: the caller's forkpty contract, passed on.
        return unsafe { next::forkpty(amaster, name, termp, winp) };
    }
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: live locals for the two fds; the rest is the caller's.
    if unsafe { next::openpty(&mut master, &mut slave, name, termp, winp) } == -1 {
        return -1;
    }
    // SAFETY: corun's fork, no arguments.
    match unsafe { super::fork() } {
        -1 => {
            let e = crate::sys::errno();
            // SAFETY: closing the two fds openpty made.
            unsafe {
                close(master);
                close(slave);
            }
            crate::sys::set_errno(e);
            -1
        }
        0 => {
            // SAFETY: as above.
            unsafe { close(master) };
            if login_tty(slave) != 0 {
                // SAFETY: what glibc's forkpty does when login_tty fails.
                unsafe { libc::_exit(1) };
            }
            0
        }
        pid => {
            // SAFETY: the caller's contract makes `amaster` writable.
            unsafe {
                *amaster = master;
                close(slave);
            }
            pid
        }
    }
}

/// login_tty(3): a new session whose controlling terminal is `fd`, which
/// becomes stdin, stdout and stderr.
fn login_tty(fd: c_int) -> c_int {
    // SAFETY: setsid takes nothing; TIOCSCTTY takes an integer argument.
    unsafe {
        libc::setsid();
        if libc::ioctl(fd, libc::TIOCSCTTY, 0) == -1 {
            return -1;
        }
    }
    for std_fd in 0..3 {
        // SAFETY: corun's dup2 of two fd numbers.
        while unsafe { dup2(fd, std_fd) } == -1 && crate::sys::errno() == libc::EBUSY {}
    }
    if fd > 2 {
        // SAFETY: corun's close.
        unsafe { close(fd) };
    }
    0
}
