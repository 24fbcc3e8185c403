//! What corun knows about each file descriptor, process-wide.
//!
//! fds are shared by every thread, so this table is global, indexed by fd
//! number, in lazily allocated chunks (a process with fd 18,000 open does
//! not pay for a million entries). Each entry holds:
//!
//! - `gen`: bumped when the fd is closed or replaced. Epoll registrations
//!   carry it (`fd | gen << 32`), so an event for a closed fd never reaches
//!   the next file given the same number, and a waiter that sees `gen`
//!   change knows its fd was closed under it (EBADF).
//! - `read_seq` / `write_seq`: readiness *edges* seen by the netpoller.
//!   A hook snapshots the sequence before its non-blocking attempt; after
//!   EAGAIN it parks only if the sequence is unchanged (checked under the
//!   waiter lock), so an edge between the attempt and the park is never lost.
//! - waiter lists, one per direction (several readers and writers may wait:
//!   accept loops on several threads, `poll` on the same fd).
//! - `policy`: what the hooks learned and decide with (the fd's kind, the
//!   program's own O_NONBLOCK wish, SO_RCVTIMEO/SNDTIMEO, the same-file
//!   check), kept apart in `fdpolicy.rs`: this file is the readiness side
//!   (like Go's `pollDesc`), that one the hooks' (like `internal/poll.FD`).

use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

use super::waitlist::{Taken, WaitList};

/// Entries per chunk: small, so that a forked child that touches one fd
/// rebuilds little (`rebuild_after_fork`).
pub const CHUNK: usize = 64;
const CHUNKS: usize = 16384;
/// fds at or above this are not tracked; hooks pass them through.
pub const MAX_FD: usize = CHUNK * CHUNKS;

pub use super::fdpolicy::{
    FdPolicy, KIND_FILE, KIND_NOWAIT, KIND_OTHER, KIND_SOCKET, KIND_UNKNOWN, NB_OFF, NB_ON,
    NB_UNKNOWN, READS_INLINE, READS_POOL, READS_UNKNOWN, WRITES_INLINE, WRITES_NOWAIT, WRITES_POOL,
    WRITES_UNKNOWN,
};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Dir {
    Read,
    Write,
}

/// What a hook saw before its attempt.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot {
    pub gen: u32,
    pub seq: u32,
}

#[derive(Default)]
pub struct Waiters {
    pub readers: WaitList,
    pub writers: WaitList,
    /// `gen + 1` of the epoll registrations in force, 0 if none.
    pub registered: u32,
    /// The workers whose epoll has the fd (registration `registered`), one
    /// bit per worker index: each worker that has a waiter on the fd
    /// registers it with its own epoll (docs/ARCHITECTURE.md §4).
    pub on_workers: [u64; 4],
    /// Files kept for calls parked on an earlier generation (`fdkeep`).
    pub kept: Vec<super::fdkeep::Kept>,
}

impl Waiters {
    /// Whether worker `index`'s epoll has registration `gen` of the fd.
    pub fn registered_on(&self, gen: u32, index: usize) -> bool {
        self.registered == gen.wrapping_add(1)
            && self.on_workers[(index / 64) % 4] & (1 << (index % 64)) != 0
    }

    /// Worker `index`'s epoll has registration `gen` now.
    pub fn mark_registered(&mut self, gen: u32, index: usize) {
        if self.registered != gen.wrapping_add(1) {
            self.registered = gen.wrapping_add(1);
            self.on_workers = [0; 4];
        }
        self.on_workers[(index / 64) % 4] |= 1 << (index % 64);
    }
}

impl Waiters {
    /// The waiters of one direction.
    pub fn list(&mut self, dir: Dir) -> &mut WaitList {
        match dir {
            Dir::Read => &mut self.readers,
            Dir::Write => &mut self.writers,
        }
    }
}

/// `repr(C)`, the fields an event loop's read and write look at first
/// (`gen` and `read_seq` for the snapshot, then `policy`'s kind and
/// O_NONBLOCK wish): one cache line, where Rust's own order had put the
/// snapshot 200 bytes after the policy (two lines a read of Redis's).
#[derive(Default)]
#[repr(C)]
pub struct FdEntry {
    pub gen: AtomicU32,
    pub read_seq: AtomicU32,
    pub write_seq: AtomicU32,
    /// What the hooks learned and decide with (`fdpolicy.rs`): reset with
    /// the generation, otherwise only the hooks' business.
    pub policy: FdPolicy,
    /// `(gen << 32 | read_seq) + 1` as a read that emptied the socket saw
    /// them before it was made, 0 if none (`hooks/drained.rs`).
    pub drained: AtomicU64,
    /// `gen + 1` of the generation the netpoller saw urgent data, the
    /// peer's shutdown or an error for (EPOLLPRI, EPOLLRDHUP, EPOLLHUP,
    /// EPOLLERR), 0 if none: a read may then stop short with something
    /// left for the next one, and no edge to come (`hooks/drained.rs`).
    pub undrainable_gen: AtomicU32,
    /// Calls between their attempt and the end of their park (`fdkeep`),
    /// as `gen << 32 | count`; the count is of generation `gen` only: a
    /// dup2 over the fd keeps the file for them. An atomic beside `gen`
    /// rather than under the waiter lock: a keep-alive request's read
    /// took that lock twice more for it.
    pub parked: AtomicU64,
    /// The fd is one of corun's own (epoll, eventfd): the program cannot
    /// close it (it would get EBADF natively: the fd would not exist).
    pub runtime: std::sync::atomic::AtomicBool,
    /// accept serialisation: bit 0 held, bit 1 someone found it held.
    accept_busy: AtomicU8,
    /// The last read-side edge: `read_seq` after it << 32 | its epoll
    /// events (`one_read_edge_since`).
    read_edge: AtomicU64,
    pub waiters: Mutex<Waiters>,
}

impl FdEntry {
    #[inline]
    pub fn seq(&self, dir: Dir) -> &AtomicU32 {
        match dir {
            Dir::Read => &self.read_seq,
            Dir::Write => &self.write_seq,
        }
    }

    #[inline]
    pub fn snapshot(&self, dir: Dir) -> Snapshot {
        Snapshot {
            gen: self.gen.load(Ordering::Acquire),
            seq: self.seq(dir).load(Ordering::Acquire),
        }
    }

    /// The fd was closed or replaced: forget everything, wake every waiter
    /// (they will see `gen` changed and fail with EBADF, or go on with the
    /// file `fdkeep` kept for them). A kept file nobody claims is closed
    /// after the lock is let go.
    #[inline]
    pub fn reset(&self) {
        if super::lone::no_fd_waits() {
            self.reset_lone();
        } else {
            self.reset_locked();
        }
    }

    #[inline(never)]
    fn reset_locked(&self) {
        let (taken, _unclaimed) = {
            let mut w = lock(&self.waiters);
            // Every writer of `gen` holds this lock: a plain increment.
            let old = self.gen.load(Ordering::Relaxed);
            self.gen.store(old.wrapping_add(1), Ordering::Release);
            if w.readers.is_empty() && w.writers.is_empty() && w.kept.is_empty() {
                // Nobody to wake, no file kept: the common case (every
                // open and close), with no lists taken and dropped.
                self.parked
                    .store(u64::from(old.wrapping_add(1)) << 32, Ordering::Release);
                self.policy.forget();
                w.registered = 0;
                return;
            }
            let unclaimed = super::fdkeep::hand_over(&mut w, self, old);
            self.policy.forget();
            w.registered = 0;
            ((w.readers.take(), w.writers.take()), unclaimed)
        };
        taken.0.wake();
        taken.1.wake();
    }

    /// `reset` while no call ever waited on an fd (`lone::no_fd_waits`):
    /// no entry has a waiter, a parked call, a kept file or a registration
    /// (the generation in the registration word no longer matches once it
    /// moves), so the lock is not taken. Sets no errno (no system call).
    #[inline]
    pub fn reset_lone(&self) {
        let old = self.gen.load(Ordering::Relaxed);
        self.gen.store(old.wrapping_add(1), Ordering::Release);
        self.policy.forget();
    }

    /// Takes the accept try-lock; on failure records the contention so the
    /// holder wakes the readers when done.
    pub fn try_begin_accept(&self) -> bool {
        loop {
            if self.accept_busy.fetch_or(1, Ordering::AcqRel) & 1 == 0 {
                return true;
            }
            self.accept_busy.fetch_or(2, Ordering::AcqRel);
            // Still held: its holder will see our mark when it lets go. If it
            // let go before our mark, nobody would wake us: try again.
            if self.accept_busy.load(Ordering::Acquire) & 1 != 0 {
                return false;
            }
        }
    }

    /// Releases the accept try-lock, waking the readers if another
    /// coroutine wanted it meanwhile (its readiness edge was ours).
    pub fn end_accept(&self) {
        if self.accept_busy.swap(0, Ordering::AcqRel) & 2 != 0 {
            self.wake_readers();
        }
    }

    /// Makes every reader look again (as a readiness edge would).
    pub fn wake_readers(&self) {
        self.read_seq.fetch_add(1, Ordering::AcqRel);
        let r = lock(&self.waiters).readers.take();
        r.wake();
    }

    /// The epoll events of the read-side edge that came after `seen`, if
    /// exactly one came (and the fd was not closed or replaced): what the
    /// fd's state was when the netpoller took that edge.
    pub fn one_read_edge_since(&self, seen: Snapshot) -> Option<u32> {
        let now = self.snapshot(Dir::Read);
        if now.gen != seen.gen || now.seq != seen.seq.wrapping_add(1) {
            return None;
        }
        let v = self.read_edge.load(Ordering::Acquire);
        ((v >> 32) as u32 == now.seq).then_some(v as u32)
    }

    /// The netpoller saw `events` for registration `gen`.
    pub fn on_event(&self, gen: u32, events: u32) {
        if self.gen.load(Ordering::Acquire) != gen {
            return;
        }
        let rd = events
            & (libc::EPOLLIN | libc::EPOLLPRI | libc::EPOLLHUP | libc::EPOLLERR | libc::EPOLLRDHUP)
                as u32
            != 0;
        let wr = events & (libc::EPOLLOUT | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0;
        let ends = libc::EPOLLPRI | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR;
        if events & ends as u32 != 0 {
            self.undrainable_gen
                .store(gen.wrapping_add(1), Ordering::Release);
        }
        if rd {
            let seq = self.read_seq.fetch_add(1, Ordering::AcqRel).wrapping_add(1);
            self.read_edge
                .store((seq as u64) << 32 | events as u64, Ordering::Release);
        }
        if wr {
            self.write_seq.fetch_add(1, Ordering::AcqRel);
        }
        let (r, w) = {
            let mut g = lock(&self.waiters);
            if g.readers.is_empty() && g.writers.is_empty() {
                return;
            }
            let r = rd.then(|| g.readers.take());
            let w = wr.then(|| g.writers.take());
            (r, w)
        };
        r.into_iter().chain(w).for_each(Taken::wake);
    }

    /// Forgets what the hooks learned (the waiters and registration are
    /// left alone: in an inherited chunk they are the parent's).
    fn forget_learned(&self) {
        self.policy.forget();
    }
}

pub use super::own_lock::lock;

/// A slot of the table: the chunk of `CHUNK` entries in use, and, in a
/// forked child, the parent's chunk that the child has not rebuilt yet
/// (`rebuild_after_fork`), read when it is rebuilt. Side by side: the
/// child's move of one to the other copies one page, where two arrays
/// had it copy a page of each (`sys::ForkReset`).
struct Slot {
    cur: AtomicPtr<FdEntry>,
    inherited: AtomicPtr<FdEntry>,
}

static TABLE: [Slot; CHUNKS] = [const {
    Slot {
        cur: AtomicPtr::new(std::ptr::null_mut()),
        inherited: AtomicPtr::new(std::ptr::null_mut()),
    }
}; CHUNKS];

/// Which slots of TABLE hold a chunk, in use or inherited (one bit each), so that a
/// fork does not scan every slot.
#[link_section = "corun_fork_tables"] // read after a fork: sys::ForkReset
static USED: [AtomicU64; CHUNKS / 64] = [const { AtomicU64::new(0) }; CHUNKS / 64];

/// The entry for `fd`, allocating its chunk on first use; None for fds
/// outside the table.
#[inline]
pub fn get(fd: i32) -> Option<&'static FdEntry> {
    if fd < 0 || fd as usize >= MAX_FD {
        return None;
    }
    let (c, i) = (fd as usize / CHUNK, fd as usize % CHUNK);
    let mut p = TABLE[c].cur.load(Ordering::Acquire);
    if p.is_null() {
        p = alloc_chunk(c);
    }
    // SAFETY: chunks are allocated once, never freed, and hold CHUNK entries.
    Some(unsafe { &*p.add(i) })
}

/// The entry for `fd` if its chunk exists (no allocation, except to
/// rebuild a chunk a forked child inherited).
#[inline]
pub fn peek(fd: i32) -> Option<&'static FdEntry> {
    if fd < 0 || fd as usize >= MAX_FD {
        return None;
    }
    let (c, i) = (fd as usize / CHUNK, fd as usize % CHUNK);
    let mut p = TABLE[c].cur.load(Ordering::Acquire);
    if p.is_null() {
        if TABLE[c].inherited.load(Ordering::Acquire).is_null() {
            return None;
        }
        p = alloc_chunk(c);
    }
    // SAFETY: as in `get`.
    Some(unsafe { &*p.add(i) })
}

/// The entry for `fd` if its chunk is there already: `peek` without its
/// rebuild of a forked child's chunk, so a hook's first look makes no
/// call (and its entry keeps no frame); None sends it the long way.
#[inline(always)]
pub fn peek_built(fd: i32) -> Option<&'static FdEntry> {
    if fd < 0 || fd as usize >= MAX_FD {
        return None;
    }
    let (c, i) = (fd as usize / CHUNK, fd as usize % CHUNK);
    let p = TABLE[c].cur.load(Ordering::Acquire);
    if p.is_null() {
        return None;
    }
    // SAFETY: as in `get`.
    Some(unsafe { &*p.add(i) })
}

/// The lowest fd ever marked as corun's own (`mark_runtime`): numbers
/// below it are the program's without a look at their entry (corun's
/// epoll and eventfds are moved high, so `fstat` of a file asks only this).
static RUNTIME_LOW: AtomicI32 = AtomicI32::new(i32::MAX);
/// The highest fd ever marked as corun's own (-1: none).
static RUNTIME_HIGH: AtomicI32 = AtomicI32::new(-1);

/// Marks `fd` (whose entry is `e`) as one of corun's own: the program
/// cannot close it, nor see it in a listing.
pub fn mark_runtime(fd: i32, e: &FdEntry) {
    RUNTIME_LOW.fetch_min(fd, Ordering::AcqRel);
    RUNTIME_HIGH.fetch_max(fd, Ordering::AcqRel);
    e.runtime.store(true, Ordering::Relaxed);
}

/// The numbers corun's own fds ever took lie within `lo..=hi` (empty:
/// lo > hi): a `close_range` over every fd looks only there, not at the
/// million entries of the table (each `close_range(3, ~0)` took 3 ms).
pub fn runtime_span() -> (i32, i32) {
    (
        RUNTIME_LOW.load(Ordering::Acquire),
        RUNTIME_HIGH.load(Ordering::Acquire),
    )
}

/// Whether `fd` is one of corun's own (epoll, eventfd): read where the
/// entry is, without rebuilding an inherited chunk (every `close` asks).
#[inline]
pub fn is_runtime(fd: i32) -> bool {
    if fd < RUNTIME_LOW.load(Ordering::Acquire) || fd as usize >= MAX_FD {
        return false;
    }
    let (c, i) = (fd as usize / CHUNK, fd as usize % CHUNK);
    let mut p = TABLE[c].cur.load(Ordering::Acquire);
    if p.is_null() {
        p = TABLE[c].inherited.load(Ordering::Acquire);
        if p.is_null() {
            return false;
        }
    }
    // SAFETY: as in `get` (an inherited chunk is never freed either).
    unsafe { &*p.add(i) }.runtime.load(Ordering::Relaxed)
}

/// Makes chunk `c`: empty, or in a forked child rebuilt from the parent's
/// (`rebuild_after_fork`).
#[cold]
fn alloc_chunk(c: usize) -> *mut FdEntry {
    let old = TABLE[c].inherited.load(Ordering::Acquire);
    let v: Vec<FdEntry> = (0..CHUNK)
        .map(|i| {
            let n = FdEntry::default();
            if !old.is_null() {
                // SAFETY: `old` is a chunk of CHUNK entries, never freed.
                let o = unsafe { &*old.add(i) };
                n.policy.copy_from(&o.policy);
                n.gen.store(
                    o.gen.load(Ordering::Relaxed).wrapping_add(1),
                    Ordering::Relaxed,
                );
                n.runtime
                    .store(o.runtime.load(Ordering::Relaxed), Ordering::Relaxed);
            }
            n
        })
        .collect();
    let p = Box::into_raw(v.into_boxed_slice()) as *mut FdEntry;
    // Marked before the chunk is published: a fork between the two must
    // not miss it.
    USED[c / 64].fetch_or(1 << (c % 64), Ordering::AcqRel);
    match TABLE[c].cur.compare_exchange(
        std::ptr::null_mut(),
        p,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => {
            TABLE[c]
                .inherited
                .store(std::ptr::null_mut(), Ordering::Release);
            p
        }
        Err(other) => {
            // SAFETY: `p` came from Box::into_raw of a CHUNK-long slice just above
            // and was never shared.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, CHUNK)) });
            other
        }
    }
}

/// In a forked child: every entry is to be rebuilt from what the hooks
/// learned (atomics), without the waiter lists and epoll registrations,
/// which belong to the parent's epoll instances and threads. The parent's
/// chunks are abandoned (their mutexes may have been held by threads that
/// do not exist in the child) and set aside: each is rebuilt when the
/// child first uses an fd of it. A child that serves one connection and
/// exits rebuilds one small chunk, not the table (it used to copy every
/// chunk at once: a third of the page faults of a fork-per-connection
/// server's children).
pub fn rebuild_after_fork() {
    for (w, word) in USED.iter().enumerate() {
        let mut bits = word.load(Ordering::Acquire);
        while bits != 0 {
            let c = w * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let cur = TABLE[c].cur.load(Ordering::Acquire);
            if !cur.is_null() {
                // A chunk the parent used; else the parent's own
                // inheritance (never rebuilt there) stays as it is.
                TABLE[c].inherited.store(cur, Ordering::Release);
                TABLE[c].cur.store(std::ptr::null_mut(), Ordering::Release);
            }
        }
    }
}

/// The fd was closed (or is about to be replaced by dup2/dup3).
pub fn forget(fd: i32) {
    if fd >= 0 && (fd as usize) < MAX_FD {
        let (c, i) = (fd as usize / CHUNK, fd as usize % CHUNK);
        let old = TABLE[c].inherited.load(Ordering::Acquire);
        if TABLE[c].cur.load(Ordering::Acquire).is_null() && !old.is_null() {
            // A forked child closing an fd of a chunk it has not rebuilt:
            // the rebuild will copy nothing about it (no allocation now;
            // a child that closes its listener and exits makes none).
            // SAFETY: `old` is a chunk of CHUNK entries, never freed.
            unsafe { &*old.add(i) }.forget_learned();
            return;
        }
    }
    if let Some(e) = peek(fd) {
        e.reset();
    }
}

/// `forget` of every fd in `lo..=hi`, looking only at the chunks ever
/// made (`USED`): a `close_range(3, ~0)` no longer walks a million entries.
pub fn forget_range(lo: u32, hi: u32) {
    let (lo, top) = (lo as usize, (hi as usize).min(MAX_FD - 1));
    if lo > top {
        return;
    }
    let words = lo / CHUNK / 64..=top / CHUNK / 64;
    for (w, word) in USED
        .iter()
        .enumerate()
        .skip(*words.start())
        .take(words.count())
    {
        let mut bits = word.load(Ordering::Acquire);
        while bits != 0 {
            let c = w * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            for fd in (c * CHUNK).max(lo)..=((c + 1) * CHUNK - 1).min(top) {
                forget(fd as i32);
            }
        }
    }
}

/// What `close` does first: false for one of corun's own fds (the
/// program gets EBADF, nothing is forgotten), else `forget(fd)` and true.
/// One lookup of the entry for both (`is_runtime`, then `forget`).
#[inline]
pub fn forget_for_close(fd: i32) -> bool {
    if fd < 0 || fd as usize >= MAX_FD {
        return true;
    }
    let (c, i) = (fd as usize / CHUNK, fd as usize % CHUNK);
    let p = TABLE[c].cur.load(Ordering::Acquire);
    if p.is_null() {
        return forget_inherited(c, i);
    }
    // SAFETY: as in `get`.
    let e = unsafe { &*p.add(i) };
    if e.runtime.load(Ordering::Relaxed) {
        return false;
    }
    e.reset();
    true
}

/// `forget_for_close` of an fd whose chunk is not in the table: a forked
/// child's inherited one (forgotten there without a rebuild, as `forget`
/// does), or none.
#[cold]
#[link_section = ".text.hot.corun"] // a forked child's path: build.rs
fn forget_inherited(c: usize, i: usize) -> bool {
    let old = TABLE[c].inherited.load(Ordering::Acquire);
    if old.is_null() {
        return true;
    }
    // SAFETY: `old` is a chunk of CHUNK entries, never freed.
    let o = unsafe { &*old.add(i) };
    if o.runtime.load(Ordering::Relaxed) {
        return false;
    }
    o.forget_learned();
    true
}

/// `close` is `forget`, the real close, then this: a waiter that took its
/// snapshot after `forget` (so saw the new generation) and registered
/// before the real close is never woken by the kernel (closing the last
/// reference drops the fd from epoll silently). So wake whoever waits on
/// the number again, unless a new file of that number was made through
/// corun since (its creation moved the generation past `gen`).
pub fn forget_after_close(fd: i32, gen: u32) {
    if let Some(e) = peek(fd) {
        if e.gen.load(Ordering::Acquire) == gen {
            e.reset();
        }
    }
}

/// The generation of `fd`'s entry now (0 when it has none).
pub fn generation(fd: i32) -> u32 {
    peek(fd).map_or(0, |e| e.gen.load(Ordering::Acquire))
}

#[cfg(test)]
#[path = "fdtable_tests.rs"]
mod tests;
