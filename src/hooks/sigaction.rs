//! `sigaction`, `signal`, `bsd_signal`, `sysv_signal`, and the jumps out of
//! a handler: `longjmp`, `_longjmp`, `siglongjmp`, `__longjmp_chk`.
//!
//! corun installs its own trampoline (`sigdeliver.rs`) in the kernel for
//! each handler the program sets: it decides which coroutine takes the
//! signal and runs the program's handler there, marking the thread as in a
//! handler (hooks pass straight through inside one: a handler must not
//! park the coroutine it interrupted). The program's handler, flags and
//! mask are kept in `sigdeliver`'s tables; its flags and mask go to the
//! kernel unchanged, plus SA_SIGINFO (the trampoline needs the sender's
//! siginfo; the program's handler is still called the way its own flags
//! say). `sigaction`'s old action reports the program's handler and
//! flags, never the trampoline, nor corun's own SIGSEGV/SIGBUS handler
//! (`ctx::overflow`: SIG_DFL at start; SIG_DFL and SIG_IGN set for them
//! keep it in the kernel, as its fallback). `signal` and friends go
//! through the real call (glibc's flags for them) and are then re-pointed
//! at the trampoline.
//!
//! A handler that leaves by `longjmp`/`siglongjmp` never returns to the
//! trampoline: the jump functions clear the marks on the way out, and put
//! the coroutine's mask back as the jump would natively (`before_jump`); a
//! jump that stays inside the handler is not told apart (it is rare, and
//! the only cost is that the rest of that handler may park).

use std::ffi::{c_int, c_void};

pub mod altstack;
pub mod sigsetjmp;
use std::sync::atomic::Ordering;

use libc::{sigaction as SigAction, sighandler_t};

use super::sigdeliver::{is_function, trampoline, FLAGS, HANDLER, MASK, NSIG};
use crate::sched::park::signal_handler_reset;
use crate::sched::pool_kick;
use crate::sched::{sigmask, signals};

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
    if super::sigpreempt::owns(sig) {
        // corun's preemption signal: the kernel keeps the trampoline.
        // SAFETY: the caller's contract.
        return unsafe { super::sigpreempt::sigaction(act, old) };
    }
    if sig == libc::SIGSEGV || sig == libc::SIGBUS {
        // SAFETY: the caller's contract.
        if let Some(r) = unsafe { fault_signal(sig, act, old) } {
            return r;
        }
    }
    // Held to the end: corun installs its own action for that signal under
    // the same lock (`pool_kick::available`).
    let _kick_lock = (sig == pool_kick::SIGNAL).then(pool_kick::guard);
    if !act.is_null() && sig == pool_kick::SIGNAL {
        // SAFETY: readable per the contract.
        pool_kick::program_sets(unsafe { (*act).sa_sigaction });
    }
    let prev = HANDLER[i].load(Ordering::Acquire);
    let prev_flags = FLAGS[i].load(Ordering::Acquire);
    let r = if act.is_null() {
        // SAFETY: a query; `old` per the contract.
        unsafe { next::sigaction(sig, act, old) }
    } else {
        // SAFETY: readable per the contract.
        let mut a = unsafe { *act };
        let function = is_function(a.sa_sigaction);
        if function {
            HANDLER[i].store(a.sa_sigaction, Ordering::Release);
            FLAGS[i].store(a.sa_flags, Ordering::Release);
            MASK[i].store(first_word(&a.sa_mask), Ordering::Release);
            a.sa_sigaction = trampoline as *const () as usize;
            // The trampoline needs the siginfo (without SA_SIGINFO the
            // kernel leaves it unwritten); the program's handler is called
            // the way its own flags say.
            a.sa_flags |= libc::SA_SIGINFO;
        }
        if sig == pool_kick::SIGNAL && a.sa_sigaction == libc::SIG_DFL {
            // corun's action, if installed, stays: it acts as SIG_DFL.
            a = pool_kick::default_action().unwrap_or(a);
        }
        // SAFETY: `a` is the program's action with our trampoline.
        let r = unsafe { next::sigaction(sig, &a, old) };
        if r != 0 {
            HANDLER[i].store(prev, Ordering::Release);
        } else if !function {
            // SIG_DFL or SIG_IGN: no handler of the program's any more.
            HANDLER[i].store(0, Ordering::Release);
        }
        r
    };
    if r == 0 && !old.is_null() {
        // SAFETY: the kernel just filled it.
        unsafe { *old = program_view(sig, *old, prev, prev_flags) };
    }
    r
}

/// What the program set, given the kernel's action `k` for `sig` and the
/// program's handler and flags recorded before the call: never corun's
/// trampoline nor its overflow handler.
fn program_view(sig: c_int, k: SigAction, prev: usize, prev_flags: c_int) -> SigAction {
    let mut k = k;
    if pool_kick::is_ours(k.sa_sigaction) {
        // corun's kick for its helper threads: the program set nothing.
        // SAFETY: a zeroed sigaction is SIG_DFL with no flags.
        return unsafe { std::mem::zeroed() };
    }
    if crate::ctx::overflow::is_ours(&k) {
        // (Which may be the trampoline: a handler set before corun started.)
        k = crate::ctx::overflow::program_action(sig).unwrap_or(k);
    }
    if k.sa_sigaction == trampoline as *const () as usize {
        k.sa_sigaction = prev;
        k.sa_flags = (k.sa_flags & !libc::SA_SIGINFO) | (prev_flags & libc::SA_SIGINFO);
    }
    k
}

/// SIGSEGV and SIGBUS, where corun's overflow handler may hold the
/// kernel's action (`ctx::overflow`): a query reports the program's own
/// action, and SIG_DFL or SIG_IGN become what that handler falls back to,
/// so corun's overflow message stays. None: the general path (a handler
/// of the program's, or no overflow handler).
///
/// # Safety
/// The caller's sigaction contract.
unsafe fn fault_signal(sig: c_int, act: *const SigAction, old: *mut SigAction) -> Option<c_int> {
    let i = sig as usize;
    // SAFETY: readable per the contract.
    let a = unsafe { act.as_ref() };
    if a.is_some_and(|a| is_function(a.sa_sigaction)) {
        return None;
    }
    // SAFETY: a zeroed sigaction is a valid out-buffer; a query.
    let mut cur: SigAction = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { next::sigaction(sig, std::ptr::null(), &mut cur) } != 0 {
        return None;
    }
    let view = program_view(
        sig,
        cur,
        HANDLER[i].load(Ordering::Acquire),
        FLAGS[i].load(Ordering::Acquire),
    );
    match a {
        None if !crate::ctx::overflow::is_ours(&cur) => return None,
        None => {}
        Some(a) => {
            if !crate::ctx::overflow::set_program_action(sig, a) {
                return None;
            }
            HANDLER[i].store(0, Ordering::Release);
        }
    }
    if !old.is_null() {
        // SAFETY: writable per the contract.
        unsafe { *old = view };
    }
    Some(0)
}

/// The kernel's 64 bits of a sigset_t.
fn first_word(set: &libc::sigset_t) -> u64 {
    // SAFETY: a sigset_t is at least 8 bytes.
    unsafe { *(set as *const libc::sigset_t as *const u64) }
}

/// After a `signal`-style call installed `h` with glibc's flags: re-point
/// the kernel at the trampoline, keeping those flags and mask.
fn wrap_installed(sig: c_int, h: sighandler_t, old: sighandler_t) -> sighandler_t {
    let i = sig as usize;
    if old == libc::SIG_ERR || sig <= 0 || i >= NSIG {
        return old;
    }
    let prev = HANDLER[i].load(Ordering::Acquire);
    // SAFETY: a zeroed sigaction is a valid value.
    let mut k: SigAction = unsafe { std::mem::zeroed() };
    k.sa_sigaction = old;
    let old = program_view(sig, k, prev, 0).sa_sigaction;
    if !is_function(h) {
        HANDLER[i].store(0, Ordering::Release);
    } else {
        // SAFETY: a zeroed sigaction is a valid out-buffer.
        let mut cur: SigAction = unsafe { std::mem::zeroed() };
        // SAFETY: query, then install the same action through the trampoline.
        unsafe {
            if next::sigaction(sig, std::ptr::null(), &mut cur) == 0 && cur.sa_sigaction == h {
                HANDLER[i].store(h, Ordering::Release);
                FLAGS[i].store(cur.sa_flags, Ordering::Release);
                MASK[i].store(first_word(&cur.sa_mask), Ordering::Release);
                cur.sa_sigaction = trampoline as *const () as usize;
                cur.sa_flags |= libc::SA_SIGINFO;
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
    if super::sigpreempt::owns(sig) {
        return super::sigpreempt::signal(h);
    }
    if (sig == libc::SIGSEGV || sig == libc::SIGBUS) && !is_function(h) {
        // SAFETY: zeroed sigactions are valid; ours, readable and writable.
        let (mut a, mut o): (SigAction, SigAction) = unsafe { std::mem::zeroed() };
        a.sa_sigaction = h;
        // SAFETY: as above.
        if unsafe { fault_signal(sig, &a, &mut o) } == Some(0) {
            return o.sa_sigaction;
        }
    }
    if sig == pool_kick::SIGNAL && h == libc::SIG_DFL {
        // As `sigaction` (which keeps corun's action in the kernel).
        // SAFETY: zeroed sigactions are valid (SIG_DFL); ours.
        let (a, mut o): (SigAction, SigAction) = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { sigaction(sig, &a, &mut o) } != 0 {
            return libc::SIG_ERR;
        }
        return o.sa_sigaction;
    }
    let _kick_lock = (sig == pool_kick::SIGNAL).then(pool_kick::guard);
    if sig == pool_kick::SIGNAL {
        pool_kick::program_sets(h);
    }
    let saved = crate::sys::errno();
    // SAFETY: plain values.
    let mut old = unsafe { real_fn(sig, h) };
    if pool_kick::is_ours(old) {
        old = libc::SIG_DFL;
    }
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

/// Where glibc's `jmp_buf` keeps "mask saved" and the saved mask.
#[cfg(target_arch = "x86_64")]
const JB_MASK_WAS_SAVED: usize = 64;
#[cfg(target_arch = "aarch64")]
const JB_MASK_WAS_SAVED: usize = 176;
const JB_SAVED_MASK: usize = sigsetjmp::JB_SAVED_MASK;

/// Before a long jump. When the jump restores a mask (`sigsetjmp(env,
/// 1)`; the mask glibc saved in `env` is the worker's kernel mask, not the
/// coroutine's), the coroutine's mask becomes the one `__sigsetjmp` stored
/// beside it (`sigaction/sigsetjmp.rs`), as natively: a signal that
/// unblocks is delivered before the jump; leaving a handler, the mask
/// before the outermost handler if none was stored. Leaving a handler
/// without a mask restored, the handler's mask stays, as natively. Either
/// way the worker's kernel mask must be the workers' mask after the jump:
/// it goes into `env` for glibc to restore, or is set here.
///
/// # Safety
/// `env` is a `jmp_buf` the program filled with setjmp/sigsetjmp.
unsafe fn before_jump(env: *mut c_void, restores_mask: bool) {
    signal_handler_reset();
    let Some(t) = crate::sched::current() else {
        return;
    };
    let s = &t.ident.sig;
    s.armed.store(0, Ordering::Relaxed);
    s.alt_on.store(0, Ordering::Relaxed);
    let leaving = s.depth.swap(0, Ordering::Relaxed) > 0;
    // SAFETY: per the contract, `env` is a glibc jmp_buf.
    let saved = restores_mask
        && !env.is_null()
        && unsafe { *((env as *const u8).add(JB_MASK_WAS_SAVED) as *const c_int) } != 0;
    // SAFETY: as above; with a mask saved, a sigjmp_buf.
    let stored = if saved {
        unsafe { sigsetjmp::stored(env as *const u8) }
    } else {
        None
    };
    if leaving {
        let m = if saved {
            stored.unwrap_or_else(|| s.outer_mask.load(Ordering::Relaxed))
        } else {
            t.ident.sigmask.load(Ordering::SeqCst)
        };
        signals::set_mask(&t, m);
    } else if let Some(m) = stored.filter(|_| !crate::sched::confined::is()) {
        // As sigprocmask(SIG_SETMASK): what it unblocks runs now.
        let _ = crate::hooks::sigmask::change(&t, libc::SIG_SETMASK, Some(m));
    }
    if saved {
        // SAFETY: as above; the saved mask's first word is the kernel's.
        unsafe {
            *((env as *mut u8).add(JB_SAVED_MASK) as *mut u64) = sigmask::kernel_mask();
        }
    } else if leaving {
        sigmask::set_thread_mask(sigmask::kernel_mask());
    }
}

macro_rules! jump_out {
    ($name:ident, $restores:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(env: *mut c_void, val: c_int) -> ! {
            // Leaving a handler this way never returns to the trampoline.
            // SAFETY: the caller's jmp_buf.
            unsafe { before_jump(env, $restores) };
            // SAFETY: the caller's contract; the real function does not return.
            unsafe { next::$name(env, val) };
            // SAFETY: abort has no preconditions (not reached).
            unsafe { libc::abort() }
        }
    };
}

jump_out!(longjmp, true);
jump_out!(_longjmp, false);
jump_out!(siglongjmp, true);
jump_out!(__longjmp_chk, true);
