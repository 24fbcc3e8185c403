//! corun: run unchanged, blocking C programs as stackful coroutines.
//!
//! `LD_PRELOAD=libcorun.so ./server` and the program's `main` and threads
//! become coroutines on a few worker threads; a call that would block parks
//! the coroutine instead of the thread. The layers, top to bottom:
//!
//! - `hooks`: the interposed libc symbols (one file per family);
//! - `capi`: the C API of `include/corun.h`;
//! - `sched`: per-worker scheduler, netpoller, timers, the park API;
//! - `ctx`: coroutines on pooled, guarded stacks;
//! - `sys`: the real libc functions, epoll, clocks.
//!
//! Data flows down; nothing below knows the layer above.

pub mod config;

/// The runtime allocates from glibc's heap, never through the program's
/// `malloc`, which may call hooks from inside itself (`sys/alloc.rs`).
#[global_allocator]
static HEAP: sys::alloc::LibcHeap = sys::alloc::LibcHeap;

pub mod ctx;
pub mod sched;
pub mod sys;

#[cfg(not(test))]
pub mod capi;
#[cfg(not(test))]
pub mod hooks;
// The hooks are not built into the unit-test binary (they would interpose
// its own libc calls); a hook's pure algorithm is, on its own.
#[cfg(test)]
#[path = "capi/handles.rs"]
mod capi_handles;
#[cfg(test)]
#[path = "hooks/path_memo.rs"]
mod hooks_path_memo;
#[cfg(test)]
#[path = "hooks/pthread_sync/mask.rs"]
mod hooks_pthread_mask;
#[cfg(test)]
#[path = "hooks/scanf_format.rs"]
mod hooks_scanf_format;
