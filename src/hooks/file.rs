//! `open`, `open64`, `openat`, `openat64`, `creat`, `fsync`, `fdatasync`,
//! `stat`, `stat64`, `lstat`, `lstat64`, `fstatat`, `fstatat64`, `statx`.
//!
//! Calls on paths and on regular files have no readiness to wait for: they
//! block in the kernel on the disk (or, for `open` of a FIFO, on the other
//! end). In a coroutine they run on the blocking pool (`sched::blocking`)
//! while the coroutine parks; outside one they pass straight through.
//!
//! `open` first tries `openat2(..., RESOLVE_CACHED)` inline: when the path
//! is in the dentry cache (the common case for a server's files) the open
//! completes without a hand-off; the kernel answers EAGAIN when it would
//! have to go to the disk, and only then does the call go to the pool.
//! A FIFO or device opened that way could still block in its open routine,
//! so the inline attempt is only kept for regular files and directories.
//!
//! `read`/`write`/`readv`/`writev` on a regular file come here from
//! `rw.rs`: one inline `preadv2`/`pwritev2` with RWF_NOWAIT serves what the
//! page cache holds at the cost of the one syscall the program made; only
//! when the kernel says it would wait for the disk (EAGAIN, or a short
//! count) does the rest go to the pool. A short count is never returned
//! for a regular file unless the file ends there, as natively.
//!
//! Every fd these return gets a fresh fd-table entry, so nothing corun knew
//! about an older fd of that number (closed behind its back by `fclose`)
//! survives.

use std::ffi::{c_char, c_int, c_uint};

use crate::sched::blocking::{run_blocking, SendPtr};
use crate::sched::{fdtable, in_coroutine};
use crate::sys::{errno, set_errno};

/// The real functions (the hooks below take their names).
mod real {
    use std::ffi::{c_char, c_int, c_uint};
    crate::sys::real::real_fns! {
    fn openat(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int;
    fn fsync(fd: c_int) -> c_int;
    fn fdatasync(fd: c_int) -> c_int;
    fn stat(path: *const c_char, buf: *mut libc::stat) -> c_int;
    fn stat64(path: *const c_char, buf: *mut libc::stat64) -> c_int;
    fn lstat(path: *const c_char, buf: *mut libc::stat) -> c_int;
    fn lstat64(path: *const c_char, buf: *mut libc::stat64) -> c_int;
    fn fstatat(dirfd: c_int, path: *const c_char, buf: *mut libc::stat, flags: c_int) -> c_int;
    fn fstatat64(dirfd: c_int, path: *const c_char, buf: *mut libc::stat64, flags: c_int) -> c_int;
    fn statx(dirfd: c_int, path: *const c_char, flags: c_int, mask: c_uint, buf: *mut libc::statx) -> c_int;
    }
}

/// Reads a regular file: page cache inline, the disk on the pool.
pub(crate) fn read_file(fd: c_int, iov: *const libc::iovec, cnt: c_int) -> isize {
    file_io(fd, iov, cnt, -1, false)
}

/// Writes a regular file: inline when the kernel can without waiting,
/// otherwise on the pool.
pub(crate) fn write_file(fd: c_int, iov: *const libc::iovec, cnt: c_int) -> isize {
    file_io(fd, iov, cnt, -1, true)
}

/// `pread`/`preadv` of a regular file at `offset`.
pub(crate) fn pread_file(fd: c_int, iov: *const libc::iovec, cnt: c_int, offset: i64) -> isize {
    file_io(fd, iov, cnt, offset, false)
}

/// `pwrite`/`pwritev` of a regular file at `offset`.
pub(crate) fn pwrite_file(fd: c_int, iov: *const libc::iovec, cnt: c_int, offset: i64) -> isize {
    file_io(fd, iov, cnt, offset, true)
}

/// One RWF_NOWAIT attempt inline, the rest (if any) on the pool. `offset`
/// -1 means the file position (read/write), else an explicit offset
/// (pread/pwrite, which never move the position).
fn file_io(fd: c_int, iov: *const libc::iovec, cnt: c_int, offset: i64, write: bool) -> isize {
    let total = super::rw::iov_len(iov, cnt);
    let saved = errno();
    // SAFETY: the caller's readv/writev contract.
    let r = unsafe {
        if write {
            crate::sys::real::pwritev2(fd, iov, cnt, offset, libc::RWF_NOWAIT)
        } else {
            crate::sys::real::preadv2(fd, iov, cnt, offset, libc::RWF_NOWAIT)
        }
    };
    let done = match r {
        r if r < 0 && matches!(errno(), libc::EAGAIN | libc::EOPNOTSUPP) => 0usize,
        r if r < 0 => return r,
        r if r as usize == total || (r == 0 && !write) => return r,
        r => r as usize,
    };
    set_errno(saved);
    let tail = super::rw::iov_tail(iov, cnt, done);
    let t = SendPtr(tail.as_ptr() as *mut libc::iovec);
    let n = tail.len() as c_int;
    let at = if offset < 0 { -1 } else { offset + done as i64 };
    // SAFETY: the rest of the caller's buffers, alive while we are parked;
    // preadv2/pwritev2 with flags 0 are plain (blocking) preadv/pwritev, or
    // readv/writev at offset -1.
    let rest = run_blocking(move || unsafe {
        if write {
            crate::sys::real::pwritev2(fd, t.get(), n, at, 0)
        } else {
            crate::sys::real::preadv2(fd, t.get(), n, at, 0)
        }
    });
    if rest < 0 {
        return if done > 0 { done as isize } else { rest };
    }
    (done + rest as usize) as isize
}

/// A new fd of any kind: forget what was known of its number.
fn fresh_fd(fd: c_int) -> c_int {
    if fd >= 0 {
        let saved = errno();
        if let Some(e) = fdtable::get(fd) {
            e.reset();
        }
        set_errno(saved);
    }
    fd
}

/// `openat2` with RESOLVE_CACHED: Some(fd) if it completed from the caches
/// on a regular file or directory, None if the pool must do it.
fn open_cached(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> Option<c_int> {
    if flags & (libc::O_CREAT | libc::O_TRUNC) != 0 {
        return None; // RESOLVE_CACHED refuses these
    }
    // SAFETY: open_how is plain integers; zero is valid for all of them.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_NONBLOCK | libc::O_CLOEXEC) as u64;
    how.mode = if flags & (libc::O_CREAT | libc::O_TMPFILE) != 0 {
        mode as u64
    } else {
        0
    };
    how.resolve = 0x20; // RESOLVE_CACHED
    let saved = errno();
    // SAFETY: raw openat2 with a valid open_how; `path` per the caller's
    // contract. O_NONBLOCK so that opening a FIFO cannot block here; the fd
    // is only kept when it is a regular file or directory.
    let fd = unsafe {
        crate::sys::real::syscall!(
            libc::SYS_openat2,
            dirfd,
            path,
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    } as c_int;
    if fd < 0 {
        // Not cached, or an error: the pool makes the real call, whose
        // answer is the program's.
        set_errno(saved);
        return None;
    }
    // SAFETY: a zeroed stat is a valid out-buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let ok = unsafe { crate::sys::real::syscall!(libc::SYS_fstat, fd, &mut st) } == 0
        && matches!(st.st_mode & libc::S_IFMT, libc::S_IFREG | libc::S_IFDIR);
    if !ok {
        // SAFETY: closing the fd opened just above (raw: not the program's).
        unsafe { crate::sys::real::syscall!(libc::SYS_close, fd) };
        set_errno(saved);
        return None;
    }
    // Give the fd the program's own flags back: O_NONBLOCK and O_CLOEXEC
    // only where it asked for them.
    // SAFETY: raw fcntl on our new fd.
    unsafe {
        if flags & libc::O_NONBLOCK == 0 {
            let fl = crate::sys::real::syscall!(libc::SYS_fcntl, fd, libc::F_GETFL);
            crate::sys::real::syscall!(
                libc::SYS_fcntl,
                fd,
                libc::F_SETFL,
                fl & !(libc::O_NONBLOCK as i64),
            );
        }
        if flags & libc::O_CLOEXEC == 0 {
            crate::sys::real::syscall!(libc::SYS_fcntl, fd, libc::F_SETFD, 0);
        }
    }
    set_errno(saved);
    Some(fd)
}

fn open_at(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint, large: bool) -> c_int {
    let flags = if large {
        flags | libc::O_LARGEFILE
    } else {
        flags
    };
    if in_coroutine() {
        if let Some(fd) = open_cached(dirfd, path, flags, mode) {
            return fresh_fd(fd);
        }
    }
    let p = SendPtr(path as *mut c_char);
    // SAFETY: the caller's open contract; `path` outlives the parked call.
    fresh_fd(run_blocking(move || unsafe {
        real::openat(dirfd, p.get(), flags, mode)
    }))
}

#[no_mangle]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    open_at(libc::AT_FDCWD, path, flags, mode, false)
}

#[no_mangle]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    open_at(libc::AT_FDCWD, path, flags, mode, true)
}

#[no_mangle]
pub unsafe extern "C" fn openat(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    open_at(dirfd, path, flags, mode, false)
}

#[no_mangle]
pub unsafe extern "C" fn openat64(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    open_at(dirfd, path, flags, mode, true)
}

#[no_mangle]
pub unsafe extern "C" fn creat(path: *const c_char, mode: c_uint) -> c_int {
    open_at(
        libc::AT_FDCWD,
        path,
        libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC,
        mode,
        false,
    )
}

#[no_mangle]
pub unsafe extern "C" fn fsync(fd: c_int) -> c_int {
    // SAFETY: plain integer.
    run_blocking(move || unsafe { real::fsync(fd) })
}

#[no_mangle]
pub unsafe extern "C" fn fdatasync(fd: c_int) -> c_int {
    // SAFETY: plain integer.
    run_blocking(move || unsafe { real::fdatasync(fd) })
}

macro_rules! stat_hook {
    ($name:ident, $buf:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, buf: *mut $buf) -> c_int {
            let (p, b) = (SendPtr(path as *mut c_char), SendPtr(buf));
            // SAFETY: the caller's contract; both pointers outlive the parked call.
            run_blocking(move || unsafe { real::$name(p.get(), b.get()) })
        }
    };
}

stat_hook!(stat, libc::stat);
stat_hook!(stat64, libc::stat64);
stat_hook!(lstat, libc::stat);
stat_hook!(lstat64, libc::stat64);

#[no_mangle]
pub unsafe extern "C" fn fstatat(
    dirfd: c_int,
    path: *const c_char,
    buf: *mut libc::stat,
    flags: c_int,
) -> c_int {
    let (p, b) = (SendPtr(path as *mut c_char), SendPtr(buf));
    // SAFETY: as stat.
    run_blocking(move || unsafe { real::fstatat(dirfd, p.get(), b.get(), flags) })
}

#[no_mangle]
pub unsafe extern "C" fn fstatat64(
    dirfd: c_int,
    path: *const c_char,
    buf: *mut libc::stat64,
    flags: c_int,
) -> c_int {
    let (p, b) = (SendPtr(path as *mut c_char), SendPtr(buf));
    // SAFETY: as stat.
    run_blocking(move || unsafe { real::fstatat64(dirfd, p.get(), b.get(), flags) })
}

#[no_mangle]
pub unsafe extern "C" fn statx(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mask: c_uint,
    buf: *mut libc::statx,
) -> c_int {
    let (p, b) = (SendPtr(path as *mut c_char), SendPtr(buf));
    // SAFETY: as stat.
    run_blocking(move || unsafe { real::statx(dirfd, p.get(), flags, mask, b.get()) })
}
