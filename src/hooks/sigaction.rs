//! `sigaction`, `signal`, `bsd_signal`, `sysv_signal`, and the jumps out of
//! a handler: `longjmp`, `_longjmp`, `siglongjmp`, `__longjmp_chk`.
//!
//! A signal handler runs on whatever stack the thread was on, often a
//! coroutine's, in the middle of whatever that coroutine was doing. A hook
//! the handler calls must not park: the coroutine would be suspended inside
//! its own handler, with the signal still blocked on the worker for every
//! other coroutine, and a handler may interrupt the coroutine anywhere.
//! So hooks pass straight through in a handler, as they do on a native
//! thread (the blocking call blocks, as natively).
//!
//! To know that a handler runs, corun installs its own trampoline in the
//! kernel for each handler the program sets: the trampoline marks the
//! thread as in a handler (`sched::park::signal_handler_enter`, which makes
//! `in_coroutine()` false), calls the program's handler with the arguments
//! the kernel gave, and clears the mark. Everything else is the program's:
//! its flags (SA_RESTART, SA_SIGINFO, SA_ONSTACK, SA_RESETHAND...) and mask
//! go to the kernel unchanged, and `sigaction`'s old action reports the
//! program's handler, never the trampoline. `signal` and friends go through
//! the real call (glibc's flags for them) and are then re-pointed at the
//! trampoline.
//!
//! A handler that leaves by `longjmp`/`siglongjmp` never returns to the
//! trampoline: the jump functions clear the mark on the way out (a jump
//! that stays inside the handler is not told apart; it is rare, and the
//! only cost is that the rest of that handler may park).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use libc::{sigaction as SigAction, sighandler_t, siginfo_t};

use crate::sched::park::{signal_handler_enter, signal_handler_leave, signal_handler_reset};

mod next {
    use libc::{c_int, c_void, sigaction as SigAction, sighandler_t};
    crate::sys::real::real_fns! {
        fn sigaction(sig: c_int, act: *const SigAction, old: *mut SigAction) -> c_int;
        fn signal(sig: c_int, h: sighandler_t) -> sighandler_t;
        fn bsd_signal(sig: c_int, h: sighandler_t) -> sighandler_t;
        fn sysv_signal(sig: c_int, h: sighandler_t) -> sighandler_t;
        fn longjmp(env: *mut c_void, val: c_int) -> ();
        fn _longjmp(env: *mut c_void, val: c_int) -> ();
        fn siglongjmp(env: *mut c_void, val: c_int) -> ();
        fn __longjmp_chk(env: *mut c_void, val: c_int) -> ();
    }
}

const NSIG: usize = 65;

/// The program's handler for each signal (0: none of ours installed).
static HANDLER: [AtomicUsize; NSIG] = [const { AtomicUsize::new(0) }; NSIG];
/// The program's sa_flags for it (SA_SIGINFO decides the call's shape).
static FLAGS: [AtomicI32; NSIG] = [const { AtomicI32::new(0) }; NSIG];

extern "C" fn trampoline(sig: c_int, info: *mut siginfo_t, ctx: *mut c_void) {
    let i = sig as usize;
    if i >= NSIG {
        return;
    }
    let h = HANDLER[i].load(Ordering::Acquire);
    if h == 0 || h == libc::SIG_IGN || h == libc::SIG_DFL {
        return;
    }
    signal_handler_enter();
    if FLAGS[i].load(Ordering::Acquire) & libc::SA_SIGINFO != 0 {
        // SAFETY: the program installed `h` with SA_SIGINFO, so it takes
        // these three arguments, which the kernel passed us.
        let f: extern "C" fn(c_int, *mut siginfo_t, *mut c_void) =
            unsafe { std::mem::transmute(h) };
        f(sig, info, ctx);
    } else {
        // SAFETY: a plain handler takes the signal number.
        let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(h) };
        f(sig);
    }
    signal_handler_leave();
}

fn is_function(h: usize) -> bool {
    h != libc::SIG_DFL && h != libc::SIG_IGN && h != libc::SIG_ERR
}

#[no_mangle]
pub unsafe extern "C" fn sigaction(
    sig: c_int,
    act: *const SigAction,
    old: *mut SigAction,
) -> c_int {
    let i = sig as usize;
    if sig <= 0 || i >= NSIG {
        // SAFETY: the caller's sigaction contract (the kernel says EINVAL).
        return unsafe { next::sigaction(sig, act, old) };
    }
    let prev = HANDLER[i].load(Ordering::Acquire);
    let r = if act.is_null() {
        // SAFETY: a query; `old` per the contract.
        unsafe { next::sigaction(sig, act, old) }
    } else {
        // SAFETY: readable per the contract.
        let mut a = unsafe { *act };
        if is_function(a.sa_sigaction) {
            HANDLER[i].store(a.sa_sigaction, Ordering::Release);
            FLAGS[i].store(a.sa_flags, Ordering::Release);
            a.sa_sigaction = trampoline as *const () as usize;
        }
        // SAFETY: `a` is the program's action with our trampoline.
        let r = unsafe { next::sigaction(sig, &a, old) };
        if r != 0 {
            HANDLER[i].store(prev, Ordering::Release);
        }
        r
    };
    if r == 0 && !old.is_null() {
        // SAFETY: the kernel just filled it.
        unsafe {
            if (*old).sa_sigaction == trampoline as *const () as usize {
                (*old).sa_sigaction = prev;
            }
        }
    }
    r
}

/// After a `signal`-style call installed `h` with glibc's flags: re-point
/// the kernel at the trampoline, keeping those flags and mask.
fn wrap_installed(sig: c_int, h: sighandler_t, old: sighandler_t) -> sighandler_t {
    let i = sig as usize;
    if old == libc::SIG_ERR || sig <= 0 || i >= NSIG {
        return old;
    }
    let prev = HANDLER[i].load(Ordering::Acquire);
    let old = if old == trampoline as *const () as usize {
        prev
    } else {
        old
    };
    if is_function(h) {
        // SAFETY: a zeroed sigaction is a valid out-buffer.
        let mut cur: SigAction = unsafe { std::mem::zeroed() };
        // SAFETY: query, then install the same action through the trampoline.
        unsafe {
            if next::sigaction(sig, std::ptr::null(), &mut cur) == 0 && cur.sa_sigaction == h {
                HANDLER[i].store(h, Ordering::Release);
                FLAGS[i].store(cur.sa_flags, Ordering::Release);
                cur.sa_sigaction = trampoline as *const () as usize;
                next::sigaction(sig, &cur, std::ptr::null_mut());
            }
        }
    }
    old
}

/// A `signal`-style call: the real one installs with glibc's flags, then
/// the kernel is re-pointed at the trampoline.
fn signal_like(
    sig: c_int,
    h: sighandler_t,
    real_fn: unsafe fn(c_int, sighandler_t) -> sighandler_t,
) -> sighandler_t {
    let saved = crate::sys::errno();
    // SAFETY: plain values.
    let old = unsafe { real_fn(sig, h) };
    let e = crate::sys::errno();
    let r = wrap_installed(sig, h, old);
    crate::sys::set_errno(if old == libc::SIG_ERR { e } else { saved });
    r
}

#[no_mangle]
pub unsafe extern "C" fn signal(sig: c_int, h: sighandler_t) -> sighandler_t {
    signal_like(sig, h, next::signal)
}

#[no_mangle]
pub unsafe extern "C" fn bsd_signal(sig: c_int, h: sighandler_t) -> sighandler_t {
    signal_like(sig, h, next::bsd_signal)
}

#[no_mangle]
pub unsafe extern "C" fn sysv_signal(sig: c_int, h: sighandler_t) -> sighandler_t {
    signal_like(sig, h, next::sysv_signal)
}

macro_rules! jump_out {
    ($name:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(env: *mut c_void, val: c_int) -> ! {
            // Leaving a handler this way never returns to the trampoline.
            signal_handler_reset();
            // SAFETY: the caller's contract; the real function does not return.
            unsafe { next::$name(env, val) };
            // SAFETY: abort has no preconditions (not reached).
            unsafe { libc::abort() }
        }
    };
}

jump_out!(longjmp);
jump_out!(_longjmp);
jump_out!(siglongjmp);
jump_out!(__longjmp_chk);
