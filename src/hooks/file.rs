//! `open`, `open64`, `openat`, `openat64`, `creat`, `fsync`, `fdatasync`,
//! `stat`, `stat64`, `lstat`, `lstat64`, `fstatat`, `fstatat64`, `statx`.
//!
//! Calls on paths and on regular files have no readiness to wait for: they
//! block in the kernel on the disk (or, for `open` of a FIFO, on the other
//! end). In a coroutine they run on the blocking pool (`sched::blocking`)
//! while the coroutine parks; outside one they pass straight through.
//!
//! `open` and the stat family are first answered from the kernel's caches
//! inline (`cached.rs`: `openat2(..., RESOLVE_CACHED)`, whose errors other
//! than "not cached" are final, and for a stat an O_PATH fd of the cached
//! inode): only true cache misses go to the pool.
//!
//! `read`/`write`/`readv`/`writev` on a regular file come here from
//! `rw.rs`: one inline `preadv2`/`pwritev2` with RWF_NOWAIT serves what the
//! page cache holds at the cost of the one syscall the program made; only
//! when the kernel says it would wait for the disk (EAGAIN, or a short
//! count) does the rest go to the pool. A short count is never returned
//! for a regular file unless the file ends there, as natively.
//!
//! A filesystem that refuses RWF_NOWAIT for buffered writes (EOPNOTSUPP:
//! ext4 on this kernel) would send every write to the pool, two thread
//! hand-offs where the program made one system call that copies into the
//! page cache: a server logging a line or appending a record per request
//! (Kea's lease file and log) paid them on every request, and its replies
//! came 3-5 times later than natively on a loaded machine. On a local disk
//! filesystem, for a file opened without O_SYNC, O_DSYNC or O_DIRECT,
//! writes of up to `INLINE_WRITE_MAX` bytes are then made inline, as the
//! kernel makes them natively (one look at the file's flags and
//! filesystem per fd, kept in its `FdPolicy`, learned again after an
//! `fcntl(F_SETFL)` that sets O_DIRECT): such a write waits only
//! when the kernel throttles a heavy writer or reads in a partial page.
//! Larger writes, and files elsewhere (NFS, FUSE: a server answers), still
//! go to the pool.
//!
//! procfs and cgroupfs refuse RWF_NOWAIT for reads too, though the kernel
//! makes their files from memory: such reads are made inline (one
//! `fstatfs` per fd, kept in its `FdPolicy`), all but /proc/kmsg's, which
//! waits for the kernel's next message. sysfs stays on the pool: a
//! driver's attribute may ask its device.
//!
//! Every fd these return gets a fresh fd-table entry, so nothing corun knew
//! about an older fd of that number (closed behind its back by `fclose`)
//! survives.

use std::ffi::{c_char, c_int, c_uint};

use super::cached::StatAnswer;
use crate::sched::blocking::{run_blocking, run_blocking_restartable, OnHandler, SendPtr};
use crate::sched::fdtable::{self, FdPolicy};
use crate::sys::{errno, set_errno};
use std::sync::atomic::{AtomicU32, Ordering};

/// The real functions (the hooks below take their names).
pub(crate) mod real {
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
pub(crate) fn read_file(fd: c_int, iov: *const libc::iovec, cnt: c_int, p: &FdPolicy) -> isize {
    read_io(fd, iov, cnt, -1, p)
}

/// Writes a regular file: inline when the kernel can without waiting,
/// otherwise on the pool.
pub(crate) fn write_file(fd: c_int, iov: *const libc::iovec, cnt: c_int, p: &FdPolicy) -> isize {
    write_io(fd, iov, cnt, -1, p)
}

/// `pread`/`preadv` of a regular file at `offset`.
pub(crate) fn pread_file(
    fd: c_int,
    iov: *const libc::iovec,
    cnt: c_int,
    offset: i64,
    p: &FdPolicy,
) -> isize {
    read_io(fd, iov, cnt, offset, p)
}

/// A read: inline on a file the kernel makes from memory (procfs,
/// cgroupfs), which refuses RWF_NOWAIT; else `file_io`. Each read of
/// /proc/self/stat in a threaded program went to the pool: 10-115 us an
/// open, read and close against 3 us natively.
fn read_io(fd: c_int, iov: *const libc::iovec, cnt: c_int, offset: i64, p: &FdPolicy) -> isize {
    if p.file_reads.load(Ordering::Relaxed) == fdtable::READS_INLINE {
        // SAFETY: the caller's readv/preadv contract; flags 0 is plain
        // preadv (readv at offset -1).
        return unsafe { crate::sys::real::preadv2(fd, iov, cnt, offset, 0) };
    }
    file_io(fd, iov, cnt, offset, false, p)
}

/// procfs and cgroup (v1, v2) `statfs` types: their files are made from
/// kernel memory when read. Not sysfs: a driver's attribute may ask its
/// device (a sensor on a slow bus answers in milliseconds).
const MEMORY_FS: [i64; 3] = [0x9fa0, 0x27e0eb, 0x6367_7270];

/// Whether `fd`'s reads, refused RWF_NOWAIT, can be made inline: a file of
/// a `MEMORY_FS` other than /proc/kmsg, whose read waits for the kernel's
/// next message.
#[cold]
fn learn_reads(fd: c_int) -> u8 {
    // SAFETY: a zeroed statfs is a valid out-buffer.
    let mut sf: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: fstatfs writes at most one statfs into `sf` (raw: it may be
    // interposed).
    let ok = unsafe { crate::sys::real::syscall!(libc::SYS_fstatfs, fd, &mut sf) } == 0;
    if !ok || !MEMORY_FS.contains(&(sf.f_type as i64)) {
        return fdtable::READS_POOL;
    }
    let link = format!("/proc/self/fd/{fd}\0");
    let mut buf = [0u8; 16];
    // SAFETY: a NUL-terminated path and a buffer of its length.
    let n = unsafe {
        crate::sys::real::syscall!(
            libc::SYS_readlink,
            link.as_ptr(),
            buf.as_mut_ptr(),
            buf.len()
        )
    };
    if n < 0 || &buf[..n as usize] == b"/proc/kmsg" {
        return fdtable::READS_POOL;
    }
    fdtable::READS_INLINE
}

/// `pwrite`/`pwritev` of a regular file at `offset`.
pub(crate) fn pwrite_file(
    fd: c_int,
    iov: *const libc::iovec,
    cnt: c_int,
    offset: i64,
    p: &FdPolicy,
) -> isize {
    write_io(fd, iov, cnt, offset, p)
}

/// The largest write made inline to a file whose filesystem refuses
/// RWF_NOWAIT for buffered writes (a log line, a record; not a bulk copy,
/// which the kernel may throttle).
const INLINE_WRITE_MAX: usize = 64 * 1024;

/// Filesystems (statfs f_type) whose buffered writes only copy into the
/// page cache: ext2/3/4, XFS, Btrfs, tmpfs, F2FS.
const LOCAL_FS: [i64; 5] = [0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994, 0xF2F5_2010];

/// A write: a small one inline on a file that takes it so, else
/// `file_io`, which learns when RWF_NOWAIT is refused.
fn write_io(fd: c_int, iov: *const libc::iovec, cnt: c_int, offset: i64, p: &FdPolicy) -> isize {
    if known_writes(p) == fdtable::WRITES_INLINE && super::rw::iov_len(iov, cnt) <= INLINE_WRITE_MAX
    {
        // SAFETY: the caller's writev/pwritev contract; flags 0 is plain
        // pwritev (writev at offset -1).
        return unsafe { crate::sys::real::pwritev2(fd, iov, cnt, offset, 0) };
    }
    file_io(fd, iov, cnt, offset, true, p)
}

/// Bumped by each `fcntl(F_SETFL)` that sets O_DIRECT (`flags_set`): a
/// write decision learned before it (`FdPolicy::file_writes`) is learned
/// again, for every fd of that open file description (dups included). An
/// fd opened buffered and given O_DIRECT later kept its "small writes
/// inline" decision, and each such write waited on the worker for the
/// device (50-200 us here, 55 ms for the first). Only O_DIRECT: servers
/// set O_NONBLOCK on every connection, which must not make a log file's
/// writes learn again.
static WRITES_EPOCH: AtomicU32 = AtomicU32::new(1);

/// The epoch as stored above a decision's 2 bits.
fn writes_epoch() -> u32 {
    WRITES_EPOCH.load(Ordering::Acquire) & (u32::MAX >> 2)
}

/// `p`'s `WRITES_*`, `WRITES_UNKNOWN` if learned before the last O_DIRECT
/// change.
fn known_writes(p: &FdPolicy) -> u8 {
    let w = p.file_writes.load(Ordering::Relaxed);
    if w >> 2 == writes_epoch() {
        (w & 3) as u8
    } else {
        fdtable::WRITES_UNKNOWN
    }
}

/// A successful `fcntl(fd, F_SETFL, flags)`: `fd`'s own decision is
/// learned again (O_DIRECT turned off makes its writes inline again), and
/// every fd's if the call set O_DIRECT.
pub(crate) fn flags_set(fd: c_int, flags: c_int) {
    if flags & libc::O_DIRECT != 0 {
        WRITES_EPOCH.fetch_add(1, Ordering::AcqRel);
    }
    if let Some(e) = fdtable::get(fd) {
        e.policy.file_writes.store(0, Ordering::Relaxed);
    }
}

/// Whether `fd`'s small writes can be made inline (`WRITES_INLINE`):
/// opened without O_SYNC, O_DSYNC or O_DIRECT, on a local disk filesystem.
#[cold]
fn learn_writes(fd: c_int) -> u8 {
    // SAFETY: F_GETFL takes no argument; raw syscalls (fcntl and fstatfs
    // may be interposed).
    let fl = unsafe { crate::sys::real::syscall!(libc::SYS_fcntl, fd, libc::F_GETFL) };
    if fl < 0 || fl as c_int & (libc::O_DSYNC | libc::O_SYNC | libc::O_DIRECT) != 0 {
        return fdtable::WRITES_POOL;
    }
    // SAFETY: a zeroed statfs is a valid out-buffer.
    let mut sf: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: fstatfs writes at most one statfs into `sf`.
    let ok = unsafe { crate::sys::real::syscall!(libc::SYS_fstatfs, fd, &mut sf) } == 0;
    if ok && LOCAL_FS.contains(&(sf.f_type as i64)) {
        fdtable::WRITES_INLINE
    } else {
        fdtable::WRITES_POOL
    }
}

/// Whether a read or write of `total` bytes that the kernel refused to
/// make with RWF_NOWAIT is made inline all the same: a read of a
/// `MEMORY_FS` file (`learn_reads`), a small write to a local disk
/// filesystem (`learn_writes`); each learned once per fd.
fn inline_when_refused(fd: c_int, write: bool, total: usize, p: &FdPolicy) -> bool {
    if write {
        let mut w = known_writes(p);
        if w == fdtable::WRITES_UNKNOWN {
            let epoch = writes_epoch();
            w = learn_writes(fd);
            p.file_writes
                .store(epoch << 2 | w as u32, Ordering::Relaxed);
        }
        w == fdtable::WRITES_INLINE && total <= INLINE_WRITE_MAX
    } else {
        let mut rd = p.file_reads.load(Ordering::Relaxed);
        if rd == fdtable::READS_UNKNOWN {
            rd = learn_reads(fd);
            p.file_reads.store(rd, Ordering::Relaxed);
        }
        rd == fdtable::READS_INLINE
    }
}

/// One RWF_NOWAIT attempt inline, the rest (if any) on the pool. `offset`
/// -1 means the file position (read/write), else an explicit offset
/// (pread/pwrite, which never move the position). `p`: what is known of
/// the fd's reads or writes (`write`); a filesystem that refuses
/// RWF_NOWAIT is asked once whether the call can be made inline anyway.
fn file_io(
    fd: c_int,
    iov: *const libc::iovec,
    cnt: c_int,
    offset: i64,
    write: bool,
    p: &FdPolicy,
) -> isize {
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
    if r < 0 && errno() == libc::EOPNOTSUPP && inline_when_refused(fd, write, total, p) {
        set_errno(saved);
        // SAFETY: as in read_io and write_io.
        return unsafe {
            if write {
                crate::sys::real::pwritev2(fd, iov, cnt, offset, 0)
            } else {
                crate::sys::real::preadv2(fd, iov, cnt, offset, 0)
            }
        };
    }
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
#[inline]
fn fresh_fd(fd: c_int) -> c_int {
    if fd >= 0 {
        if let Some(e) = fdtable::get(fd) {
            if crate::sched::lone::no_fd_waits() {
                // No lock, no system call: errno is left alone.
                e.reset_lone();
            } else {
                reset_keeping_errno(e);
            }
        }
    }
    fd
}

#[inline(never)]
fn reset_keeping_errno(e: &fdtable::FdEntry) {
    let saved = errno();
    e.reset();
    set_errno(saved);
}

/// `open_at` when nothing parks (a lone entry, hooks/mod.rs): the real
/// call, and the new fd's entry made fresh.
#[inline(always)]
fn open_lone(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    // SAFETY: the caller's open contract.
    fresh_fd(unsafe { real::openat(dirfd, path, flags, mode) })
}

#[inline(never)]
fn open_at(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint, large: bool) -> c_int {
    super::cancel_entry();
    let flags = if large {
        flags | libc::O_LARGEFILE
    } else {
        flags
    };
    if !crate::sched::parking() {
        // As natively: no coroutine, or the process's only one (which
        // `run_blocking` would run inline too).
        // SAFETY: the caller's open contract.
        return fresh_fd(unsafe { real::openat(dirfd, path, flags, mode) });
    }
    if let Some(fd) = super::cached::open(dirfd, path, flags, mode) {
        return fresh_fd(fd);
    }
    let p = SendPtr(path as *mut c_char);
    // A signal for the caller cuts short an open that waits (a FIFO's for
    // its other end), as natively: EINTR, or the open made again when
    // every handler that ran had SA_RESTART (signal(7)); an fd the open
    // returned as the signal came is kept. A disk wait is not cut short.
    // SAFETY: the caller's open contract; `path` outlives the parked call.
    fresh_fd(
        run_blocking_restartable(OnHandler::RestartIfSaRestart, move |_| unsafe {
            real::openat(dirfd, p.get(), flags, mode) as isize
        }) as c_int,
    )
}

#[no_mangle]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    if crate::sched::lone::nothing_parks() {
        return open_lone(libc::AT_FDCWD, path, flags, mode);
    }
    open_at(libc::AT_FDCWD, path, flags, mode, false)
}

#[no_mangle]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    if crate::sched::lone::nothing_parks() {
        return open_lone(libc::AT_FDCWD, path, flags | libc::O_LARGEFILE, mode);
    }
    open_at(libc::AT_FDCWD, path, flags, mode, true)
}

#[no_mangle]
pub unsafe extern "C" fn openat(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    if crate::sched::lone::nothing_parks() {
        return open_lone(dirfd, path, flags, mode);
    }
    open_at(dirfd, path, flags, mode, false)
}

#[no_mangle]
pub unsafe extern "C" fn openat64(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    if crate::sched::lone::nothing_parks() {
        return open_lone(dirfd, path, flags | libc::O_LARGEFILE, mode);
    }
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

/// A stat by path: from the caches inline (`cached::stat_with`, with
/// `on_fd` making the call on an fd of the path's inode), or the program's
/// call (`by_path`) inline when the path was found cached a moment ago,
/// else on the pool. `mode` reads the file type from the program's buffer
/// after a successful call, for the memo (path_memo.rs).
fn stat_call(
    dirfd: c_int,
    path: *const c_char,
    nofollow: bool,
    empty_path: bool,
    on_fd: impl FnOnce(c_int) -> c_int,
    by_path: impl FnOnce() -> c_int + Send,
    mode: impl FnOnce() -> Option<u32>,
) -> c_int {
    if !crate::sched::parking() {
        return run_blocking(by_path);
    }
    let (r, key) = match super::cached::stat_with(dirfd, path, nofollow, empty_path, on_fd) {
        StatAnswer::Done(r) => (r, None),
        StatAnswer::Direct(key) => (by_path(), key),
        StatAnswer::Pool => return run_blocking(by_path),
    };
    if r == 0 {
        if let Some(m) = mode() {
            let e = errno();
            super::cached::note_stat(dirfd, path, nofollow, m, key);
            set_errno(e);
        }
    }
    r
}

/// An fd's own inode: the empty path with AT_EMPTY_PATH.
const EMPTY: *const c_char = c"".as_ptr();

macro_rules! stat_hook {
    ($name:ident, $fstatat:ident, $buf:ty, $nofollow:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, buf: *mut $buf) -> c_int {
            let (p, b) = (SendPtr(path as *mut c_char), SendPtr(buf));
            stat_call(
                libc::AT_FDCWD,
                path,
                $nofollow,
                false,
                // SAFETY: `buf` per the caller's contract; `fd` is ours.
                |fd| unsafe { real::$fstatat(fd, EMPTY, buf, libc::AT_EMPTY_PATH) },
                // SAFETY: the caller's contract; both pointers outlive the parked call.
                move || unsafe { real::$name(p.get(), b.get()) },
                // SAFETY: the call succeeded: the kernel filled `buf`.
                || Some(unsafe { (*buf).st_mode }),
            )
        }
    };
}

stat_hook!(stat, fstatat, libc::stat, false);
stat_hook!(stat64, fstatat64, libc::stat64, false);
stat_hook!(lstat, fstatat, libc::stat, true);
stat_hook!(lstat64, fstatat64, libc::stat64, true);

/// The fstatat flags the inline path knows; others go to the pool, which
/// gives the kernel's answer (EINVAL).
const FSTATAT_FLAGS: c_int =
    libc::AT_SYMLINK_NOFOLLOW | libc::AT_NO_AUTOMOUNT | libc::AT_EMPTY_PATH;

macro_rules! fstatat_hook {
    ($name:ident, $buf:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dirfd: c_int,
            path: *const c_char,
            buf: *mut $buf,
            flags: c_int,
        ) -> c_int {
            let (p, b) = (SendPtr(path as *mut c_char), SendPtr(buf));
            // SAFETY: as stat.
            let by_path = move || unsafe { real::$name(dirfd, p.get(), b.get(), flags) };
            if flags & !FSTATAT_FLAGS != 0 {
                return run_blocking(by_path);
            }
            stat_call(
                dirfd,
                path,
                flags & libc::AT_SYMLINK_NOFOLLOW != 0,
                flags & libc::AT_EMPTY_PATH != 0,
                // SAFETY: as stat.
                |fd| unsafe { real::$name(fd, EMPTY, buf, libc::AT_EMPTY_PATH) },
                by_path,
                // SAFETY: the call succeeded: the kernel filled `buf`.
                || Some(unsafe { (*buf).st_mode }),
            )
        }
    };
}

fstatat_hook!(fstatat, libc::stat);
fstatat_hook!(fstatat64, libc::stat64);

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
    let by_path = move || unsafe { real::statx(dirfd, p.get(), flags, mask, b.get()) };
    let sync = flags & libc::AT_STATX_SYNC_TYPE;
    // A forced sync asks the (network) filesystem: that waits.
    if flags & !(FSTATAT_FLAGS | libc::AT_STATX_SYNC_TYPE) != 0 || sync == libc::AT_STATX_FORCE_SYNC
    {
        return run_blocking(by_path);
    }
    stat_call(
        dirfd,
        path,
        flags & libc::AT_SYMLINK_NOFOLLOW != 0,
        flags & libc::AT_EMPTY_PATH != 0,
        // SAFETY: as stat.
        |fd| unsafe { real::statx(fd, EMPTY, libc::AT_EMPTY_PATH | sync, mask, buf) },
        by_path,
        // SAFETY: the call succeeded: the kernel filled `buf`.
        || unsafe { ((*buf).stx_mask & libc::STATX_TYPE != 0).then(|| (*buf).stx_mode as u32) },
    )
}
