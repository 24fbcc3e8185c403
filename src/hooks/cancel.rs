//! Thread exit and cancellation: `pthread_cancel`, `pthread_setcancelstate`,
//! `pthread_setcanceltype`, `pthread_testcancel`, and the C cleanup-buffer
//! chain `__pthread_register_cancel`, `__pthread_unregister_cancel`,
//! `__pthread_register_cancel_defer`, `__pthread_unregister_cancel_restore`,
//! `__pthread_unwind_next`. `pthread_exit` (pthread.rs) ends a thread here.
//!
//! # Exit is an unwind, as in glibc
//!
//! glibc ends a thread by a *forced unwind* (`_Unwind_ForcedUnwind`) from
//! `pthread_exit` or the cancellation point up to the thread's first frame:
//! C++ frames run their destructors (`lock_guard` unlocks, RAII frees), C
//! frames built with `-fexceptions` run their `cleanup` attributes, and at
//! each frame a *stop function* decides whether to go on. We do the same
//! for a coroutine that has its own TLS (a `pthread_create` thread; see
//! `ctx::tls`), with our own stop function:
//!
//! - C's `pthread_cleanup_push` without exceptions is a `setjmp` buffer the
//!   program registers (`__pthread_register_cancel`); we keep the chain in
//!   the task (`ident.cleanup`). When the unwind reaches the frame that
//!   pushed the top buffer (the frame's CFA is at or above the stack
//!   pointer saved in the buffer, glibc's own test), we `longjmp` into it:
//!   the macro runs the handler and calls `__pthread_unwind_next`, which
//!   goes on from the next buffer down the chain.
//! - Past the frames of the start routine (a stack address recorded just
//!   before it was called, `ident.entry_limit`), the thread ends: its
//!   `thread_local` and key destructors run, and the scheduler abandons the
//!   frames left (ours and the unwinder's, which own nothing).
//!
//! The exception object lives in the task (`ident.unwind`): the unwinder
//! needs it after the frames it discards, which is why glibc keeps its own
//! in the thread descriptor.
//!
//! Coroutines without TLS of their own (`main`, `corun_spawn` tasks) end as
//! before: their frames are abandoned without unwinding.
//!
//! # Cancellation
//!
//! Deferred cancellation as POSIX specifies it: `pthread_cancel` sets a
//! request in the target's identity and wakes it if it is parked at a
//! cancellation point (`sched::interrupt_cancelable`). Every wait that is a
//! cancellation point in libc is one here: fd waits (read, write, accept,
//! connect, recv, send...), poll/select/epoll_wait, sleeps, condition and
//! semaphore waits, joins (`sched::park_cancelable`,
//! `sched::sync::wait_cancelable`), and `pthread_testcancel`. A due request
//! acts there as `pthread_exit(PTHREAD_CANCELED)`. read, write, readv,
//! writev, pread, pwrite, open, openat and close also act on a request
//! already due at their entry, as glibc's wrappers do, even when they would
//! not wait (`hooks::cancel_entry`: a regular file, /dev/null). Other calls
//! that do not need to wait (data already there) do not act: they return
//! their result, and the next wait acts.
//!
//! Asynchronous cancellation (`PTHREAD_CANCEL_ASYNCHRONOUS`, enabled): a
//! request acts wherever the thread waits, not only at cancellation
//! points: a wait on the futex table (a mutex, rwlock, barrier or once
//! wait, the program's own futex: `sched::sync::park_on`) is interrupted
//! too, takes its slot back (passing on a wake it took) and acts; a
//! process-shared or robust lock's wait acts between its attempts. A
//! thread that computes acts when it is next preempted
//! (`sched::preempt::yield_preempted`), which `pthread_cancel` asks for.

use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;

use libc::pthread_t;

use crate::sched::identity::{cancel, UnwindException};
use crate::sched::{self, current, Running, Task};

use super::unwind_link;

mod next {
    use libc::{c_int, c_void, pthread_t};
    crate::sys::real::real_fns! {
        fn pthread_cancel(t: pthread_t) -> c_int;
        fn pthread_setcancelstate(state: c_int, old: *mut c_int) -> c_int;
        fn pthread_setcanceltype(kind: c_int, old: *mut c_int) -> c_int;
        fn pthread_testcancel() -> ();
        fn __pthread_register_cancel(buf: *mut c_void) -> ();
        fn __pthread_unregister_cancel(buf: *mut c_void) -> ();
        fn __pthread_register_cancel_defer(buf: *mut c_void) -> ();
        fn __pthread_unregister_cancel_restore(buf: *mut c_void) -> ();
        fn __pthread_unwind_next(buf: *mut c_void) -> ();
        fn _longjmp(env: *mut c_void, val: c_int) -> ();
    }
}

const UA_END_OF_STACK: c_int = 16;
const URC_NO_REASON: c_int = 0;
/// `__pthread_unwind_buf_t`: the jmp_buf (8 words) and its mask flag, then
/// `priv.data.prev` (glibc's struct pthread_unwind_buf).
const BUF_PREV: usize = 72;
/// The saved stack pointer in an x86_64 jmp_buf (JB_RSP), mangled.
const JB_RSP: usize = 6;
const PTHREAD_CANCELED: usize = usize::MAX;
// <pthread.h>'s enums (the libc crate lacks them).
const PTHREAD_CANCEL_ENABLE: c_int = 0;
pub(crate) const PTHREAD_CANCEL_DISABLE: c_int = 1;
const PTHREAD_CANCEL_DEFERRED: c_int = 0;
const PTHREAD_CANCEL_ASYNCHRONOUS: c_int = 1;

/// The running coroutine, if it is a thread that unwinds on exit.
fn unwinding_thread() -> Option<Running> {
    current().filter(|t| t.ident.tp.get() != 0 && t.ident.entry_limit.get() != 0)
}

/// The stack pointer saved in a glibc jmp_buf: glibc mangles it with the
/// pointer guard (`%fs:0x30`, the same in every thread of the process):
/// `rol(sp ^ guard, 17)`.
fn jmpbuf_sp(buf: usize) -> usize {
    let guard: usize;
    // SAFETY: reads the pointer guard word of the current descriptor.
    unsafe {
        std::arch::asm!("mov {}, qword ptr fs:[0x30]", out(reg) guard,
            options(nostack, readonly, preserves_flags))
    };
    // SAFETY: `buf` is a registered cleanup buffer, alive in its frame.
    let mangled = unsafe { (buf as *const usize).add(JB_RSP).read() };
    mangled.rotate_right(17) ^ guard
}

/// Unwinds the running thread to its first frame and ends it with
/// `value`. Falls back to abandoning the frames where it cannot unwind.
pub(crate) fn unwind_exit(value: usize) -> ! {
    let Some(t) = unwinding_thread() else {
        super::pthread::end_without_unwind(value)
    };
    t.ident.exit_value.set(value);
    t.ident
        .cancel
        .fetch_or(cancel::ACTING | cancel::DISABLED, Ordering::AcqRel);
    unwind_from(t, t.ident.cleanup.get())
}

/// Starts (or continues, after a C cleanup handler) the forced unwind,
/// with `buf` the next C cleanup buffer to run (0: none).
fn unwind_from(t: Running, buf: usize) -> ! {
    t.ident.cleanup.set(buf);
    let exc = t.ident.unwind.get();
    // SAFETY: the task's own exception object, not in use (an unwind that
    // goes on after a handler starts anew); class 0 as glibc's, no cleanup
    // function (nothing catches a forced unwind).
    unsafe { exc.write(UnwindException::default()) };
    // SAFETY: a valid exception object and stop function; the unwind walks
    // this coroutine's stack only (the stop function ends at its entry).
    unsafe { (unwind_link::unwinder().forced_unwind)(exc, stop, std::ptr::null_mut()) };
    // No unwind information to go further: end here.
    end_thread(t)
}

extern "C" fn stop(
    _version: c_int,
    actions: c_int,
    _class: u64,
    _exc: *mut UnwindException,
    ctx: *mut c_void,
    _param: *mut c_void,
) -> c_int {
    let Some(t) = unwinding_thread() else {
        return URC_NO_REASON;
    };
    let end = actions & UA_END_OF_STACK != 0;
    // SAFETY: the unwinder's context for the frame it is about to unwind.
    let cfa = if end {
        usize::MAX
    } else {
        unsafe { (unwind_link::unwinder().get_cfa)(ctx) }
    };
    let buf = t.ident.cleanup.get();
    if buf != 0 && cfa >= jmpbuf_sp(buf) {
        // The frame that pushed `buf`: run its handler as glibc does, by a
        // jump back into its pthread_cleanup_push (which then calls
        // __pthread_unwind_next).
        // SAFETY: `buf` was set up by __sigsetjmp in a frame that is still
        // on the stack (the unwind has not passed it).
        unsafe { next::_longjmp(buf as *mut c_void, 1) };
    }
    if end || cfa > t.ident.entry_limit.get() {
        end_thread(t)
    }
    URC_NO_REASON
}

/// The thread's frames are unwound: its destructors run and it ends.
fn end_thread(t: Running) -> ! {
    super::pthread::end_without_unwind(t.ident.exit_value.get())
}

/// Acts on a due cancellation (installed in `sched::identity`).
fn act_on_cancel() -> ! {
    if unwinding_thread().is_some() {
        unwind_exit(PTHREAD_CANCELED)
    }
    super::pthread::end_without_unwind(PTHREAD_CANCELED)
}

/// Installs the cancellation action; called when the runtime starts.
pub(crate) fn init() {
    sched::identity::set_cancel_action(act_on_cancel);
}

#[no_mangle]
pub unsafe extern "C" fn pthread_cancel(th: pthread_t) -> c_int {
    let Some(task) = super::pthread::coroutine_task(th) else {
        if super::pthread::is_coroutine_handle(th) {
            return libc::ESRCH;
        }
        // SAFETY: a real thread: the caller's contract.
        return unsafe { next::pthread_cancel(th) };
    };
    // The target may act in its preemption handler: the unwinder is
    // opened here, in normal context.
    unwind_link::prepare();
    let prev = task
        .ident
        .cancel
        .fetch_or(cancel::REQUESTED, Ordering::SeqCst);
    if prev & cancel::REQUESTED == 0 {
        if task.ident.cancel_async() {
            sched::preempt::async_cancel_requested();
        }
        sched::interrupt_cancelable(&task);
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn pthread_setcancelstate(state: c_int, old: *mut c_int) -> c_int {
    let Some(t) = current().filter(|_| super::pthread::coroutine_threads()) else {
        // SAFETY: the caller's contract.
        return unsafe { next::pthread_setcancelstate(state, old) };
    };
    let bit = match state {
        PTHREAD_CANCEL_ENABLE => 0,
        PTHREAD_CANCEL_DISABLE => cancel::DISABLED,
        _ => return libc::EINVAL,
    };
    let prev = if bit == 0 {
        t.ident
            .cancel
            .fetch_and(!cancel::DISABLED, Ordering::AcqRel)
    } else {
        t.ident.cancel.fetch_or(cancel::DISABLED, Ordering::AcqRel)
    };
    if !old.is_null() {
        // SAFETY: the caller passed a writable int or NULL.
        unsafe {
            *old = if prev & cancel::DISABLED != 0 {
                PTHREAD_CANCEL_DISABLE
            } else {
                PTHREAD_CANCEL_ENABLE
            }
        };
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn pthread_setcanceltype(kind: c_int, old: *mut c_int) -> c_int {
    let Some(t) = current().filter(|_| super::pthread::coroutine_threads()) else {
        // SAFETY: the caller's contract.
        return unsafe { next::pthread_setcanceltype(kind, old) };
    };
    let prev = match kind {
        PTHREAD_CANCEL_DEFERRED => t.ident.cancel.fetch_and(!cancel::ASYNC, Ordering::AcqRel),
        PTHREAD_CANCEL_ASYNCHRONOUS => {
            unwind_link::prepare();
            t.ident.cancel.fetch_or(cancel::ASYNC, Ordering::AcqRel)
        }
        _ => return libc::EINVAL,
    };
    if !old.is_null() {
        // SAFETY: the caller passed a writable int or NULL.
        unsafe {
            *old = if prev & cancel::ASYNC != 0 {
                PTHREAD_CANCEL_ASYNCHRONOUS
            } else {
                PTHREAD_CANCEL_DEFERRED
            }
        };
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn pthread_testcancel() {
    match current().filter(|_| super::pthread::coroutine_threads()) {
        Some(t) => sched::identity::cancel_point(&t.ident),
        // SAFETY: no arguments.
        None => unsafe { next::pthread_testcancel() },
    }
}

/// Pushes a C cleanup buffer on the running thread's chain.
fn push(t: &Task, buf: *mut c_void) {
    // SAFETY: `buf` is the caller's __pthread_unwind_buf_t, whose private
    // words follow the jmp_buf (glibc's layout, which the macros share).
    unsafe { ((buf as usize + BUF_PREV) as *mut usize).write(t.ident.cleanup.get()) };
    t.ident.cleanup.set(buf as usize);
}

/// Pops it (the chain's top, by the macros' nesting).
fn pop(t: &Task, buf: *mut c_void) {
    // SAFETY: as in `push`: the buffer registered by the same macro pair.
    let prev = unsafe { ((buf as usize + BUF_PREV) as *const usize).read() };
    t.ident.cleanup.set(prev);
}

#[no_mangle]
pub unsafe extern "C" fn __pthread_register_cancel(buf: *mut c_void) {
    match unwinding_thread() {
        Some(t) => push(&t, buf),
        // SAFETY: the caller's contract.
        None => unsafe { next::__pthread_register_cancel(buf) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn __pthread_unregister_cancel(buf: *mut c_void) {
    match unwinding_thread() {
        Some(t) => pop(&t, buf),
        // SAFETY: the caller's contract.
        None => unsafe { next::__pthread_unregister_cancel(buf) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn __pthread_register_cancel_defer(buf: *mut c_void) {
    match unwinding_thread() {
        // Cancellation is always deferred here: nothing to save.
        Some(t) => push(&t, buf),
        // SAFETY: the caller's contract.
        None => unsafe { next::__pthread_register_cancel_defer(buf) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn __pthread_unregister_cancel_restore(buf: *mut c_void) {
    match unwinding_thread() {
        Some(t) => pop(&t, buf),
        // SAFETY: the caller's contract.
        None => unsafe { next::__pthread_unregister_cancel_restore(buf) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn __pthread_unwind_next(buf: *mut c_void) {
    let Some(t) = unwinding_thread() else {
        // SAFETY: the caller's contract.
        unsafe { next::__pthread_unwind_next(buf) };
        return;
    };
    // SAFETY: as in `pop`.
    let prev = unsafe { ((buf as usize + BUF_PREV) as *const usize).read() };
    unwind_from(t, prev)
}
