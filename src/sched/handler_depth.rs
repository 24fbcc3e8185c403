//! Which signal handlers run on this thread, counted: the hooks ask it
//! before they park (`park::in_coroutine`: a handler the kernel started
//! may have interrupted runtime code holding a lock, so hooks called from
//! it pass straight through), and the signal trampoline (`hooks/sigdeliver.rs`)
//! keeps it as handlers start, nest, return or are left by `longjmp`.
//!
//! Three depths, all per thread and async-signal-safe to touch (plain
//! cells in initial-exec or `const` thread-locals, no destructor):
//! handlers running at all (`SIGNAL_DEPTH`), of those the ones the kernel
//! started (`ASYNC_DEPTH`), and trampolines delivering in place for the
//! coroutine they interrupted (`IN_PLACE_DEPTH`). `park::suspend` keeps
//! the first out of sight of the coroutines sharing this one's
//! thread-locals.

/// Of those, the handlers the kernel started (they may have interrupted
/// runtime code holding a lock), as opposed to handlers a coroutine
/// runs for a pending signal when it resumes (ordinary code then).
use crate::sys::static_tls::AsyncDepth as ASYNC_DEPTH;
/// Signal handlers running on this thread (nested). While one runs, the
/// thread is not "in a coroutine" for the hooks: they pass through
/// instead of parking inside the handler. Initial-exec TLS
/// (`sys::static_tls`), as `ASYNC_DEPTH`.
use crate::sys::static_tls::SignalDepth as SIGNAL_DEPTH;
std::thread_local! {
    /// Of those, the trampolines that run a signal in place for the
    /// coroutine they interrupted on its own stack: a signal that lands
    /// inside one (on the worker's alternate stack, SA_ONSTACK) runs in
    /// place too, nested, as the kernel nests it (`sigdeliver`).
    static IN_PLACE_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// A signal handler starts on this thread (called by the hooks'
/// trampoline; async-signal-safe: a const thread-local).
pub fn signal_handler_enter() {
    SIGNAL_DEPTH::set(SIGNAL_DEPTH::get().saturating_add(1));
}

/// The handler returned.
pub fn signal_handler_leave() {
    SIGNAL_DEPTH::set(SIGNAL_DEPTH::get().saturating_sub(1));
}

/// The kernel interrupted this thread with a signal (the trampoline runs),
/// and the trampoline returns.
pub fn async_signal_enter() {
    ASYNC_DEPTH::set(ASYNC_DEPTH::get().saturating_add(1));
}

pub fn async_signal_leave() {
    ASYNC_DEPTH::set(ASYNC_DEPTH::get().saturating_sub(1));
}

/// A trampoline starts (or stops) delivering in place for the coroutine
/// it interrupted on its own stack.
pub fn in_place_enter() {
    IN_PLACE_DEPTH.set(IN_PLACE_DEPTH.get().saturating_add(1));
}

pub fn in_place_leave() {
    IN_PLACE_DEPTH.set(IN_PLACE_DEPTH.get().saturating_sub(1));
}

/// Whether a trampoline delivering in place is under way on this thread.
pub fn in_place_delivery() -> bool {
    IN_PLACE_DEPTH.get() != 0
}

/// A handler left by longjmp: it will never return.
pub fn signal_handler_reset() {
    SIGNAL_DEPTH::set(0);
    ASYNC_DEPTH::set(0);
    IN_PLACE_DEPTH.set(0);
}

/// Whether a handler the kernel started runs on this thread: code here may
/// have been interrupted anywhere, locks held, so only async-signal-safe
/// paths may be taken.
#[inline]
pub fn in_async_signal_handler() -> bool {
    ASYNC_DEPTH::get() != 0
}

/// How many handlers the kernel started are running on this thread.
pub fn async_signal_depth() -> u32 {
    ASYNC_DEPTH::get() as u32
}

/// Whether a signal handler runs on this thread (or in this coroutine).
#[inline]
pub fn in_signal_handler() -> bool {
    SIGNAL_DEPTH::get() != 0
}
