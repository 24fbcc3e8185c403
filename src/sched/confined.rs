//! A process that confined itself with a seccomp filter
//! (docs/ARCHITECTURE.md §5.9): from then on corun makes only the system
//! calls the program asks for.
//!
//! A filter decides system call by system call, and it was written for
//! the program's own calls: sshd's sandbox allows `write` on a socket but
//! not the `sendmsg` a parking `write` would make, nor `epoll_wait`, nor
//! `preadv2`. So once a filter is installed (`hooks::process::seccomp`
//! calls `enter`), the whole process runs as without corun: every hook
//! passes through (`in_coroutine` is false), `pthread_create` makes a
//! kernel thread, masks and handlers are the kernel's. The coroutine that
//! installed the filter simply keeps running on its worker, which it never
//! gives back (a blocking call now blocks the worker, as it blocks the
//! thread natively). Coroutines parked elsewhere at that moment still run
//! on their own workers, now as passthroughs too.
//!
//! No thread of corun's may keep the process alive once the program's own
//! threads are gone (a filter's "kill thread" action ends only the thread
//! that broke the rule: natively the process then ends with it): the
//! blocking pool's idle helpers leave at once, busy ones after their job,
//! the watchdog at its next look. Idle workers are not stopped.
//!
//! One flag for the process, set once and never cleared (a filter cannot
//! be removed); a forked child inherits it with the filter.

use std::sync::atomic::{AtomicBool, Ordering};

static CONFINED: AtomicBool = AtomicBool::new(false);

/// Whether the process installed a seccomp filter.
#[inline]
pub fn is() -> bool {
    CONFINED.load(Ordering::Relaxed)
}

/// The process is about to install a seccomp filter: corun stands aside.
/// The calling thread's kernel mask becomes the running coroutine's, as
/// signals are now the kernel's business.
pub fn enter() {
    if CONFINED.swap(true, Ordering::SeqCst) {
        return;
    }
    if let Some(t) = super::park::current() {
        super::sigmask::set_thread_mask(t.ident.sigmask.load(Ordering::SeqCst));
    }
    super::blocking::retire_all();
}
