//! `read`, `write`, `readv`, `writev` made through glibc's `syscall`, not
//! its wrappers of those names.
//!
//! glibc's wrappers are cancellation points: in a process with more than
//! one thread (every process under corun: its workers), each call sets and
//! then clears the thread's asynchronous-cancel bit, two atomic
//! compare-and-swaps around the system call. A coroutine's cancellation is
//! corun's own (`hooks/cancel.rs`): glibc's is never asked for on a
//! worker. For the program's own calls on an fd it made non-blocking
//! (`hooks::fd_mode::program_nonblocking`: an event loop's every read and
//! write) those two updates were all that corun added to the call: ~60
//! instructions of Redis's ~4300 per GET (callgrind; natively Redis's main
//! thread is already asynchronous-cancel, which makes glibc skip both).
//! Same reasoning as `hooks/rw.rs`'s `recv_nowait`.

use libc::{c_int, c_void, iovec, size_t, ssize_t};

use crate::sys::real;

/// `read(fd, buf, n)`, not a cancellation point.
///
/// # Safety
/// The contract of read(2).
#[inline]
pub unsafe fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    // SAFETY: the caller's read contract.
    unsafe { real::syscall!(libc::SYS_read, fd, buf, n) as ssize_t }
}

/// `write(fd, buf, n)`, not a cancellation point.
///
/// # Safety
/// The contract of write(2).
#[inline]
pub unsafe fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
    // SAFETY: the caller's write contract.
    unsafe { real::syscall!(libc::SYS_write, fd, buf, n) as ssize_t }
}

/// `readv(fd, iov, cnt)`, not a cancellation point.
///
/// # Safety
/// The contract of readv(2).
#[inline]
pub unsafe fn readv(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
    // SAFETY: the caller's readv contract.
    unsafe { real::syscall!(libc::SYS_readv, fd, iov, cnt) as ssize_t }
}

/// `writev(fd, iov, cnt)`, not a cancellation point.
///
/// # Safety
/// The contract of writev(2).
#[inline]
pub unsafe fn writev(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
    // SAFETY: the caller's writev contract.
    unsafe { real::syscall!(libc::SYS_writev, fd, iov, cnt) as ssize_t }
}
