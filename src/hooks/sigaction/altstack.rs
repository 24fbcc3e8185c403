//! `sigaltstack`: each thread's own alternate signal stack.
//!
//! The kernel keeps one alternate stack per kernel thread, and a worker's
//! is corun's (`ctx::overflow`: where its stack-overflow message is
//! printed from). A coroutine that set its own there would change it for
//! every coroutine of the worker, and one that then freed it (every Rust
//! thread does at its end) left the worker's handlers a stack that no
//! longer exists: the next overflow, anywhere on that worker, died without
//! a message. So in a coroutine `sigaltstack` is the thread's own, kept in
//! its identity (`SignalState::alt_*`), and answered as the kernel
//! answers: SS_DISABLE with no stack at first and after SS_DISABLE,
//! EPERM while running on it, EINVAL for a bad mode, ENOMEM below
//! MINSIGSTKSZ. While a handler with SA_ONSTACK runs in a thread that has
//! one (`sigdeliver` counts it, a long jump out clears it), the thread is
//! on it: SS_ONSTACK, and EPERM for a change. The handler itself runs on
//! the worker's alternate stack (when the kernel started it) or on the
//! coroutine's (a signal made pending and run when the thread resumes),
//! not on the thread's memory; the worker's grows to the largest size a
//! thread set. Outside coroutines and in a process confined by seccomp,
//! the call is the kernel's.

use std::ffi::c_int;
use std::sync::atomic::Ordering;

use libc::stack_t;

use crate::ctx::overflow;
use crate::sys::set_errno;

/// linux/signal.h's SS_AUTODISARM (not in the libc crate).
const SS_AUTODISARM: c_int = 1 << 31;

#[no_mangle]
pub unsafe extern "C" fn sigaltstack(ss: *const stack_t, old: *mut stack_t) -> c_int {
    let t = match crate::sched::current() {
        Some(t) if !crate::sched::confined::is() => t,
        // SAFETY: the caller's sigaltstack contract.
        _ => return unsafe { overflow::real::sigaltstack(ss, old) },
    };
    let s = &t.ident.sig;
    let size = s.alt_size.load(Ordering::Relaxed);
    let on = size != 0 && s.alt_on.load(Ordering::Relaxed) != 0;
    // SAFETY: readable per the contract.
    if let Some(new) = unsafe { ss.as_ref() } {
        if on {
            set_errno(libc::EPERM);
            return -1;
        }
        let mode = new.ss_flags & !SS_AUTODISARM;
        if mode != 0 && mode != libc::SS_DISABLE && mode != libc::SS_ONSTACK {
            set_errno(libc::EINVAL);
            return -1;
        }
        if mode != libc::SS_DISABLE && new.ss_size < libc::MINSIGSTKSZ {
            set_errno(libc::ENOMEM);
            return -1;
        }
    }
    if !old.is_null() {
        let (sp, flags) = (
            s.alt_sp.load(Ordering::Relaxed),
            s.alt_flags.load(Ordering::Relaxed) as c_int,
        );
        let o = if size == 0 {
            stack_t {
                ss_sp: std::ptr::null_mut(),
                ss_flags: libc::SS_DISABLE,
                ss_size: 0,
            }
        } else {
            stack_t {
                ss_sp: sp as *mut libc::c_void,
                ss_flags: flags | if on { libc::SS_ONSTACK } else { 0 },
                ss_size: size,
            }
        };
        // SAFETY: writable per the contract.
        unsafe { *old = o };
    }
    // SAFETY: readable per the contract (checked above).
    if let Some(new) = unsafe { ss.as_ref() } {
        if new.ss_flags & !SS_AUTODISARM == libc::SS_DISABLE {
            s.alt_size.store(0, Ordering::Relaxed);
            s.alt_sp.store(0, Ordering::Relaxed);
            s.alt_flags.store(0, Ordering::Relaxed);
        } else {
            // Its handlers run on the worker's stack: at least as large.
            overflow::ensure_altstack(new.ss_size);
            s.alt_sp.store(new.ss_sp as usize, Ordering::Relaxed);
            s.alt_size.store(new.ss_size, Ordering::Relaxed);
            s.alt_flags
                .store((new.ss_flags & SS_AUTODISARM) as u32, Ordering::Relaxed);
        }
    }
    0
}
