//! `flockfile`, `ftrylockfile`, `funlockfile`: glibc's, counted per thread
//! so that a coroutine holding a FILE lock it took itself is not preempted
//! (`sched/preempt.rs`).
//!
//! glibc takes a FILE's lock with an inline futex: a coroutine preempted
//! while it held one (between `flockfile` and `funlockfile`, typically in
//! a `getc_unlocked` loop) would block, in the kernel, the next coroutine
//! of its worker that touches that FILE, and being pinned to that worker
//! it would never run again to release it. glibc's own uses of the lock
//! (inside `printf`, `fgets`...) are not seen here and need not be: they
//! run in glibc's code, where a coroutine is never preempted anyway.

use std::ffi::c_int;

mod real {
    use std::ffi::c_int;
    crate::sys::real::real_fns! {
        fn flockfile(f: *mut libc::FILE) -> ();
        fn ftrylockfile(f: *mut libc::FILE) -> c_int;
        fn funlockfile(f: *mut libc::FILE) -> ();
    }
}

#[no_mangle]
pub unsafe extern "C" fn flockfile(f: *mut libc::FILE) {
    // SAFETY: the caller's flockfile contract.
    unsafe { real::flockfile(f) };
    crate::sched::preempt::lock_taken();
}

#[no_mangle]
pub unsafe extern "C" fn ftrylockfile(f: *mut libc::FILE) -> c_int {
    // SAFETY: the caller's ftrylockfile contract.
    let r = unsafe { real::ftrylockfile(f) };
    if r == 0 {
        crate::sched::preempt::lock_taken();
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn funlockfile(f: *mut libc::FILE) {
    crate::sched::preempt::lock_released();
    // SAFETY: the caller's funlockfile contract.
    unsafe { real::funlockfile(f) };
}
