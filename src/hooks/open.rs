//! The calls that create fds, besides those with their families: `creat64`
//! and the fortified `__open_2`, `__open64_2`, `__openat_2`,
//! `__openat64_2` (all of them `open`/`openat`/`creat` of `file.rs`, which
//! runs them on the blocking pool); `eventfd`, `timerfd_create`,
//! `signalfd`, `inotify_init`, `inotify_init1`, `memfd_create`. (`socket`,
//! `accept`, `pipe`, `dup`, `epoll_create`, `open` are with their families.)
//!
//! corun keeps per-fd knowledge (kind, the program's O_NONBLOCK wish,
//! socket timeouts, the epoll registration). An fd closed behind corun's
//! back (glibc's stdio, a raw syscall) leaves that knowledge stale for the
//! next file given the same number: a kind that says "socket" for an
//! eventfd, a registration that is gone, a wish that is not the new file's.
//! Each call here resets the new fd's entry, recording the O_NONBLOCK wish
//! its flags express (the fortified opens get that from `file.rs`). Reads and writes on
//! these fds are handled by `rw.rs` by kind (eventfd: RWF_NOWAIT; timerfd,
//! signalfd, inotify, ttys: readiness then the call; files: the call).

use std::ffi::{c_char, c_int, c_uint};

use super::fdctl::note_new_fd;
use crate::sched::fdtable::KIND_UNKNOWN;

mod next {
    use std::ffi::{c_char, c_int, c_uint};
    crate::sys::real::real_fns! {
        fn eventfd(initval: c_uint, flags: c_int) -> c_int;
        fn timerfd_create(clock: c_int, flags: c_int) -> c_int;
        fn signalfd(fd: c_int, mask: *const libc::sigset_t, flags: c_int) -> c_int;
        fn inotify_init() -> c_int;
        fn inotify_init1(flags: c_int) -> c_int;
        fn memfd_create(name: *const c_char, flags: c_uint) -> c_int;
    }
}

/// Resets the entry of a newly created fd (`r`, if the call succeeded).
fn created(r: c_int, nonblock: bool) -> c_int {
    if r >= 0 {
        note_new_fd(r, KIND_UNKNOWN, nonblock);
    }
    r
}

// The fortified names check nothing corun could, and glibc's own do no
// more than the plain call when the flags need no mode: they are `open`.

#[no_mangle]
pub unsafe extern "C" fn __open_2(path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the caller's open contract.
    unsafe { super::file::open(path, flags, 0) }
}

#[no_mangle]
pub unsafe extern "C" fn __open64_2(path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the caller's open contract.
    unsafe { super::file::open64(path, flags, 0) }
}

#[no_mangle]
pub unsafe extern "C" fn __openat_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the caller's openat contract.
    unsafe { super::file::openat(dirfd, path, flags, 0) }
}

#[no_mangle]
pub unsafe extern "C" fn __openat64_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the caller's openat contract.
    unsafe { super::file::openat64(dirfd, path, flags, 0) }
}

#[no_mangle]
pub unsafe extern "C" fn creat64(path: *const c_char, mode: c_uint) -> c_int {
    // SAFETY: the caller's creat contract (creat64 is creat on 64-bit).
    unsafe { super::file::creat(path, mode) }
}

#[no_mangle]
pub unsafe extern "C" fn eventfd(initval: c_uint, flags: c_int) -> c_int {
    // SAFETY: plain integers.
    created(
        unsafe { next::eventfd(initval, flags) },
        flags & libc::EFD_NONBLOCK != 0,
    )
}

#[no_mangle]
pub unsafe extern "C" fn timerfd_create(clock: c_int, flags: c_int) -> c_int {
    // SAFETY: plain integers.
    created(
        unsafe { next::timerfd_create(clock, flags) },
        flags & libc::TFD_NONBLOCK != 0,
    )
}

#[no_mangle]
pub unsafe extern "C" fn signalfd(fd: c_int, mask: *const libc::sigset_t, flags: c_int) -> c_int {
    // SAFETY: the caller's signalfd contract.
    let r = unsafe { next::signalfd(fd, mask, flags) };
    if fd == -1 {
        // A new signalfd; with an existing fd only its mask changed.
        return created(r, flags & libc::SFD_NONBLOCK != 0);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn inotify_init() -> c_int {
    // SAFETY: no arguments.
    created(unsafe { next::inotify_init() }, false)
}

#[no_mangle]
pub unsafe extern "C" fn inotify_init1(flags: c_int) -> c_int {
    // SAFETY: plain integer.
    created(
        unsafe { next::inotify_init1(flags) },
        flags & libc::IN_NONBLOCK != 0,
    )
}

#[no_mangle]
pub unsafe extern "C" fn memfd_create(name: *const c_char, flags: c_uint) -> c_int {
    // SAFETY: the caller's memfd_create contract.
    created(unsafe { next::memfd_create(name, flags) }, false)
}
