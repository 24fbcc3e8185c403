//! A fault handler that waits: run as the faulting coroutine's own code,
//! so that its waits park.
//!
//! A fault (SIGSEGV, SIGILL, SIGTRAP... raised by the coroutine's own
//! instruction) runs its handler in place, in the kernel's signal frame on
//! the coroutine's stack (`sigdeliver::in_place`). Such a handler may have
//! interrupted code holding a lock, so corun's hooks pass straight through
//! there (`park::in_coroutine`): a wait blocks the worker. SBCL runs its
//! garbage collector inside the SIGTRAP (or SIGILL) handler of the trap
//! that ends an allocation sequence, and the collector waits on a
//! semaphore until every other thread has stopped; a thread of the same
//! worker never ran to stop, and every multi-threaded SBCL program that
//! collected hung.
//!
//! When the fault interrupted the coroutine at a point where a preemption
//! could switch away from it (`preempt::interrupted_at_safe_point`: no
//! frame of runtime code, no FILE lock, not in another handler), and the
//! handler runs on the coroutine's own stack (not an alternate signal
//! stack, which is the worker's), the handler runs as one the coroutine
//! runs for itself (`run_deferred`'s): outside the kernel-started count,
//! so its waits park. Before it starts, the thread's kernel mask goes back
//! to the one the fault interrupted (the workers'): the kernel's handler
//! mask (the signal and `sa_mask` blocked) must not reach the coroutines
//! that run on this worker while the handler is parked; the coroutine's
//! own mask blocks them for the handler, as for a deferred one
//! (`sigdeliver::run_as`). A nested fault of the same kind is delivered
//! (natively, with it blocked, the kernel kills the process). The
//! coroutine may resume on another worker: the kernel's `sigreturn` then
//! installs the `uc_stack` it saved, the first worker's alternate stack,
//! on this thread, so it is replaced with this thread's own.

use std::ffi::{c_int, c_void};

use libc::siginfo_t;

use crate::sched::park::{async_signal_enter, async_signal_leave, in_place_enter, in_place_leave};
use crate::sched::{self, Task};

/// Runs `t`'s handler for the fault `sig` so that it may park, and returns
/// true; false (nothing done) when that is not safe here: the caller runs
/// it in place as before. Called by the trampoline with the kernel's `uc`.
pub(super) fn run_parkable(t: &Task, sig: c_int, info: *mut siginfo_t, uc: *mut c_void) -> bool {
    let here = 0u8;
    let on_own_stack = sched::current_stack()
        .is_some_and(|(lo, hi)| (lo..hi).contains(&(&here as *const u8 as usize)));
    if !on_own_stack || !sched::preempt::interrupted_at_safe_point(uc) {
        return false;
    }
    // SAFETY: the kernel's ucontext for this delivery (non-null: the
    // safe-point test read it), ours until the handler returns.
    let before = super::sigdeliver::uc_mask(unsafe { &*(uc as *const libc::ucontext_t) });
    set_thread_mask(before);
    let tid = crate::sys::gettid();
    async_signal_leave();
    in_place_leave();
    super::sigdeliver::in_place(t, sig, info, uc, true);
    in_place_enter();
    async_signal_enter();
    if crate::sys::gettid() != tid {
        // SAFETY: as above.
        own_altstack(unsafe { &mut *(uc as *mut libc::ucontext_t) });
    }
    true
}

/// Sets this thread's kernel signal mask (the kernel's 64 bits).
fn set_thread_mask(m: u64) {
    // SAFETY: rt_sigprocmask with a valid 8-byte set and no old set.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &m as *const u64,
            std::ptr::null_mut::<u64>(),
            8usize,
        )
    };
}

/// Puts this thread's alternate signal stack in `uc`, for `sigreturn` to
/// install (the kernel's own, not the program's view of it).
fn own_altstack(uc: &mut libc::ucontext_t) {
    // SAFETY: a zeroed stack_t is a valid out-buffer.
    let mut ss: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: sigaltstack query into a valid buffer.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sigaltstack,
            std::ptr::null::<libc::stack_t>(),
            &mut ss as *mut libc::stack_t,
        )
    };
    if r == 0 {
        uc.uc_stack = ss;
    }
}
