//! corun's own fds, kept out of the program's sight: listings of the
//! process's fds (`/proc/self/fd`, `/dev/fd`) and probes of one fd
//! (`fstat`; `fcntl`, `close`, `dup2` in fdctl.rs) do not see them.
//!
//! corun keeps an epoll and an eventfd per worker (docs/ARCHITECTURE.md
//! §4), moved high (960 and up) but still open: natively they do not exist.
//! Programs list their fds: CPython's subprocess test checks that a child
//! has exactly the fds it passed (`test_pass_fds_redirected` saw
//! 960-963 too), daemons and shells close "every fd" they find there. So a
//! directory stream opened on this process's fd directory skips corun's
//! fds when read (`readdir`, `readdir64`; `close` already spares them).
//!
//! `opendir` looks at paths under `/proc/` and `/dev/fd` only: the stream
//! is marked when its directory is this process's fd directory (the same
//! inode as `/proc/self/fd` or `/proc/thread-self/fd`). `fdopendir` asks
//! the same of its fd. Reading an unmarked stream costs one atomic load.
//! Probing every fd number with `fstat` (CPython's test helper
//! `fd_status.py`) or `fcntl(F_GETFD)` (closefrom emulations) finds EBADF
//! there, as for a closed fd. Not covered: `getdents64` and `fstat` made
//! as raw system calls (Go, `syscall()`).

use std::ffi::{c_char, c_int, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use libc::DIR;

use crate::sched::fdtable;

mod real {
    use libc::{c_char, c_int, dirent, dirent64, DIR};
    crate::sys::real::real_fns! {
        fn opendir(name: *const c_char) -> *mut DIR;
        fn fdopendir(fd: c_int) -> *mut DIR;
        fn closedir(d: *mut DIR) -> c_int;
        fn readdir(d: *mut DIR) -> *mut dirent;
        fn readdir64(d: *mut DIR) -> *mut dirent64;
        fn fstat(fd: c_int, st: *mut libc::stat) -> c_int;
        fn fstat64(fd: c_int, st: *mut libc::stat64) -> c_int;
        fn __fxstat(ver: c_int, fd: c_int, st: *mut libc::stat) -> c_int;
        fn __fxstat64(ver: c_int, fd: c_int, st: *mut libc::stat64) -> c_int;
    }
}

/// Streams open on this process's fd directory. Held for a lookup or an
/// update only, never across a call; a fork that catches it held leaves the
/// child's listings of /proc/self/fd waiting (a window of nanoseconds).
static MARKED: Mutex<Vec<usize>> = Mutex::new(Vec::new());
/// How many: readdir of any other stream looks at nothing else.
static COUNT: AtomicUsize = AtomicUsize::new(0);

/// The device and inode of `path` (relative to `dirfd`, or `dirfd` itself
/// with an empty path), from the kernel directly: corun's own `stat` hooks
/// would park.
fn inode(dirfd: c_int, path: &CStr, flags: c_int) -> Option<(u64, u64)> {
    // SAFETY: a zeroed stat is a valid out-buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid buffer.
    let r = unsafe {
        crate::sys::real::syscall!(libc::SYS_newfstatat, dirfd, path.as_ptr(), &mut st, flags)
    };
    (r == 0).then_some((st.st_dev, st.st_ino))
}

/// Whether `fd` (an open directory) is this process's fd directory.
fn is_fd_dir(fd: c_int) -> bool {
    let me = inode(fd, c"", libc::AT_EMPTY_PATH);
    me.is_some()
        && (inode(libc::AT_FDCWD, c"/proc/self/fd", 0) == me
            || inode(libc::AT_FDCWD, c"/proc/thread-self/fd", 0) == me)
}

fn mark(d: *mut DIR) {
    if d.is_null() {
        return;
    }
    let saved = crate::sys::errno();
    // SAFETY: a stream the real call just opened.
    if is_fd_dir(unsafe { libc::dirfd(d) }) {
        fdtable::lock(&MARKED).push(d as usize);
        COUNT.fetch_add(1, Ordering::Release);
    }
    crate::sys::set_errno(saved);
}

fn marked(d: *mut DIR) -> bool {
    COUNT.load(Ordering::Acquire) != 0 && fdtable::lock(&MARKED).contains(&(d as usize))
}

/// Whether an entry named `name` is one of corun's fds.
fn hidden(name: &[c_char]) -> bool {
    let mut fd: i32 = 0;
    let mut digits = 0;
    for &c in name {
        if c == 0 {
            break;
        }
        let c = c as u8;
        if !c.is_ascii_digit() || digits > 9 {
            return false;
        }
        fd = fd * 10 + (c - b'0') as i32;
        digits += 1;
    }
    digits > 0 && fdtable::is_runtime(fd)
}

#[no_mangle]
pub unsafe extern "C" fn opendir(name: *const c_char) -> *mut DIR {
    // SAFETY: the caller's contract.
    let d = unsafe { real::opendir(name) };
    if !d.is_null() {
        // SAFETY: the real call has read `name`: a valid C string.
        let path = unsafe { CStr::from_ptr(name) }.to_bytes();
        if path.starts_with(b"/proc/") || path.starts_with(b"/dev/fd") {
            mark(d);
        }
    }
    d
}

#[no_mangle]
pub unsafe extern "C" fn fdopendir(fd: c_int) -> *mut DIR {
    // SAFETY: the caller's contract.
    let d = unsafe { real::fdopendir(fd) };
    mark(d);
    d
}

#[no_mangle]
pub unsafe extern "C" fn closedir(d: *mut DIR) -> c_int {
    if COUNT.load(Ordering::Acquire) != 0 {
        let mut m = fdtable::lock(&MARKED);
        if let Some(i) = m.iter().position(|&p| p == d as usize) {
            m.swap_remove(i);
            COUNT.fetch_sub(1, Ordering::Release);
        }
    }
    // SAFETY: the caller's contract.
    unsafe { real::closedir(d) }
}

/// `readdir`/`readdir64`: the real entries, but corun's own fds' for a
/// marked stream.
macro_rules! readdir_hook {
    ($name:ident, $entry:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(d: *mut DIR) -> *mut $entry {
            let hide = marked(d);
            loop {
                // SAFETY: the caller's contract.
                let e = unsafe { real::$name(d) };
                // SAFETY: a non-NULL entry points into the stream's buffer.
                if e.is_null() || !hide || !hidden(unsafe { &(*e).d_name }) {
                    return e;
                }
            }
        }
    };
}

readdir_hook!(readdir, libc::dirent);
readdir_hook!(readdir64, libc::dirent64);

/// -1/EBADF for one of corun's fds: to the program it is not open.
/// `fstat` and its variants: EBADF for corun's own fds, else the real call.
macro_rules! fstat_hook {
    ($name:ident ($($arg:ident : $ty:ty),*), $fd:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            if fdtable::is_runtime($fd) {
                return super::ebadf();
            }
            // SAFETY: the caller's contract.
            unsafe { real::$name($($arg),*) }
        }
    };
}

fstat_hook!(fstat(fd: c_int, st: *mut libc::stat), fd);
fstat_hook!(fstat64(fd: c_int, st: *mut libc::stat64), fd);
fstat_hook!(__fxstat(ver: c_int, fd: c_int, st: *mut libc::stat), fd);
fstat_hook!(__fxstat64(ver: c_int, fd: c_int, st: *mut libc::stat64), fd);
