//! A fault handler that waits: run as the faulting coroutine's own code
//! from its first wait on, so that the wait parks.
//!
//! A fault (SIGSEGV, SIGILL, SIGTRAP... raised by the coroutine's own
//! instruction) runs its handler in place, in the kernel's signal frame on
//! the coroutine's stack (`hooks/sigdeliver.rs`). Such a handler may have
//! interrupted code holding a lock, so corun's hooks pass straight through
//! there (`park::in_coroutine`): a wait blocks the worker. SBCL runs its
//! garbage collector inside the SIGTRAP (or SIGILL) handler of the trap
//! that ends an allocation sequence, and the collector waits on a
//! semaphore until every other thread has stopped; a thread of the same
//! worker never ran to stop, and every multi-threaded SBCL program that
//! collected hung.
//!
//! So the trampoline notes a fault handler it runs on the coroutine's own
//! stack as a candidate (`run`), and the first hook the handler calls that
//! asks whether it may park (`park::in_coroutine`) looks once whether the
//! fault interrupted the coroutine where a preemption could switch away
//! from it (`preempt::fault_at_safe_point`: no frame of runtime code, no
//! FILE lock). If so, the handler becomes the coroutine's own code, as a
//! handler it runs for a pending signal is (`converted`): out of the
//! kernel-started count, and the thread's kernel mask back to the one the
//! fault interrupted (the workers'), since the kernel's handler mask (the
//! signal and `sa_mask` blocked) must not reach the coroutines that run on
//! this worker while the handler is parked; the coroutine's own mask
//! blocks them for the handler (`sigdeliver::run_as`). A nested fault of
//! the same signal is then delivered (natively, with it blocked, the
//! kernel kills the process). The coroutine may resume on another worker:
//! the kernel's `sigreturn` would install the `uc_stack` it saved, the
//! first worker's alternate stack, on this thread, so it is replaced with
//! this thread's own. A handler that never asks costs the trampoline two
//! thread-local writes.

use std::cell::Cell;
use std::ffi::c_void;

use super::park::{
    async_signal_depth, async_signal_enter, async_signal_leave, in_place_enter, in_place_leave,
};

/// The fault handler the trampoline runs, as its frame knows it.
struct Candidate {
    /// The kernel's ucontext for the fault.
    uc: *mut c_void,
    /// The thread's kernel mask the fault interrupted.
    kernel_mask: u64,
    /// The coroutine it interrupted.
    task: u64,
    /// This thread, when the handler started.
    tid: i32,
    /// Made the coroutine's own code (`convert`).
    converted: bool,
}

std::thread_local! {
    /// The innermost fault handler of this thread not yet looked at by a
    /// hook (null: none, or looked at already).
    static CANDIDATE: Cell<*mut Candidate> = const { Cell::new(std::ptr::null_mut()) };
}

/// Runs `handler` (the in-place delivery of a fault for the running
/// coroutine, on its own stack) so that its waits may park; `uc`: the
/// kernel's ucontext. Called by the trampoline.
pub fn run(uc: *mut c_void, handler: impl FnOnce()) {
    let here = 0u8;
    let on_own_stack = super::park::current_stack()
        .is_some_and(|(lo, hi)| (lo..hi).contains(&(&here as *const u8 as usize)));
    let task = super::park::current().map(|t| t.id);
    let (Some(task), true, false) = (task, on_own_stack, uc.is_null()) else {
        handler();
        return;
    };
    // SAFETY: the kernel's ucontext for this delivery (checked non-null).
    let kernel_mask = ucontext_mask(unsafe { &*(uc as *const libc::ucontext_t) });
    let mut c = Candidate {
        uc,
        kernel_mask,
        task,
        tid: crate::sys::gettid(),
        converted: false,
    };
    let outer = CANDIDATE.replace(&mut c);
    handler();
    if c.converted {
        in_place_enter();
        async_signal_enter();
        if crate::sys::gettid() != c.tid {
            // SAFETY: as above; ours until the handler returns.
            own_altstack(unsafe { &mut *(uc as *mut libc::ucontext_t) });
        }
    } else {
        CANDIDATE.set(outer);
    }
}

/// Whether the fault handler that runs here (the kernel started it; no
/// other handler inside it) was made the coroutine's own code, now or
/// before: called by `park::in_coroutine` in a handler the kernel started.
#[cold]
pub fn convert() -> bool {
    let p = CANDIDATE.get();
    if p.is_null() || async_signal_depth() != 1 || !super::handler_depth::in_place_delivery() {
        return false;
    }
    // SAFETY: a candidate is registered by `run`, whose frame holds it
    // until the handler returns; the handler runs (depth 1).
    let c = unsafe { &mut *p };
    if super::park::current().map(|t| t.id) != Some(c.task) {
        return false;
    }
    // Looked at once: a handler at no safe point stays the kernel's.
    CANDIDATE.set(std::ptr::null_mut());
    if !super::preempt::fault_at_safe_point(c.uc) {
        return false;
    }
    super::sigmask::set_thread_mask(c.kernel_mask);
    async_signal_leave();
    in_place_leave();
    c.converted = true;
    true
}

/// The kernel's 64 bits of a ucontext's mask.
fn ucontext_mask(uc: &libc::ucontext_t) -> u64 {
    // SAFETY: sigset_t is at least 8 bytes; the first 8 are the kernel's.
    unsafe { *(&uc.uc_sigmask as *const libc::sigset_t as *const u64) }
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
