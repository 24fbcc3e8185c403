//! `clone` (glibc's wrapper) and the raw `SYS_clone`, `SYS_clone3` and
//! `SYS_fork` the `syscall` hook hands over: a new *process* gets what a
//! forked child gets (docs/ARCHITECTURE.md §5.5).
//!
//! A clone without CLONE_VM copies the address space: the child starts with
//! the parent's runtime, its workers' epoll instances and eventfds shared
//! with the parent through the inherited fds, and the parent's coroutines
//! in its queues. vsftpd makes its session processes this way
//! (`syscall(SYS_clone, CLONE_NEWPID | ... | SIGCHLD, NULL)`); without the
//! rebuild, the child waited on the parent's epoll and each lost the
//! other's wake-ups. So, from a coroutine:
//!
//! - `syscall(SYS_clone)` and `syscall(SYS_clone3)` without CLONE_VM and
//!   without a new stack, and `syscall(SYS_fork)`, return twice on the same
//!   stack, as `fork` does: the child rebuilds its runtime before it
//!   returns (`process::as_fork`). With a new stack the child would return
//!   into whatever that stack holds (only assembly can use that): passed
//!   through as it is.
//! - `clone(fn, stack, flags, arg, ...)` without CLONE_VM runs `fn` on the
//!   new stack: corun starts the child at `child_start` instead, which
//!   rebuilds the runtime and then calls `fn(arg)`. The child's runtime
//!   keeps the cloning coroutine as its only one, now running on the new
//!   stack; `fn`'s return ends the child with that status, as natively it
//!   ends its only thread (threads the child made end with it; natively
//!   they would outlive `fn`).
//!
//! With CLONE_VM (threads, `posix_spawn`'s vfork-like child) and outside
//! coroutines every call is the real one. Unlike `fork`, a clone runs no
//! `pthread_atfork` handlers, glibc's own included: as natively, a child
//! cloned while another thread held malloc's lock could not allocate; the
//! runtime's own locks are rebuilt as after `fork`.

use std::ffi::{c_int, c_long, c_void};

use super::{as_fork, Forker};
use crate::sched::in_coroutine;

type StartFn = extern "C" fn(*mut c_void) -> c_int;

mod next {
    use std::ffi::{c_int, c_void};
    crate::sys::real::real_fns! {
        fn clone(f: super::StartFn, stack: *mut c_void, flags: c_int, arg: *mut c_void,
            ptid: *mut c_void, tls: *mut c_void, ctid: *mut c_void) -> c_int;
    }
}

/// What the cloned child starts with: read from the parent's stack, which
/// the child has a copy of.
struct Start {
    f: StartFn,
    arg: *mut c_void,
    forker: Forker,
}

extern "C" fn child_start(p: *mut c_void) -> c_int {
    // SAFETY: `p` is the `Start` on the parent's stack at the time of the
    // clone; the child has its own copy of that memory (no CLONE_VM), and
    // nothing in the child runs on that stack.
    let s = unsafe { &*(p as *const Start) };
    s.forker.child();
    let status = (s.f)(s.arg);
    // glibc's wrapper would end only this thread (SYS_exit), and a thread
    // of corun's (the watchdog, a blocking-pool helper) would keep the
    // child, and its fds, alive: the process ends here, as natively it
    // ends with its only thread.
    // SAFETY: _exit has no preconditions.
    unsafe { libc::_exit(status) }
}

/// glibc's `clone`. Variadic in C: `parent_tid`, `tls` and `child_tid`
/// follow `arg` where a non-variadic function finds them (x86_64: two
/// registers and the first stack slot), and are passed on as they came.
#[no_mangle]
pub unsafe extern "C" fn clone(
    f: Option<StartFn>,
    stack: *mut c_void,
    flags: c_int,
    arg: *mut c_void,
    ptid: *mut c_void,
    tls: *mut c_void,
    ctid: *mut c_void,
) -> c_int {
    let Some(func) = f else {
        // What glibc's wrapper says to a null function.
        crate::sys::set_errno(libc::EINVAL);
        return -1;
    };
    if !in_coroutine() || flags as c_long & libc::CLONE_VM as c_long != 0 {
        // SAFETY: the caller's clone contract.
        return unsafe { next::clone(func, stack, flags, arg, ptid, tls, ctid) };
    }
    let start = Start {
        f: func,
        arg,
        forker: Forker::here(),
    };
    let p = &start as *const Start as *mut c_void;
    // SAFETY: the caller's contract, with our start function in front of
    // `func` (it calls `func(arg)` in the child).
    unsafe { next::clone(child_start, stack, flags, p, ptid, tls, ctid) }
}

/// `struct clone_args` (linux/sched.h), as far as corun reads it.
#[repr(C)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
}

/// `syscall(n, a...)` for SYS_clone, SYS_clone3 and SYS_fork from the
/// program: Some(result) when it made a new process the fork way, None
/// when the call is to be made as it is.
pub(crate) fn raw(n: c_long, a: [c_long; 6], call: impl FnOnce() -> c_long) -> Option<c_long> {
    if !in_coroutine() {
        return None;
    }
    let forklike = match n {
        libc::SYS_fork => true,
        // x86_64: clone(flags, newsp, parent_tid, child_tid, tls).
        libc::SYS_clone => a[0] & libc::CLONE_VM as c_long == 0 && a[1] == 0,
        libc::SYS_clone3 => {
            let size = a[1] as usize;
            if a[0] == 0 || size < std::mem::size_of::<CloneArgs>() {
                return None;
            }
            // SAFETY: the caller passes a readable clone_args of `size`
            // bytes (the kernel would say EFAULT otherwise: checked
            // non-null above; a wild pointer faults here as in the kernel's
            // copy, minus the EFAULT).
            let ca = unsafe { &*(a[0] as *const CloneArgs) };
            ca.flags & libc::CLONE_VM as u64 == 0 && ca.stack == 0
        }
        _ => false,
    };
    forklike.then(|| as_fork(call))
}
