//! What a hook knows of an fd before it decides how to make a call: the
//! fd's kind (`fd_kind`, from the cache or one fstat), whether the program
//! made it non-blocking itself (`user_nonblocking`, trusted per epoch of
//! F_SETFL/FIONBIO changes: `NB_EPOCH`), and from these whether a read,
//! write, send or recv parks the corun way (`parking_on`, `fd_parks`) or
//! is the program's own non-blocking call, made as is
//! (`program_nonblocking`, `nb_read_as_is`: an event loop's every call).
//! Split from mod.rs, which keeps the loops that park.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::sched::fdtable::{self, Dir, FdEntry};
use crate::sys::errno;

/// Magic of anon-inode files (eventfd, timerfd, signalfd, epoll...).
const ANON_INODE_FS_MAGIC: i64 = 0x0904_1934;

/// The fd's kind, from the cache or one fstat. The cached answer is
/// inlined (a read and a write made four calls of this, ~50 instructions
/// a request of a keep-alive server); the fstat is not.
#[inline(always)]
pub(crate) fn fd_kind(fd: i32, e: &FdEntry) -> u8 {
    let k = e.policy.kind.load(Ordering::Relaxed);
    if k != fdtable::KIND_UNKNOWN {
        return k;
    }
    learn_fd_kind(fd, e)
}

/// `fd_kind`'s first answer for an fd: its fstat (and fstatfs).
#[cold]
#[inline(never)]
fn learn_fd_kind(fd: i32, e: &FdEntry) -> u8 {
    // SAFETY: a zeroed stat is a valid out-buffer; raw syscall because the
    // stat family may be interposed.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { crate::sys::real::syscall!(libc::SYS_fstat, fd, &mut st) } < 0 {
        return fdtable::KIND_UNKNOWN;
    }
    let k = match st.st_mode & libc::S_IFMT {
        libc::S_IFSOCK => fdtable::KIND_SOCKET,
        libc::S_IFIFO => fdtable::KIND_NOWAIT,
        libc::S_IFBLK | libc::S_IFDIR => fdtable::KIND_FILE,
        libc::S_IFREG => {
            // SAFETY: a zeroed statfs is a valid out-buffer.
            let mut sf: libc::statfs = unsafe { std::mem::zeroed() };
            let anon = unsafe { crate::sys::real::syscall!(libc::SYS_fstatfs, fd, &mut sf) } == 0
                && sf.f_type as i64 == ANON_INODE_FS_MAGIC;
            if anon {
                fdtable::KIND_NOWAIT
            } else {
                fdtable::KIND_FILE
            }
        }
        0 => fdtable::KIND_NOWAIT,
        _ => fdtable::KIND_OTHER,
    };
    e.policy.kind.store(k, Ordering::Relaxed);
    k
}

/// O_NONBLOCK belongs to the open file description, which dups share and
/// which any of them may change. The wish learned for an fd is therefore
/// only trusted while no `F_SETFL`/`FIONBIO` happened anywhere since: each
/// such change bumps this epoch, and an entry from an older epoch asks the
/// kernel again (once).
static NB_EPOCH: AtomicU32 = AtomicU32::new(1);

fn nb_word(on: bool) -> u32 {
    let st = if on { fdtable::NB_ON } else { fdtable::NB_OFF };
    (NB_EPOCH.load(Ordering::Acquire) << 2) | st as u32
}

/// Whether a read/write/send/recv hook should take `fd` the corun way:
/// `sched::parking()`, unless the program is known (from the cache, no
/// system call) to have made this socket, pipe or tty non-blocking itself.
/// Such a call is the program asking for EAGAIN: the real call is exactly
/// it, with nothing around (an event-driven program's every read and
/// write). A regular file is never passed this way (a non-blocking flag
/// does not keep a disk read from waiting).
#[inline]
pub(crate) fn parking_on(fd: i32) -> bool {
    crate::sched::parking() && fd_parks(fd)
}

/// -1 with EBADF, apart from the hooks that return it for corun's own fds
/// (their common path then keeps no frame: a tail call to libc).
#[cold]
#[inline(never)]
pub(crate) fn ebadf() -> i32 {
    crate::sys::set_errno(libc::EBADF);
    -1
}

/// The fd's half of `parking_on`, for a caller that asked
/// `sched::parking()` already (the reads: `before_nb_read` needs it too).
#[inline]
pub(crate) fn fd_parks(fd: i32) -> bool {
    entry_parks(fdtable::peek(fd))
}

/// The entry a read hook that `parks` looks at, once, for both
/// `entry_parks` and `before_nb_read_at` (None when it does not park).
#[inline]
pub(crate) fn read_entry(fd: i32, parks: bool) -> Option<&'static FdEntry> {
    if parks {
        fdtable::peek(fd)
    } else {
        None
    }
}

/// The entry of `fd` when the program itself made it non-blocking (known
/// from the cache, no system call: `entry_parks` is false), for a hook
/// whose call is then the program's own, as is, whoever makes it: an
/// event loop's every read and write. Asked before `sched::parking()`,
/// whose answer would not change the call (a thread-local, a look at
/// every worker's count: half of what such a read cost under corun).
#[inline(always)]
pub(crate) fn program_nonblocking(fd: i32) -> Option<&'static FdEntry> {
    let e = fdtable::peek_built(fd)?;
    (!entry_parks(Some(e))).then_some(e)
}

/// A read the program asked to be non-blocking (`program_nonblocking`,
/// or MSG_DONTWAIT) on `fd`'s entry `e`: `call` itself, then, on EAGAIN
/// only, `after_nb_read` with the snapshot taken before it (any caller's
/// empty read is a fact about the socket for the next `poll`).
#[inline(always)]
pub(crate) fn nb_read_as_is(e: Option<&'static FdEntry>, call: impl FnOnce() -> isize) -> isize {
    let before = before_nb_read_at(e);
    let r = call();
    if r < 0 {
        return after_nb_read_cold(before, r);
    }
    r
}

#[cold]
#[inline(never)]
fn after_nb_read_cold(before: Option<(&'static FdEntry, fdtable::Snapshot)>, r: isize) -> isize {
    after_nb_read(before, r)
}

/// `fd_parks` of an entry already looked up (None: no entry yet).
#[inline]
pub(crate) fn entry_parks(e: Option<&FdEntry>) -> bool {
    let Some(e) = e else {
        return true;
    };
    let w = e.policy.nonblock.load(Ordering::Acquire);
    let known_on = w >> 2 == NB_EPOCH.load(Ordering::Acquire) && (w & 3) as u8 == fdtable::NB_ON;
    !(known_on
        && matches!(
            e.policy.kind.load(Ordering::Relaxed),
            fdtable::KIND_SOCKET | fdtable::KIND_NOWAIT | fdtable::KIND_OTHER
        ))
}

/// Before a read made as the program asked (its own O_NONBLOCK, or
/// MSG_DONTWAIT), when the caller `parks` (`sched::parking()`, asked once
/// by the hook): the socket's entry and its read-side snapshot, for
/// `after_nb_read`.
#[inline]
pub(crate) fn before_nb_read(
    fd: i32,
    parks: bool,
) -> Option<(&'static FdEntry, fdtable::Snapshot)> {
    if !parks {
        return None;
    }
    before_nb_read_at(fdtable::peek(fd))
}

/// `before_nb_read` of the entry `read_entry` found.
#[inline]
pub(crate) fn before_nb_read_at(
    e: Option<&'static FdEntry>,
) -> Option<(&'static FdEntry, fdtable::Snapshot)> {
    let e = e?;
    (e.policy.kind.load(Ordering::Relaxed) == fdtable::KIND_SOCKET)
        .then(|| (e, e.snapshot(Dir::Read)))
}

/// `r` of a read made as the program asked, `before` it
/// (`before_nb_read`): on EAGAIN, the socket is noted empty as of that
/// snapshot (a `poll` for input that follows may park at once: poll.rs),
/// and the others of this worker get a turn if the caller held it for a
/// whole slice (`sched/slice.rs`): a loop of such reads may be waiting for
/// one of them to write.
#[inline]
pub(crate) fn after_nb_read(
    before: Option<(&'static FdEntry, fdtable::Snapshot)>,
    r: isize,
) -> isize {
    if r < 0 && errno() == libc::EAGAIN {
        if let Some((e, seen)) = before {
            e.policy.note_read_empty(seen);
        }
        crate::sched::slice::yield_if_slice_spent();
    }
    r
}

/// Whether the program itself made `fd` non-blocking.
pub(crate) fn user_nonblocking(fd: i32, e: &FdEntry) -> bool {
    let w = e.policy.nonblock.load(Ordering::Acquire);
    if w >> 2 == NB_EPOCH.load(Ordering::Acquire) {
        match (w & 3) as u8 {
            fdtable::NB_ON => return true,
            fdtable::NB_OFF => return false,
            _ => {}
        }
    }
    // SAFETY: raw F_GETFL, no memory involved.
    let fl = unsafe { crate::sys::real::syscall!(libc::SYS_fcntl, fd, libc::F_GETFL) };
    let on = fl >= 0 && (fl as i32 & libc::O_NONBLOCK) != 0;
    if fl >= 0 {
        e.policy.nonblock.store(nb_word(on), Ordering::Release);
    }
    on
}

/// Records the O_NONBLOCK state of a new fd (socket/accept4/pipe2 flags).
pub(crate) fn set_user_nonblocking(fd: i32, on: bool) {
    if let Some(e) = fdtable::get(fd) {
        e.policy.nonblock.store(nb_word(on), Ordering::Release);
    }
}

/// The program changed O_NONBLOCK on `fd`'s description (F_SETFL, FIONBIO):
/// every cached wish may be stale (dups share the description).
pub(crate) fn changed_user_nonblocking(fd: i32, on: bool) {
    NB_EPOCH.fetch_add(1, Ordering::AcqRel);
    set_user_nonblocking(fd, on);
}
