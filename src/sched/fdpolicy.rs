//! The hooks' policy for one fd: what they learned about it and decide
//! with, kept apart from the scheduler's readiness state (`fdtable.rs`), as
//! Go keeps `internal/poll.FD` apart from its `pollDesc`
//! (docs/ARCHITECTURE.md §4).
//!
//! The readiness side (generation, edge sequences, waiters, epoll
//! registration) is what the netpoller and a park need; this side is what
//! a hook needs to make one call: the fd's kind (how to make the call
//! non-blocking), whether the program itself asked for O_NONBLOCK, its
//! socket timeouts, whether another fd shares the open file description,
//! and which file the fd named when a call last parked on it (the
//! same-file check). The scheduler stores it in the fd's table entry (one
//! cache line reach from the readiness words, nothing to look up twice),
//! forgets it when the fd's generation changes, and notes the file when it
//! registers the fd with epoll; it decides nothing with it.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};

use super::fdtable::{Dir, Snapshot};

/// How often at most a parked call compares the file its fd names with
/// the one registered (`FdPolicy::same_file`).
pub(super) const FILE_CHECK_NS: u64 = 1_000_000;
/// The same for a socket. A server's connection parks once per request:
/// at 1,000 connections each socket parked every ~7 ms, so the 1 ms bound
/// made it one fstat per request, 7-9% of threaded_http's req/s (136k to
/// 125k, paired runs). A socket number is replaced behind corun's back by
/// libc-internal code or raw system calls, not by programs waiting on it.
/// At 10,000 connections a socket parks every ~120 ms: 200 ms still made
/// it an fstat every other request (its inode cold: ~600 ns, 4% of the
/// server's CPU); once a second, one in eight.
const SOCKET_CHECK_NS: u64 = 1_000_000_000;

/// The fd's kind is not known yet.
pub const KIND_UNKNOWN: u8 = 0;
/// A socket: MSG_DONTWAIT makes each call non-blocking.
pub const KIND_SOCKET: u8 = 1;
/// A pipe, FIFO or other file honouring RWF_NOWAIT (eventfd...).
pub const KIND_NOWAIT: u8 = 2;
/// A regular file or block device: always "ready", the call may block on disk.
pub const KIND_FILE: u8 = 3;
/// Anything else (tty, timerfd, signalfd...): wait for readiness with poll,
/// then make the call.
pub const KIND_OTHER: u8 = 4;

/// How a regular file takes small writes (`FdPolicy::file_writes`): not
/// known yet...
pub const WRITES_UNKNOWN: u8 = 0;
/// ...an RWF_NOWAIT attempt inline, the rest on the blocking pool...
pub const WRITES_NOWAIT: u8 = 1;
/// ...inline: a buffered file on a local disk filesystem that refuses
/// RWF_NOWAIT for buffered writes (EOPNOTSUPP: ext4 here)...
pub const WRITES_INLINE: u8 = 2;
/// ...on the blocking pool (O_SYNC, O_DSYNC, O_DIRECT, or a network or
/// FUSE filesystem, whose writes may wait for a server).
pub const WRITES_POOL: u8 = 3;

/// How a regular file's reads that the kernel cannot make with
/// RWF_NOWAIT are made (`FdPolicy::file_reads`): not learned yet, inline
/// (a file the kernel makes from memory: procfs, cgroupfs), or on the
/// blocking pool (anything else: the read may wait for a device or a
/// server).
pub const READS_UNKNOWN: u8 = 0;
pub const READS_INLINE: u8 = 1;
pub const READS_POOL: u8 = 2;

/// The program's O_NONBLOCK wish is not known (ask the kernel once).
pub const NB_UNKNOWN: u8 = 0;
pub const NB_OFF: u8 = 1;
pub const NB_ON: u8 = 2;

/// `repr(C)`, `kind` and `nonblock` first: with `FdEntry`'s first fields
/// they are what an event loop's read and write look at (one cache line);
/// the small fields before the words, so that none pads.
#[derive(Default)]
#[repr(C)]
pub struct FdPolicy {
    pub kind: AtomicU8,
    /// The open file description may be reached through another fd too
    /// (dup, dup2, F_DUPFD): a socket timeout set through that other fd is
    /// not seen here, so the hooks ask the kernel instead of the cache.
    pub shared: AtomicBool,
    /// A TCP stream socket (made by `socket` with AF_INET/AF_INET6,
    /// SOCK_STREAM and protocol 0 or IPPROTO_TCP, or accepted from one):
    /// a read that returns less than asked emptied it (`hooks/drained.rs`).
    pub tcp: AtomicBool,
    /// A regular file's `READS_*` (`hooks/file.rs`): 0 not learned yet.
    pub file_reads: AtomicU8,
    /// `epoch << 2 | NB_*`: the program's O_NONBLOCK wish as last learned,
    /// valid while the global epoch (hooks::NB_EPOCH) is unchanged.
    pub nonblock: AtomicU32,
    /// A regular file's `WRITES_*` in the low 2 bits, above them the
    /// `hooks/file.rs` epoch it was learned in (0: never learned): the
    /// decision holds while no `fcntl(F_SETFL)` has set O_DIRECT since.
    pub file_writes: AtomicU32,
    file_gen: AtomicU32,
    /// SO_RCVTIMEO / SO_SNDTIMEO in ns: 0 not known yet (the hooks ask the
    /// kernel), u64::MAX none.
    pub rcv_timeo: AtomicU64,
    pub snd_timeo: AtomicU64,
    /// The process's child-process generation when it made this socket
    /// with `socket` (0: not made here): `hooks/listener.rs`.
    pub own_gen: AtomicU64,
    /// Which file the fd named when a call of generation `file_gen` last
    /// parked on it (`same_file`): an fd replaced behind corun's back is
    /// noticed before a call waits on the old file's registration.
    file_id: AtomicU64,
    /// When `file_id` was last compared (monotonic ns).
    file_checked: AtomicU64,
    /// The read-side snapshot (`gen << 32 | seq`, plus one; 0: none) taken
    /// before a read of the program's own that found a socket empty
    /// (EAGAIN): `read_empty_since`.
    read_empty: AtomicU64,
}

/// A snapshot as one word, plus one (0 stands for none).
fn packed(s: Snapshot) -> u64 {
    ((s.gen as u64) << 32 | s.seq as u64).wrapping_add(1)
}

impl FdPolicy {
    /// SO_RCVTIMEO (reads) or SO_SNDTIMEO (writes), as recorded.
    pub fn timeo(&self, dir: Dir) -> &AtomicU64 {
        match dir {
            Dir::Read => &self.rcv_timeo,
            Dir::Write => &self.snd_timeo,
        }
    }

    /// Forgets what was learned: the fd names another file now (or none).
    /// The same-file record needs no reset: it is kept per generation.
    pub(super) fn forget(&self) {
        self.kind.store(KIND_UNKNOWN, Ordering::Relaxed);
        self.nonblock.store(0, Ordering::Relaxed);
        self.rcv_timeo.store(0, Ordering::Relaxed);
        self.snd_timeo.store(0, Ordering::Relaxed);
        self.shared.store(false, Ordering::Relaxed);
        self.tcp.store(false, Ordering::Relaxed);
        self.own_gen.store(0, Ordering::Relaxed);
        self.file_writes.store(0, Ordering::Relaxed);
        self.file_reads.store(0, Ordering::Relaxed);
    }

    /// Copies what was learned about `other` (dup: the new fd shares the
    /// open file description).
    pub fn copy_from(&self, other: &FdPolicy) {
        self.kind
            .store(other.kind.load(Ordering::Relaxed), Ordering::Relaxed);
        self.nonblock
            .store(other.nonblock.load(Ordering::Relaxed), Ordering::Relaxed);
        self.rcv_timeo
            .store(other.rcv_timeo.load(Ordering::Relaxed), Ordering::Relaxed);
        self.snd_timeo
            .store(other.snd_timeo.load(Ordering::Relaxed), Ordering::Relaxed);
        self.tcp
            .store(other.tcp.load(Ordering::Relaxed), Ordering::Relaxed);
        self.file_writes
            .store(other.file_writes.load(Ordering::Relaxed), Ordering::Relaxed);
        self.file_reads
            .store(other.file_reads.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// A read the program made non-blocking found the socket empty; `seen`
    /// is the read-side snapshot taken before that read.
    pub fn note_read_empty(&self, seen: Snapshot) {
        self.read_empty.store(packed(seen), Ordering::Relaxed);
    }

    /// Whether a read found the socket empty with no read-side edge since
    /// (`now` is the snapshot now): no data, EOF or error came since that
    /// read, or the netpoller has not counted it yet, and a park on the fd
    /// wakes when it does (an fd no epoll has yet is added by the park,
    /// and epoll reports it at once if it is ready by then). Either way a
    /// `poll` for input may park without asking the kernel first.
    pub fn read_empty_since(&self, now: Snapshot) -> bool {
        self.read_empty.load(Ordering::Relaxed) == packed(now)
    }

    /// Records which file `fd` names as generation `gen` is registered
    /// with epoll (`park::enlist`), for `same_file`.
    pub fn note_file(&self, fd: i32, gen: u32) {
        if let Some(id) = file_id(fd) {
            self.file_id.store(id, Ordering::Relaxed);
            self.file_checked
                .store(crate::sys::now_ns(), Ordering::Relaxed);
            self.file_gen.store(gen.wrapping_add(1), Ordering::Release);
        }
    }

    /// Whether `fd` still names the file that generation `gen` was
    /// registered for (true when it has no registration). An fd closed or
    /// replaced through no hook (inside libc, an inline system call, an
    /// io_uring close) keeps its generation, and with it an epoll
    /// registration made for the old file, which the kernel dropped or
    /// which reports the old file's events: a wait on the new file would
    /// never wake. Compared by device and inode with one fstat, at most
    /// once per `FILE_CHECK_NS` per fd (`SOCKET_CHECK_NS` for a socket): an fstat on every park cost 13% of
    /// a pipe ping-pong's round trip (two parks), and an fd replaced
    /// behind corun's back within a millisecond of being waited on is not
    /// what programs do. Files of the anonymous-inode kind (eventfd...)
    /// share one inode: one replaced by another is not seen.
    pub fn same_file(&self, fd: i32, gen: u32) -> bool {
        if self.file_gen.load(Ordering::Acquire) != gen.wrapping_add(1) {
            return true;
        }
        // The worker's clock (read at its last poll, at most POLL_EVERY
        // tasks ago when busy) is good enough to space fstats out, and
        // saves a clock read per park (a third of a keep-alive request's
        // clock reads).
        let now = super::worker::current_worker()
            .map_or_else(crate::sys::now_ns, |w| w.local.clock.get());
        let every = if self.kind.load(Ordering::Relaxed) == KIND_SOCKET {
            SOCKET_CHECK_NS
        } else {
            FILE_CHECK_NS
        };
        if now.saturating_sub(self.file_checked.load(Ordering::Relaxed)) < every {
            return true;
        }
        self.file_checked.store(now, Ordering::Relaxed);
        file_id(fd).is_none_or(|id| self.file_id.load(Ordering::Relaxed) == id)
    }
}

/// The device and inode `fd` names, folded into one word.
fn file_id(fd: i32) -> Option<u64> {
    // SAFETY: a zeroed stat is a valid out-buffer; raw syscall because the
    // stat family may be interposed.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { crate::sys::real::syscall!(libc::SYS_fstat, fd, &mut st) } < 0 {
        return None;
    }
    Some(st.st_ino ^ st.st_dev.rotate_left(48))
}
