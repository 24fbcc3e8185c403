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
//!
//! On x86-64 the system call is made here, by the `syscall` instruction,
//! not through glibc's `syscall(3)`: that wrapper is an indirect call
//! through corun's slot (a cache line of its own) and a shuffle of all
//! six argument registers, ~17 instructions of what corun added to each
//! read and write of Redis's event loop (callgrind). The result is what
//! `syscall(3)` gives: the count, or -1 with errno set.

use libc::{c_int, c_void, iovec, size_t, ssize_t};

#[cfg(not(target_arch = "x86_64"))]
use crate::sys::real;

/// System call `nr` with three arguments, as `syscall(3)` returns it.
///
/// # Safety
/// The contract of system call `nr` for these arguments.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn syscall3(nr: libc::c_long, a: usize, b: usize, c: usize) -> ssize_t {
    let r: isize;
    // SAFETY: the Linux x86-64 system call convention: number and result
    // in rax, arguments in rdi, rsi, rdx; the kernel clobbers rcx and r11
    // only, and touches no user stack. Memory is not marked untouched: the
    // call may write the caller's buffers (the caller's contract).
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") nr as isize => r,
            in("rdi") a,
            in("rsi") b,
            in("rdx") c,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    // -4095..-1 are errors (the kernel's -errno), as glibc decides.
    if (-4095..0).contains(&r) {
        super::set_errno(-r as i32);
        return -1;
    }
    r
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
unsafe fn syscall3(nr: libc::c_long, a: usize, b: usize, c: usize) -> ssize_t {
    // SAFETY: the caller's contract for system call `nr`.
    unsafe { real::syscall!(nr, a, b, c) as ssize_t }
}

/// `read(fd, buf, n)`, not a cancellation point.
///
/// # Safety
/// The contract of read(2).
#[inline]
pub unsafe fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    // SAFETY: the caller's read contract.
    unsafe { syscall3(libc::SYS_read, fd as usize, buf as usize, n) }
}

/// `write(fd, buf, n)`, not a cancellation point.
///
/// # Safety
/// The contract of write(2).
#[inline]
pub unsafe fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
    // SAFETY: the caller's write contract.
    unsafe { syscall3(libc::SYS_write, fd as usize, buf as usize, n) }
}

/// `readv(fd, iov, cnt)`, not a cancellation point.
///
/// # Safety
/// The contract of readv(2).
#[inline]
pub unsafe fn readv(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
    // SAFETY: the caller's readv contract.
    unsafe { syscall3(libc::SYS_readv, fd as usize, iov as usize, cnt as usize) }
}

/// `writev(fd, iov, cnt)`, not a cancellation point.
///
/// # Safety
/// The contract of writev(2).
#[inline]
pub unsafe fn writev(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
    // SAFETY: the caller's writev contract.
    unsafe { syscall3(libc::SYS_writev, fd as usize, iov as usize, cnt as usize) }
}
