//! The signal calls a program makes through `syscall(2)`: what their libc
//! names do (`hooks::sigmask`, `hooks::signal`, `hooks::sigaction`), so
//! they see and change the calling thread's own signal state, not its
//! worker's. A coroutine's pending signals and mask live in its identity:
//! raw `rt_sigpending` missed a signal sent to the thread, raw
//! `rt_sigtimedwait` never took it, and raw `rt_sigsuspend` slept in the
//! kernel, where the signal for the thread never came (it waited for
//! ever). `rt_sigaction` goes to the `sigaction` hook from any caller, so
//! the handler gets corun's trampoline as one set with `sigaction` does.
//!
//! The kernel's sets are 8 bytes (`sigsetsize` must say so; the hooks read
//! and write only a set's first 8 bytes), its `struct sigaction` is
//! handler, flags, restorer, mask.

use std::ffi::{c_int, c_long, c_ulong, c_void};

use crate::sys::set_errno;

/// The numbers this file takes.
pub(super) const NUMBERS: [c_long; 5] = [
    libc::SYS_rt_sigpending,
    libc::SYS_rt_sigtimedwait,
    libc::SYS_rt_sigsuspend,
    libc::SYS_sigaltstack,
    libc::SYS_rt_sigaction,
];

/// The kernel's `struct sigaction` on x86_64.
#[repr(C)]
struct KSigAction {
    handler: usize,
    flags: c_ulong,
    restorer: usize,
    mask: u64,
}

fn einval() -> Option<c_long> {
    set_errno(libc::EINVAL);
    Some(-1)
}

/// A zeroed sigset_t whose first word is `*p` (8 bytes the caller gave).
///
/// # Safety
/// `p` is readable for 8 bytes.
unsafe fn full_set(p: *const u64) -> libc::sigset_t {
    // SAFETY: all-zero is a valid sigset_t.
    let mut s: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: readable per the contract; a sigset_t holds at least 8 bytes.
    unsafe { *(&mut s as *mut libc::sigset_t as *mut u64) = *p };
    s
}

/// The set a system call's `p` and `size` give, as the kernel takes it:
/// EINVAL for any size but 8, EFAULT for NULL.
fn set_arg(p: c_long, size: c_long) -> Result<libc::sigset_t, Option<c_long>> {
    if size != 8 {
        return Err(einval());
    }
    if p == 0 {
        set_errno(libc::EFAULT);
        return Err(Some(-1));
    }
    // SAFETY: the caller's 8-byte set, as the kernel reads it.
    Ok(unsafe { full_set(p as *const u64) })
}

/// The call `n` with arguments `a` made as its libc name, or None: the
/// kernel's (a native thread, runtime code, a process under seccomp).
pub(super) fn call(n: c_long, a: [c_long; 4]) -> Option<c_long> {
    if n == libc::SYS_rt_sigaction {
        return rt_sigaction(
            a[0] as c_int,
            a[1] as *const KSigAction,
            a[2] as *mut KSigAction,
            a[3],
        );
    }
    crate::sched::current()?;
    if crate::sched::confined::is() {
        return None;
    }
    let r = match n {
        libc::SYS_rt_sigpending => {
            let size = a[1] as usize;
            if size > 8 {
                return einval();
            }
            // SAFETY: all-zero is a valid sigset_t.
            let mut s: libc::sigset_t = unsafe { std::mem::zeroed() };
            // SAFETY: a local set.
            let r = unsafe { crate::hooks::sigmask::sigpending(&mut s) };
            if r == 0 && size > 0 {
                // SAFETY: the caller's buffer, `size` writable bytes (as
                // the kernel copies them; a bad pointer faults here).
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        &s as *const libc::sigset_t as *const u8,
                        a[0] as *mut u8,
                        size,
                    )
                };
            }
            r
        }
        libc::SYS_rt_sigtimedwait => {
            let set = match set_arg(a[0], a[3]) {
                Ok(s) => s,
                Err(r) => return r,
            };
            // SAFETY: the caller's siginfo and timeout, NULL or as the
            // kernel takes them.
            unsafe {
                crate::hooks::signal::sigtimedwait(
                    &set,
                    a[1] as *mut libc::siginfo_t,
                    a[2] as *const libc::timespec,
                )
            }
        }
        libc::SYS_rt_sigsuspend => {
            let set = match set_arg(a[0], a[1]) {
                Ok(s) => s,
                Err(r) => return r,
            };
            // SAFETY: a local set.
            unsafe { crate::hooks::signal::sigsuspend(&set) }
        }
        libc::SYS_sigaltstack => {
            // SAFETY: the caller's stack_t pointers, NULL or as the kernel
            // takes them (the same struct).
            unsafe {
                crate::hooks::sigaction::altstack::sigaltstack(
                    a[0] as *const libc::stack_t,
                    a[1] as *mut libc::stack_t,
                )
            }
        }
        _ => return None,
    };
    Some(r as c_long)
}

/// Raw `rt_sigaction`: the `sigaction` hook with the kernel's struct
/// converted both ways.
fn rt_sigaction(
    sig: c_int,
    act: *const KSigAction,
    old: *mut KSigAction,
    size: c_long,
) -> Option<c_long> {
    if size != 8 {
        return einval();
    }
    // SAFETY: all-zero is a valid libc sigaction.
    let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: likewise.
    let mut prev: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: the caller's struct, NULL or readable as the kernel reads it.
    let given = unsafe { act.as_ref() };
    if let Some(k) = given {
        new.sa_sigaction = k.handler;
        new.sa_flags = k.flags as c_int;
        // SAFETY: a restorer is a function address or 0 (None).
        new.sa_restorer =
            unsafe { std::mem::transmute::<usize, Option<extern "C" fn()>>(k.restorer) };
        // SAFETY: a local u64, 8 readable bytes.
        new.sa_mask = unsafe { full_set(&k.mask) };
    }
    let newp = if given.is_some() {
        &new as *const libc::sigaction
    } else {
        std::ptr::null()
    };
    let oldp = if old.is_null() {
        std::ptr::null_mut()
    } else {
        &mut prev as *mut libc::sigaction
    };
    // SAFETY: local structs or NULL.
    let r = unsafe { crate::hooks::sigaction::sigaction(sig, newp, oldp) };
    if r == 0 && !old.is_null() {
        let restorer = prev.sa_restorer.map_or(0, |f| f as *const c_void as usize);
        // SAFETY: the caller's struct, writable as the kernel writes it.
        unsafe {
            *old = KSigAction {
                handler: prev.sa_sigaction,
                flags: prev.sa_flags as u32 as c_ulong,
                restorer,
                mask: *(&prev.sa_mask as *const libc::sigset_t as *const u64),
            }
        };
    }
    Some(r as c_long)
}
