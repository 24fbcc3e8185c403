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

use std::sync::atomic::{AtomicBool, Ordering};

static SPAWNED: AtomicBool = AtomicBool::new(false);
static TOKENS: AtomicBool = AtomicBool::new(false);

/// A coroutine other than `main` (or a forked child's own) is being
/// spawned.
#[inline]
pub fn note_spawn() {
    if !SPAWNED.load(Ordering::Relaxed) {
        SPAWNED.store(true, Ordering::Relaxed);
    }
}

/// A coroutine enters a cancel token.
#[inline]
pub fn note_token() {
    if !TOKENS.load(Ordering::Relaxed) {
        TOKENS.store(true, Ordering::Relaxed);
    }
}

/// In a forked child, which has only the forking coroutine.
pub fn after_fork_child() {
    SPAWNED.store(false, Ordering::Relaxed);
}

/// No coroutine but the first was ever spawned (since the start or the
/// fork): a coroutine asking is the only one.
#[inline]
pub fn never_spawned() -> bool {
    !SPAWNED.load(Ordering::Relaxed)
}

/// Neither a second coroutine nor a cancel token ever: nothing parks.
#[inline]
pub fn nothing_parks() -> bool {
    !SPAWNED.load(Ordering::Relaxed) && !TOKENS.load(Ordering::Relaxed)
}
