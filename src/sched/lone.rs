//! Whether the process may have more than one coroutine, asked without a
//! thread-local or a walk over the workers.
//!
//! Every I/O hook asks `sched::parking()` (is the caller a coroutine, and
//! not the process's only one?) and some ask `sched::sole_coroutine()`.
//! The exact answer reads the current-task pointer (a `__tls_get_addr`
//! call from this shared library) and sums the live tasks of every worker.
//! An event-driven process (an nginx or lighttpd worker, a forked
//! PostgreSQL backend) never makes a second coroutine, and paid that on
//! each of its calls.
//!
//! Two process-wide flags answer it for such a process: `SPAWNED`, set by
//! the first spawn after `main` (every coroutine but `main` and a forked
//! child's own comes from `spawn::spawn_at`, which reports it before it
//! places the task) and cleared in a forked child, which keeps only the
//! forking coroutine; and `TOKENS`, set when a coroutine first enters a
//! cancel token (a coroutine under a token parks even when alone), never
//! cleared. While neither is set, no coroutine but the caller can exist
//! and none runs under a token: `parking()` is false, whoever calls.
//!
//! A spawn by a native thread (C API) racing with a hook of the only
//! coroutine may be missed by that one call: the same as the per-worker
//! counts, read Relaxed, already allowed.
//!
//! Both flags are bits of one byte, so that the question every hook asks
//! first (`nothing_parks`) is one load and one test: the hooks' entries
//! (`hooks/mod.rs`, "lone entries") go straight to libc on it.
//!
//! A third bit, `WAITED`, is set when a call first puts a waiter on an fd
//! (`park::enlist`) or counts itself parked on one (`fdkeep::enter`), as
//! a lone coroutine's calls with a signal mask do (`ppoll`, `pselect`,
//! `epoll_pwait`), and cleared in a forked child, whose fd entries are
//! rebuilt without waiters. While no bit is set (`no_fd_waits`), no fd
//! entry has a waiter, a parked call or a kept file: `close` and `open`
//! forget an fd without taking its waiter lock (`FdEntry::reset_lone`).

use std::sync::atomic::{AtomicU8, Ordering};

const SPAWNED: u8 = 1;
const TOKENS: u8 = 2;
const WAITED: u8 = 4;
/// The flags, alone on their cache line: every hook reads them, and the
/// statics packed around them in `corun_fork` (the futex table's counts of
/// sleepers, the signal-mask tallies) are written by parks and spawns on
/// every worker. A guard, not a measured gain: a read/write loop on one
/// worker beside two threads handing a turn over a condition variable on
/// the other ran at 1.91-1.96 us a pair either way.
#[repr(align(64))]
struct Flags(AtomicU8);
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
static STATE: Flags = Flags(AtomicU8::new(0));

/// A coroutine other than `main` (or a forked child's own) is being
/// spawned.
#[inline]
pub fn note_spawn() {
    if STATE.0.load(Ordering::Relaxed) & SPAWNED == 0 {
        STATE.0.fetch_or(SPAWNED, Ordering::Relaxed);
    }
}

/// A coroutine enters a cancel token.
#[inline]
pub fn note_token() {
    if STATE.0.load(Ordering::Relaxed) & TOKENS == 0 {
        STATE.0.fetch_or(TOKENS, Ordering::Relaxed);
    }
}

/// A call puts a waiter on an fd, or counts itself parked on one.
#[inline]
pub fn note_fd_wait() {
    if STATE.0.load(Ordering::Relaxed) & WAITED == 0 {
        STATE.0.fetch_or(WAITED, Ordering::Relaxed);
    }
}

/// In a forked child, which has only the forking coroutine, and fd
/// entries rebuilt without waiters (`fdtable::rebuild_after_fork`).
pub fn after_fork_child() {
    // A look first: a store would copy the page (`sys::ForkReset`).
    if STATE.0.load(Ordering::Relaxed) & (SPAWNED | WAITED) != 0 {
        STATE.0.fetch_and(!(SPAWNED | WAITED), Ordering::Relaxed);
    }
}

/// No coroutine but the first was ever spawned (since the start or the
/// fork): a coroutine asking is the only one.
#[inline]
pub fn never_spawned() -> bool {
    STATE.0.load(Ordering::Relaxed) & SPAWNED == 0
}

/// Neither a second coroutine nor a cancel token ever: nothing parks
/// (but calls with a signal mask: `WAITED`).
#[inline(always)]
pub fn nothing_parks() -> bool {
    STATE.0.load(Ordering::Relaxed) & (SPAWNED | TOKENS) == 0
}

/// Nothing parks, and no call ever waited on an fd: every fd entry's
/// waiter side is as new.
#[inline(always)]
pub fn no_fd_waits() -> bool {
    STATE.0.load(Ordering::Relaxed) == 0
}
