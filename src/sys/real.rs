//! The real libc functions behind every interposed name.
//!
//! libcorun.so exports `read`, `write`, `close`, ... so that the program's calls
//! land in our hooks. The same dynamic linking sends *our own* calls to those
//! names (from Rust std, from `libc::read`) back into the hooks. The runtime
//! therefore never calls an interposed name directly: it calls the function of
//! the same name in this module, which jumps to the next definition in the
//! link order (`dlsym(RTLD_NEXT, name)`), i.e. glibc's.
//!
//! Why not `redhook` (docs/ARCHITECTURE.md §6): its `real!` resolves under a
//! `std::sync::Once`, so a first call that re-enters the same hook (dlsym
//! itself may call into libc) deadlocks; a missing symbol panics, and a panic
//! inside an exported hook is a crash; it cannot declare a variadic
//! (`fcntl`, `ioctl`). Here each symbol is one `AtomicPtr` filled on first use:
//! racing first calls both resolve the same address, which is harmless, and a
//! missing symbol is reported by name before aborting. `resolve_missing_is_none`
//! below shows the behaviour redhook lacks.

use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

/// Looks `name` up in the objects loaded after libcorun.so.
pub fn resolve(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: `name` is NUL-terminated; RTLD_NEXT is valid from a shared object.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if p.is_null() {
        None
    } else {
        Some(p)
    }
}

/// Resolves `name` into `slot` once, or aborts with the symbol's name.
#[cold]
pub fn resolve_into(slot: &AtomicPtr<c_void>, name: &CStr) -> *mut c_void {
    match resolve(name) {
        Some(p) => {
            slot.store(p, Ordering::Release);
            p
        }
        None => {
            crate::sys::raw_stderr(b"corun: cannot find the real libc symbol ");
            crate::sys::raw_stderr(name.to_bytes());
            crate::sys::raw_stderr(b"\n");
            // SAFETY: abort never returns and is async-signal-safe.
            unsafe { libc::abort() }
        }
    }
}

/// Declares `pub unsafe fn NAME(args) -> ret` calling the next definition of
/// NAME. A family of hooks with real functions of its own may declare them
/// in its own module with `crate::sys::real::real_fns! { ... }` (once per
/// module). Each invocation also makes `resolve_all()`, which looks every
/// one of its names up now: a process about to fork does it once, so that
/// its children do not each repeat the lookups (`dlsym` was a third of the
/// page faults of a fork-per-connection server's children).
macro_rules! real_fns {
    ($( fn $name:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty ; )*) => {
        /// Where each real function is kept once resolved.
        #[allow(non_upper_case_globals)]
        mod __slots {
            $(
                pub static $name: std::sync::atomic::AtomicPtr<std::ffi::c_void> =
                    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
            )*
        }

        /// Resolves every function of this table that is not yet (one
        /// this libc lacks stays unresolved: its first call reports it).
        #[allow(dead_code)]
        pub fn resolve_all() {
            $(
                if __slots::$name.load(std::sync::atomic::Ordering::Acquire).is_null() {
                    // SAFETY: the literal is NUL-terminated and has no interior NUL.
                    let name = unsafe { std::ffi::CStr::from_bytes_with_nul_unchecked(concat!(stringify!($name), "\0").as_bytes()) };
                    if let Some(p) = $crate::sys::real::resolve(name) {
                        __slots::$name.store(p, std::sync::atomic::Ordering::Release);
                    }
                }
            )*
        }

        $(
            #[inline]
            // unreachable_code, diverging_sub_expression: a function
            // returning `!` (`pthread_exit`).
            #[allow(clippy::missing_safety_doc, clippy::too_many_arguments, clippy::diverging_sub_expression, unreachable_code)]
            pub unsafe fn $name($($arg: $ty),*) -> $ret {
                /// The first call: resolves, then calls. Apart, so that
                /// the callers' common path keeps no registers for it (a
                /// hook's call to libc stays a tail jump).
                #[cold]
                #[inline(never)]
                unsafe fn __resolve_then_call($($arg: $ty),*) -> $ret {
                    let p = $crate::sys::real::resolve_into(
                        &__slots::$name,
                        // SAFETY: the literal is NUL-terminated and has no interior NUL.
                        unsafe { std::ffi::CStr::from_bytes_with_nul_unchecked(concat!(stringify!($name), "\0").as_bytes()) },
                    );
                    // SAFETY: as below.
                    let f: unsafe extern "C" fn($($ty),*) -> $ret = unsafe { std::mem::transmute(p) };
                    // SAFETY: the caller upholds the libc function's contract.
                    unsafe { f($($arg),*) }
                }
                let p = __slots::$name.load(std::sync::atomic::Ordering::Acquire);
                if p.is_null() {
                    // SAFETY: the caller upholds the libc function's contract.
                    return unsafe { __resolve_then_call($($arg),*) };
                }
                // SAFETY: `p` is the address of the libc function of this name,
                // whose C prototype is the one declared here.
                let f: unsafe extern "C" fn($($ty),*) -> $ret = unsafe { std::mem::transmute(p) };
                // SAFETY: the caller upholds the libc function's contract.
                unsafe { f($($arg),*) }
            }
        )*
    };
}

#[allow(unused_imports)]
pub(crate) use real_fns;

use libc::{
    c_int, c_uint, c_ulong, c_void as v, iovec, msghdr, nfds_t, pollfd, sigset_t, size_t, sockaddr,
    socklen_t, ssize_t, timespec,
};

type MainFn = extern "C" fn(c_int, *mut *mut c_char, *mut *mut c_char) -> c_int;

real_fns! {
    fn __libc_start_main(main: MainFn, argc: c_int, argv: *mut *mut c_char,
        init: *mut v, fini: *mut v, rtld_fini: *mut v, stack_end: *mut v) -> c_int;
    fn read(fd: c_int, buf: *mut v, n: size_t) -> ssize_t;
    fn write(fd: c_int, buf: *const v, n: size_t) -> ssize_t;
    fn readv(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t;
    fn writev(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t;
    fn pread64(fd: c_int, buf: *mut v, n: size_t, off: i64) -> ssize_t;
    fn pwrite64(fd: c_int, buf: *const v, n: size_t, off: i64) -> ssize_t;
    fn sigaction(sig: c_int, act: *const libc::sigaction, old: *mut libc::sigaction) -> c_int;
    fn preadv2(fd: c_int, iov: *const iovec, cnt: c_int, off: i64, flags: c_int) -> ssize_t;
    fn pwritev2(fd: c_int, iov: *const iovec, cnt: c_int, off: i64, flags: c_int) -> ssize_t;
    fn recv(fd: c_int, buf: *mut v, n: size_t, flags: c_int) -> ssize_t;
    fn send(fd: c_int, buf: *const v, n: size_t, flags: c_int) -> ssize_t;
    fn recvfrom(fd: c_int, buf: *mut v, n: size_t, flags: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> ssize_t;
    fn sendto(fd: c_int, buf: *const v, n: size_t, flags: c_int, addr: *const sockaddr, len: socklen_t) -> ssize_t;
    fn recvmsg(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t;
    fn sendmsg(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t;
    fn accept4(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t, flags: c_int) -> c_int;
    fn connect(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int;
    fn socket(domain: c_int, ty: c_int, proto: c_int) -> c_int;
    fn socketpair(domain: c_int, ty: c_int, proto: c_int, sv: *mut c_int) -> c_int;
    fn pipe2(fds: *mut c_int, flags: c_int) -> c_int;
    fn close(fd: c_int) -> c_int;
    fn shutdown(fd: c_int, how: c_int) -> c_int;
    fn dup(fd: c_int) -> c_int;
    fn dup2(fd: c_int, fd2: c_int) -> c_int;
    fn dup3(fd: c_int, fd2: c_int, flags: c_int) -> c_int;
    fn fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int;
    fn fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int;
    fn ioctl(fd: c_int, req: c_ulong, arg: c_ulong) -> c_int;
    fn setsockopt(fd: c_int, level: c_int, name: c_int, val: *const v, len: socklen_t) -> c_int;
    fn getsockopt(fd: c_int, level: c_int, name: c_int, val: *mut v, len: *mut socklen_t) -> c_int;
    fn poll(fds: *mut pollfd, n: nfds_t, timeout: c_int) -> c_int;
    fn ppoll(fds: *mut pollfd, n: nfds_t, ts: *const timespec, mask: *const sigset_t) -> c_int;
    fn nanosleep(req: *const timespec, rem: *mut timespec) -> c_int;
    fn clock_nanosleep(clock: libc::clockid_t, flags: c_int, req: *const timespec, rem: *mut timespec) -> c_int;
    fn usleep(us: libc::useconds_t) -> c_int;
    fn sleep(s: c_uint) -> c_uint;
    fn epoll_wait(epfd: c_int, ev: *mut libc::epoll_event, max: c_int, timeout: c_int) -> c_int;
    fn pthread_create(t: *mut libc::pthread_t, attr: *const libc::pthread_attr_t,
        f: extern "C" fn(*mut v) -> *mut v, arg: *mut v) -> c_int;
    fn pthread_detach(t: libc::pthread_t) -> c_int;
    fn fork() -> libc::pid_t;
}

/// glibc's `syscall(2)` wrapper, C-variadic as in C.
pub type SyscallFn = unsafe extern "C" fn(libc::c_long, ...) -> libc::c_long;

/// Where glibc's `syscall` is kept once resolved. `hooks::syscall` reads it
/// from assembly, to send corun's own calls (Rust std's futex, `libc::syscall`
/// in the runtime) straight to glibc.
pub static SYSCALL: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// glibc's `syscall`, never the hook of that name.
#[inline]
pub fn syscall_fn() -> SyscallFn {
    let mut p = SYSCALL.load(Ordering::Acquire);
    if p.is_null() {
        p = resolve_into(&SYSCALL, c"syscall");
    }
    // SAFETY: `p` is glibc's `long syscall(long number, ...)`.
    unsafe { std::mem::transmute::<*mut c_void, SyscallFn>(p) }
}

/// `syscall!(SYS_x, args...)`: glibc's `syscall(SYS_x, args...)`, for runtime
/// code (the program's calls to that name reach `hooks::syscall`). Used
/// inside `unsafe`, with the contract of the system call made.
macro_rules! syscall {
    ($($arg:expr),+ $(,)?) => {
        ($crate::sys::real::syscall_fn())($($arg),+)
    };
}
pub(crate) use syscall;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_missing_is_none() {
        // redhook panics here; corun reports the name instead of unwinding into C.
        assert!(resolve(c"corun_no_such_symbol_anywhere").is_none());
    }

    #[test]
    fn resolve_finds_libc() {
        assert!(resolve(c"getppid").is_some() || resolve(c"read").is_some());
    }
}
