//! Answers the kernel gives from its caches, made inline on the worker.
//!
//! `open` and the `stat` family by path have no readiness to wait for, so
//! in a coroutine they would go to the blocking pool (`sched::blocking`).
//! Most of the time they do not touch the disk at all: a server opens and
//! stats the same files again and again, and its misses (`.htaccess` in
//! every directory of Apache's path walk) are negative dentries. A pool
//! hand-off costs two thread wake-ups; the call itself costs a microsecond.
//!
//! `openat2(..., RESOLVE_CACHED)` resolves a path from the dentry cache
//! only, and answers EAGAIN when it would have to ask the filesystem. Its
//! other answers are final, and the same a plain `openat` would give:
//!
//! - ENOENT (a cached negative dentry), ENOTDIR, EACCES, ELOOP,
//!   ENAMETOOLONG, EFAULT, EBADF (dirfd), and for `open` also EISDIR,
//!   EROFS, ETXTBSY, EPERM, EEXIST, EMFILE, ENFILE: returned inline;
//! - EAGAIN (not cached, or O_CREAT/O_TRUNC/O_TMPFILE, which the kernel
//!   refuses here; but see `parent_answer` for a walk through a file),
//!   EINVAL (`openat2` is stricter than `openat` about
//!   unknown flags), and anything else: the pool makes the program's call.
//!
//! `open`: the attempt adds O_NONBLOCK, so that a FIFO or a device cannot
//! block in its open routine; the fd is kept only for a regular file or a
//! directory (one fstat), and O_NONBLOCK is taken off again unless the
//! program asked for it (one F_SETFL): three syscalls instead of a hand-off.
//! O_PATH and O_DIRECTORY opens never reach such an open routine: one
//! syscall, as natively.
//!
//! `stat`, `lstat`, `fstatat`, `statx`: an O_PATH open with RESOLVE_CACHED
//! (O_NOFOLLOW for lstat and AT_SYMLINK_NOFOLLOW) finds the inode, then the
//! same stat call on that fd with AT_EMPTY_PATH, then close: the fields are
//! those of the path, since the fd is the path's inode. O_PATH needs the
//! same search permission as stat and follows symlinks (and trailing
//! slashes) as stat does. Our extra fd may fail where stat would not
//! (EMFILE): that goes to the pool. A stat of an fd (AT_EMPTY_PATH with
//! an empty path, as Rust's `File::metadata` makes) is an fstat, which
//! corun never moves off the worker.
//!
//! The inode behind a cached dentry is in memory, so on local filesystems
//! the stat does not wait. On a network or FUSE filesystem the attributes
//! may have expired and the stat may ask the server from the worker (the
//! open of such a file could already: NFSv4 opens go to the server).
//! `statx` with AT_STATX_FORCE_SYNC, which asks for exactly that, goes to
//! the pool.

use std::ffi::{c_char, c_int, c_uint};

use super::path_memo;
use crate::sched::blocking::note_inline;
use crate::sys::{errno, real, set_errno};

/// RESOLVE_CACHED (linux/openat2.h); not in the libc crate yet.
const RESOLVE_CACHED: u64 = 0x20;

/// `openat2` with RESOLVE_CACHED: Ok(fd), or Err(errno). errno is left as
/// it was.
fn openat2_cached(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> Result<c_int, c_int> {
    // SAFETY: open_how is plain integers; zero is valid for all of them.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u32 as u64;
    how.mode = if flags & libc::O_CREAT != 0 || is_tmpfile(flags) {
        mode as u64
    } else {
        0
    };
    how.resolve = RESOLVE_CACHED;
    let saved = errno();
    // SAFETY: raw openat2 with a valid open_how; `path` per the caller's
    // contract (a bad pointer is EFAULT, as for openat).
    let fd = unsafe {
        real::syscall!(
            libc::SYS_openat2,
            dirfd,
            path,
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    } as c_int;
    let r = if fd < 0 { Err(errno()) } else { Ok(fd) };
    set_errno(saved);
    if r != Err(libc::EFAULT) {
        path_memo::path_was_read(path);
    }
    r
}

/// O_TMPFILE includes O_DIRECTORY's bit: test all of its bits.
fn is_tmpfile(flags: c_int) -> bool {
    flags & libc::O_TMPFILE == libc::O_TMPFILE
}

/// Errors of a RESOLVE_CACHED lookup that a plain lookup would give too.
fn final_lookup_error(e: c_int) -> bool {
    matches!(
        e,
        libc::ENOENT
            | libc::ENOTDIR
            | libc::EACCES
            | libc::ELOOP
            | libc::ENAMETOOLONG
            | libc::EFAULT
            | libc::EBADF
    )
}

/// Errors of opening the file found that `openat` would give too.
fn final_open_error(e: c_int) -> bool {
    final_lookup_error(e)
        || matches!(
            e,
            libc::EISDIR
                | libc::EROFS
                | libc::ETXTBSY
                | libc::EPERM
                | libc::EEXIST
                | libc::EMFILE
                | libc::ENFILE
        )
}

/// A path whose walk goes through a non-directory ("file/.htaccess", which
/// Apache tries for every file it serves): the kernel's cached walk
/// answers EAGAIN there rather than ENOTDIR. Asks again about the path up
/// to its last component, with a trailing slash ("file/"): ENOTDIR or
/// ENOENT (ELOOP, EACCES) there is the whole path's answer too, since the
/// walk fails at that component before it looks further, following a
/// symlink as it would; EAGAIN again, one component up (a few times).
/// Some(errno), or None when a parent is a directory (a true miss) or is
/// not cached either.
fn parent_answer(dirfd: c_int, path: *const c_char) -> Option<c_int> {
    // SAFETY: the kernel has just read the whole string (it answered
    // EAGAIN, not EFAULT), so it is a valid C string.
    let bytes = unsafe { std::ffi::CStr::from_ptr(path) }.to_bytes();
    // Not zeroed (a 4 KiB memset per call showed in Apache's profile):
    // each prefix is copied in and terminated before use.
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); libc::PATH_MAX as usize];
    let mut end = bytes.len();
    for _ in 0..4 {
        while end > 0 && bytes[end - 1] == b'/' {
            end -= 1; // trailing slashes belong to the last component
        }
        let slash = bytes[..end].iter().rposition(|&c| c == b'/')?;
        if bytes[..slash].iter().all(|&c| c == b'/') || slash + 2 > buf.len() {
            return None; // the parent is "/" (or dirfd): a directory
        }
        for (d, &c) in buf.iter_mut().zip(&bytes[..=slash]) {
            d.write(c);
        }
        buf[slash + 1].write(0);
        let p = buf.as_ptr() as *const c_char;
        match openat2_cached(dirfd, p, libc::O_PATH | libc::O_CLOEXEC, 0) {
            Ok(fd) => {
                close_ours(fd);
                return None;
            }
            Err(e @ (libc::ENOTDIR | libc::ENOENT | libc::ELOOP | libc::EACCES)) => return Some(e),
            Err(libc::EAGAIN) => end = slash,
            Err(_) => return None,
        }
    }
    None
}

/// Closes an fd of ours (raw: not the program's `close`), keeping errno.
fn close_ours(fd: c_int) {
    let saved = errno();
    // SAFETY: closing an fd this module opened.
    unsafe { real::syscall!(libc::SYS_close, fd) };
    set_errno(saved);
}

/// `openat(dirfd, path, flags, mode)` answered from the caches: Some(fd),
/// Some(-1) with errno set, or None when the pool must make the call.
pub(crate) fn open(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> Option<c_int> {
    if flags & (libc::O_CREAT | libc::O_TRUNC) != 0 || is_tmpfile(flags) {
        return None; // RESOLVE_CACHED refuses these
    }
    let key = path_memo::key(dirfd, path);
    if let Some(e) = key
        .filter(|k| k.parent_regular_recently())
        .and_then(|_| parent_answer(dirfd, path))
    {
        note_inline();
        set_errno(e);
        return Some(-1);
    }
    // No open routine that could block runs for O_PATH or a directory, nor
    // for the regular file this thread found at this path a moment ago
    // (path_memo.rs says why that is safe enough).
    let known_regular = key.is_some_and(|k| k.regular_recently());
    let safe = flags & (libc::O_PATH | libc::O_DIRECTORY) != 0 || known_regular;
    let try_flags = if safe {
        flags
    } else {
        flags | libc::O_NONBLOCK
    };
    let fd = match openat2_cached(dirfd, path, try_flags, mode) {
        Ok(fd) => fd,
        Err(e) if final_open_error(e) => {
            note_inline();
            set_errno(e);
            return Some(-1);
        }
        Err(libc::EAGAIN) => {
            let e = parent_answer(dirfd, path)?;
            note_inline();
            set_errno(e);
            return Some(-1);
        }
        Err(_) => return None,
    };
    if !safe {
        // SAFETY: a zeroed stat is a valid out-buffer.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat of the fd opened just above.
        let ok = unsafe { real::syscall!(libc::SYS_fstat, fd, &mut st) } == 0
            && matches!(st.st_mode & libc::S_IFMT, libc::S_IFREG | libc::S_IFDIR);
        if !ok {
            close_ours(fd);
            return None;
        }
        if st.st_mode & libc::S_IFMT == libc::S_IFREG && flags & libc::O_NOFOLLOW == 0 {
            if let Some(k) = key.or_else(|| path_memo::key(dirfd, path)) {
                k.note_regular();
            }
        }
        if flags & libc::O_NONBLOCK == 0 {
            // The status flags the program asked for (open ignores
            // O_ASYNC, F_SETFL would not).
            let fl = flags & !(libc::O_NONBLOCK | libc::O_ASYNC);
            let saved = errno();
            // SAFETY: F_SETFL on our new fd.
            let r = unsafe { real::syscall!(libc::SYS_fcntl, fd, libc::F_SETFL, fl) };
            set_errno(saved);
            if r < 0 {
                close_ours(fd);
                return None;
            }
        }
    }
    note_inline();
    Some(fd)
}

/// What the caches say about a stat by path.
pub(crate) enum StatAnswer {
    /// The answer, errno set as the call left it.
    Done(c_int),
    /// The path was found cached a moment ago: make the program's call
    /// inline (path_memo.rs); the key, for `note_stat`.
    Direct(Option<path_memo::Key>),
    /// Not cached: the pool makes the program's call.
    Pool,
}

/// A stat by path answered from the caches: `stat_fd(fd)` makes the stat
/// call on an O_PATH fd of the path's inode (with AT_EMPTY_PATH).
/// `empty_path`: the program passed AT_EMPTY_PATH, so an empty path means
/// dirfd itself (then `stat_fd(dirfd)`, an fstat).
pub(crate) fn stat_with(
    dirfd: c_int,
    path: *const c_char,
    nofollow: bool,
    empty_path: bool,
    stat_fd: impl FnOnce(c_int) -> c_int,
) -> StatAnswer {
    if empty_path && path.is_null() {
        // Linux 6.11 and later take NULL for "" with AT_EMPTY_PATH; older
        // kernels answer EFAULT: the program's own call gives the kernel's
        // answer (for "", corun's stat_fd(dirfd) below).
        return StatAnswer::Direct(None);
    }
    if let Some(k) = path_memo::key(dirfd, path) {
        if k.parent_regular_recently() {
            if let Some(e) = parent_answer(dirfd, path) {
                note_inline();
                set_errno(e);
                return StatAnswer::Done(-1);
            }
        }
        if k.cached_recently() {
            note_inline();
            return StatAnswer::Direct(Some(k));
        }
    }
    let mut flags = libc::O_PATH | libc::O_CLOEXEC;
    if nofollow {
        flags |= libc::O_NOFOLLOW;
    }
    let fd = match openat2_cached(dirfd, path, flags, 0) {
        Ok(fd) => fd,
        // The kernel read the whole path (it did not fault), so looking at
        // its first byte is safe.
        // SAFETY: see above.
        Err(libc::ENOENT) if empty_path && unsafe { *path } == 0 => {
            note_inline();
            return StatAnswer::Done(stat_fd(dirfd));
        }
        Err(e) if final_lookup_error(e) => {
            note_inline();
            set_errno(e);
            return StatAnswer::Done(-1);
        }
        Err(libc::EAGAIN) => {
            let Some(e) = parent_answer(dirfd, path) else {
                return StatAnswer::Pool;
            };
            note_inline();
            set_errno(e);
            return StatAnswer::Done(-1);
        }
        Err(_) => return StatAnswer::Pool,
    };
    let r = stat_fd(fd);
    let e = errno();
    close_ours(fd);
    set_errno(e);
    note_inline();
    StatAnswer::Done(r)
}

/// A stat by path succeeded from the caches (inline) and found `mode`:
/// the memo remembers the path (a lookup that followed symlinks found
/// every dentry of the walk cached). `key`: the path's, if already made.
pub(crate) fn note_stat(
    dirfd: c_int,
    path: *const c_char,
    nofollow: bool,
    mode: u32,
    key: Option<path_memo::Key>,
) {
    if nofollow {
        return;
    }
    if let Some(k) = key.or_else(|| path_memo::key(dirfd, path)) {
        if mode & libc::S_IFMT == libc::S_IFREG {
            k.note_regular();
        } else {
            k.note_cached();
        }
    }
}
