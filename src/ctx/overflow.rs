//! Stack overflow detection.
//!
//! Each coroutine stack has a PROT_NONE guard page below it, so running off
//! the end faults. The fault is delivered on the faulting stack unless the
//! handler runs on an alternate signal stack, so every worker thread gets one
//! (`install_altstack`) and the SIGSEGV/SIGBUS handler is installed with
//! SA_ONSTACK. The handler reads which coroutine runs on this thread (a plain
//! thread-local written before every resume: the address of the running
//! coroutine's record, which its `Coroutine` holds, one store a switch
//! rather than the record's four words) and, when the faulting address
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
//! SIGSEGV handling (or the default core dump) behaves as without corun; a
//! SIGSEGV or SIGBUS that was sent (`raise`, `kill`) is sent again to the
//! thread, which gets it when the handler returns.
//!
//! The handler is corun's, not the program's: `sigaction` asks
//! `program_action` what to report (SIG_DFL at start, or what the program
//! set), and a program that sets SIG_DFL or SIG_IGN only changes what the
//! handler falls back to (`set_program_action`), so the message stays. A
//! handler of the program's replaces this one in the kernel (Rust's std
//! installs its own overflow report when it finds SIG_DFL, as natively).
//! The alternate stack the kernel uses is the worker's own; the
//! program's threads' alternate stacks are theirs to ask about
//! (`hooks::sigaction::altstack`) and never replace it.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::sys::{fmt_u64, raw_stderr};

/// glibc's `sigaltstack`: the exported name is the hook (per thread).
pub(crate) mod real {
    crate::sys::real::real_fns! {
        fn sigaltstack(ss: *const libc::stack_t, old: *mut libc::stack_t) -> libc::c_int;
    }
}

/// Frames larger than the guard page skip over it; a fault this far below
/// the guard still counts as an overflow of the coroutine above.
const BELOW_GUARD_SLACK: usize = 256 * 1024;
/// Size of each worker's alternate signal stack.
pub const ALTSTACK_SIZE: usize = 64 * 1024;

/// Which coroutine runs on a thread, and its stack's guard page.
#[derive(Clone, Copy)]
pub struct Running {
    id: u64,
    guard_lo: usize,
    guard_hi: usize,
    size: usize,
}

std::thread_local! {
    /// The running coroutine's record, or null.
    static RUNNING: Cell<*const Running> = const { Cell::new(std::ptr::null()) };
}

impl Running {
    /// Coroutine `id`, whose stack has the guard page `guard` and ends at
    /// `top`.
    #[inline]
    pub fn new(id: u64, guard: (usize, usize), top: usize) -> Running {
        Running {
            id,
            guard_lo: guard.0,
            guard_hi: guard.1,
            size: top - guard.1,
        }
    }

    /// No coroutine.
    pub const NONE: Running = Running {
        id: 0,
        guard_lo: 0,
        guard_hi: 0,
        size: 0,
    };
}

/// Records which coroutine is about to run on this thread: `r` (its
/// `Coroutine::overflow_record`) must stay valid while it runs here.
#[inline]
pub fn set_running(r: *const Running) {
    RUNNING.set(r);
}

/// Records that no coroutine runs on this thread.
#[inline]
pub fn clear_running() {
    RUNNING.set(std::ptr::null());
}

/// This thread's record slot, for a scheduler that writes it at every
/// switch without a thread-local lookup each time (valid as long as the
/// thread).
pub fn running_slot() -> *const Cell<*const Running> {
    RUNNING.with(|r| r as *const Cell<*const Running>)
}

static INSTALLED: AtomicBool = AtomicBool::new(false);
static mut OLD_SEGV: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::zeroed();
static mut OLD_BUS: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::zeroed();

/// Gives the calling thread an alternate signal stack (leaked: threads that
/// get one are workers, which live as long as the process).
pub fn install_altstack() {
    map_altstack(ALTSTACK_SIZE);
}

/// Whether the kernel's action `a` is this module's handler.
pub fn is_ours(a: &libc::sigaction) -> bool {
    INSTALLED.load(Ordering::Acquire) && a.sa_sigaction == handler as *const () as usize
}

fn slot(sig: i32) -> Option<*mut libc::sigaction> {
    match sig {
        libc::SIGSEGV => Some(std::ptr::addr_of_mut!(OLD_SEGV).cast()),
        libc::SIGBUS => Some(std::ptr::addr_of_mut!(OLD_BUS).cast()),
        _ => None,
    }
}

/// What the program set for `sig` (SIGSEGV or SIGBUS) while the kernel
/// holds this module's handler: what `sigaction` reports as the old action.
pub fn program_action(sig: i32) -> Option<libc::sigaction> {
    // SAFETY: the slot holds a valid sigaction (zeroed is SIG_DFL) that only
    // `set_program_action` and `install_handler` write.
    slot(sig).map(|p| unsafe { *p })
}

/// The program set SIG_DFL or SIG_IGN for `sig` (SIGSEGV or SIGBUS): the
/// handler stays in the kernel, and falls back to `a` for a fault that is
/// not an overflow. Returns false if `sig` is not one of them or the
/// handler is not installed. (A fault racing with this change may see
/// the old fallback: natively too the change and the fault race.)
pub fn set_program_action(sig: i32, a: &libc::sigaction) -> bool {
    if !INSTALLED.load(Ordering::Acquire) {
        return false;
    }
    let Some(p) = slot(sig) else { return false };
    // SAFETY: see `program_action`; a sigaction is plain data.
    unsafe { *p = *a };
    // SAFETY: a zeroed sigaction is valid; the handler is an extern "C" fn
    // with the SA_SIGINFO signature.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut sa.sa_mask);
        crate::sys::real::sigaction(sig, &sa, std::ptr::null_mut());
    }
    true
}

/// Makes this worker's alternate signal stack at least `min` bytes (a
/// thread asked for one that large: its handlers run on the worker's).
/// Only when the thread does not run on it; the old one is left mapped (it
/// may not be corun's). Returns false if it could not grow.
pub fn ensure_altstack(min: usize) -> bool {
    // SAFETY: a zeroed stack_t is a valid out-buffer; a query.
    let mut cur: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { real::sigaltstack(std::ptr::null(), &mut cur) };
    if cur.ss_flags & libc::SS_DISABLE == 0 && cur.ss_size >= min {
        return true;
    }
    if cur.ss_flags & libc::SS_ONSTACK != 0 {
        return false;
    }
    map_altstack(min.max(ALTSTACK_SIZE))
}

/// Gives the calling thread an alternate signal stack of `size` bytes
/// (leaked: see `install_altstack`).
fn map_altstack(size: usize) -> bool {
    // SAFETY: a fresh anonymous mapping, handed to sigaltstack below and
    // never freed, so it outlives every signal delivered to this thread.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return false;
        }
        let ss = libc::stack_t {
            ss_sp: p,
            ss_flags: 0,
            ss_size: size,
        };
        real::sigaltstack(&ss, std::ptr::null_mut()) == 0
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
    let p = RUNNING.get();
    // SAFETY: a record set for the running coroutine lives in its
    // `Coroutine`, which the scheduler keeps while it runs (`set_running`).
    let r = if p.is_null() {
        Running::NONE
    } else {
        unsafe { *p }
    };
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
    let ignored = unsafe {
        let old = if sig == libc::SIGBUS {
            std::ptr::addr_of!(OLD_BUS)
        } else {
            std::ptr::addr_of!(OLD_SEGV)
        };
        crate::sys::real::sigaction(sig, old.cast(), std::ptr::null_mut());
        (*old).assume_init_ref().sa_sigaction == libc::SIG_IGN
    };
    // SAFETY: as above, a valid siginfo.
    let sent = unsafe { (*info).si_code } <= 0;
    if sent && !ignored {
        // A signal sent (raise, kill), not a fault: nothing runs again to
        // meet the disposition, so it is sent again, to this thread; blocked
        // while this handler runs, it is delivered when it returns. (CPython's
        // faulthandler restores SIG_DFL and raises again to die by it: the
        // process lived on and exited 0.)
        // SAFETY: tgkill to this very thread.
        unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), crate::sys::gettid(), sig) };
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
