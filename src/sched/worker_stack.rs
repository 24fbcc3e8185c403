//! The bounds of each worker thread's own stack, where the scheduler runs.
//!
//! The signal trampoline (`hooks/sigdeliver.rs`) runs a handler in place
//! only where the interrupted code is the coroutine's: a signal that lands
//! while the scheduler runs (or switches stacks) for the coroutine is made
//! pending instead, since a handler leaving by `longjmp` must land on the
//! coroutine's stack, not the scheduler's. The coroutine's code does not
//! only run on the stack corun gave it: a program's own fibers (Ruby's,
//! Boost.Context's, `swapcontext` onto a stack it mapped) run it on stacks
//! the program made. The kernel runs a handler there natively; corun made
//! the signal pending, and where nothing looked for it again (the process's
//! only coroutine, whose calls block in the kernel, as in a child forked
//! from a Ruby fiber) the handler never ran: Ruby's SIGCHLD handler, which
//! writes the wake-up pipe its `waitpid` polls, and the wait never ended.
//!
//! So the trampoline needs to tell "a stack the program switched to" from
//! "the scheduler's stack": this module keeps, per worker, the range of
//! the worker thread's stack (glibc's `pthread_getattr_np`, taken once in
//! normal context when the thread starts driving the worker); the
//! alternate signal stack is told by the kernel's ucontext.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::config::MAX_WORKERS;

mod real {
    use libc::{c_int, pthread_attr_t, pthread_t};
    crate::sys::real::real_fns! {
        fn pthread_getattr_np(t: pthread_t, attr: *mut pthread_attr_t) -> c_int;
    }
}

/// Worker `i`'s thread stack: `LO[i] .. HI[i]` (HI 0: not known).
static LO: [AtomicUsize; MAX_WORKERS] = [const { AtomicUsize::new(0) }; MAX_WORKERS];
static HI: [AtomicUsize; MAX_WORKERS] = [const { AtomicUsize::new(0) }; MAX_WORKERS];

/// Records the stack of the calling thread, which drives worker `index`.
pub(super) fn note(index: usize) {
    let Some((lo, hi)) = this_thread_stack() else {
        return;
    };
    LO[index].store(lo, Ordering::SeqCst);
    HI[index].store(hi, Ordering::SeqCst);
}

fn this_thread_stack() -> Option<(usize, usize)> {
    initial_thread_stack().or_else(described_stack)
}

/// The process's initial stack, if this thread runs on it (worker 0 in
/// the process's first thread): up to where the program started
/// (`__libc_stack_end`, the stack pointer at `_start`; every frame of the
/// scheduler lies below it), and 8 MiB down (the scheduler's frames are
/// shallow). Nothing else is mapped there: the kernel puts the mmap area
/// at least 128 MiB below the stack's top whatever the stack limit
/// (`mmap_base`'s gap), so no limit needs reading. glibc's
/// `pthread_getattr_np` reads /proc/self/maps for the initial thread (25
/// us here, at the start of every process).
fn initial_thread_stack() -> Option<(usize, usize)> {
    extern "C" {
        static __libc_stack_end: *mut libc::c_void;
    }
    const DEPTH: usize = 8 << 20;
    // SAFETY: ld.so's variable, written before any code of ours ran.
    let hi = unsafe { __libc_stack_end } as usize;
    let lo = hi.checked_sub(DEPTH)?;
    let marker = 0u8;
    let here = std::hint::black_box(&marker) as *const u8 as usize;
    (lo <= here && here < hi).then_some((lo, hi))
}

/// The stack glibc describes for this thread.
fn described_stack() -> Option<(usize, usize)> {
    // SAFETY: a zeroed attr is the out-buffer pthread_getattr_np fills; it
    // is destroyed after the read.
    unsafe {
        let mut a: libc::pthread_attr_t = std::mem::zeroed();
        if real::pthread_getattr_np(libc::pthread_self(), &mut a) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let r = libc::pthread_attr_getstack(&a, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut a);
        (r == 0 && size != 0).then(|| (addr as usize, addr as usize + size))
    }
}

/// Whether `sp` lies outside worker `index`'s own thread stack, which is
/// known. Async-signal-safe.
pub fn is_off(index: usize, sp: usize) -> bool {
    let hi = HI[index].load(Ordering::Relaxed);
    let lo = LO[index].load(Ordering::Relaxed);
    hi != 0 && sp != 0 && !(lo <= sp && sp < hi)
}
