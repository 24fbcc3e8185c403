//! Stack overflow detection.
//!
//! Each coroutine stack has a PROT_NONE guard page below it, so running off
//! the end faults. The fault is delivered on the faulting stack unless the
//! handler runs on an alternate signal stack, so every worker thread gets one
//! (`install_altstack`) and the SIGSEGV/SIGBUS handler is installed with
//! SA_ONSTACK. The handler reads which coroutine runs on this thread (a plain
//! thread-local written before every resume) and, when the faulting address
//! is in or just below that coroutine's guard page, prints
//!
//! ```text
//! corun: coroutine 7 overflowed its 262144-byte stack; raise CORUN_STACK_SIZE (e.g. CORUN_STACK_SIZE=512k) or the thread's stack size attribute
//! ```
//!
//! The suggestion is twice the stack that overflowed (`bigger_size`).
//!
//! and aborts. Any other fault is handed back: the previous disposition is
//! restored and the faulting instruction re-executes, so a program's own
//! SIGSEGV handling (or the default core dump) behaves as without corun.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::sys::{fmt_u64, raw_stderr};

/// Frames larger than the guard page skip over it; a fault this far below
/// the guard still counts as an overflow of the coroutine above.
const BELOW_GUARD_SLACK: usize = 256 * 1024;
/// Size of each worker's alternate signal stack.
const ALTSTACK_SIZE: usize = 64 * 1024;

#[derive(Clone, Copy)]
struct Running {
    id: u64,
    guard_lo: usize,
    guard_hi: usize,
    size: usize,
}

std::thread_local! {
    static RUNNING: Cell<Running> = const {
        Cell::new(Running { id: 0, guard_lo: 0, guard_hi: 0, size: 0 })
    };
}

/// Records which coroutine is about to run on this thread.
#[inline]
pub fn set_running(id: u64, guard: (usize, usize), top: usize) {
    RUNNING.set(Running {
        id,
        guard_lo: guard.0,
        guard_hi: guard.1,
        size: top - guard.1,
    });
}

/// Records that no coroutine runs on this thread.
#[inline]
pub fn clear_running() {
    RUNNING.set(Running {
        id: 0,
        guard_lo: 0,
        guard_hi: 0,
        size: 0,
    });
}

static INSTALLED: AtomicBool = AtomicBool::new(false);
static mut OLD_SEGV: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::zeroed();
static mut OLD_BUS: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::zeroed();

/// Gives the calling thread an alternate signal stack (leaked: threads that
/// get one are workers, which live as long as the process).
pub fn install_altstack() {
    // SAFETY: a fresh anonymous mapping, handed to sigaltstack below and
    // never freed, so it outlives every signal delivered to this thread.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            ALTSTACK_SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return;
        }
        let ss = libc::stack_t {
            ss_sp: p,
            ss_flags: 0,
            ss_size: ALTSTACK_SIZE,
        };
        libc::sigaltstack(&ss, std::ptr::null_mut());
    }
}

/// Installs the SIGSEGV/SIGBUS handler once per process.
pub fn install_handler() {
    if INSTALLED.swap(true, Ordering::AcqRel) {
        return;
    }
    // SAFETY: a zeroed sigaction is valid; the handler is an extern "C" fn
    // with the SA_SIGINFO signature; OLD_* are written once here, before any
    // fault can reach the handler that reads them.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut sa.sa_mask);
        crate::sys::real::sigaction(libc::SIGSEGV, &sa, std::ptr::addr_of_mut!(OLD_SEGV).cast());
        crate::sys::real::sigaction(libc::SIGBUS, &sa, std::ptr::addr_of_mut!(OLD_BUS).cast());
    }
}

/// A stack size to suggest after an overflow of a `size`-byte stack:
/// twice as big, rounded up to whole KiB or MiB, as a number and the unit
/// `CORUN_STACK_SIZE` takes. No allocation: called in the signal handler.
fn bigger_size(size: usize) -> (u64, &'static [u8]) {
    let want = (size as u64).saturating_mul(2).max(32 << 10);
    if want >= 1 << 20 {
        (want.div_ceil(1 << 20), b"m")
    } else {
        (want.div_ceil(1 << 10), b"k")
    }
}

extern "C" fn handler(sig: i32, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    let r = RUNNING.get();
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    if r.id != 0 && addr < r.guard_hi && addr + BELOW_GUARD_SLACK >= r.guard_lo {
        let mut a = [0u8; 20];
        let mut b = [0u8; 20];
        raw_stderr(b"corun: coroutine ");
        raw_stderr(fmt_u64(r.id, &mut a));
        raw_stderr(b" overflowed its ");
        raw_stderr(fmt_u64(r.size as u64, &mut b));
        raw_stderr(b"-byte stack; raise CORUN_STACK_SIZE (e.g. CORUN_STACK_SIZE=");
        let (n, unit) = bigger_size(r.size);
        raw_stderr(fmt_u64(n, &mut b));
        raw_stderr(unit);
        raw_stderr(b") or the thread's stack size attribute\n");
        // SAFETY: abort is async-signal-safe and never returns.
        unsafe { libc::abort() };
    }
    // Not ours: restore the previous disposition and return; the faulting
    // instruction runs again and meets it.
    // SAFETY: OLD_* were filled by install_handler before this handler could run.
    unsafe {
        let old = if sig == libc::SIGBUS {
            std::ptr::addr_of!(OLD_BUS)
        } else {
            std::ptr::addr_of!(OLD_SEGV)
        };
        crate::sys::real::sigaction(sig, old.cast(), std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::bigger_size;

    #[test]
    fn suggestion_is_bigger_than_the_stack() {
        assert_eq!(bigger_size(8 << 20), (16, &b"m"[..]));
        assert_eq!(bigger_size(256 << 10), (512, &b"k"[..]));
        assert_eq!(bigger_size(512 << 10), (1, &b"m"[..]));
        assert_eq!(bigger_size(3 << 20), (6, &b"m"[..]));
        assert_eq!(bigger_size(100_000), (196, &b"k"[..]));
    }
}
