//! Private futex waits and wakes on words of corun's own (the helper
//! threads' sleeps), made with the raw system call: glibc's `syscall` is
//! interposed for the program's calls.

use std::sync::atomic::AtomicU32;

/// Sleeps while `word` holds `expected`, at most `timeout_ns`; returns at
/// once if it holds anything else. A wake, a signal or the timeout ends
/// it: callers look at their state again after.
pub fn wait(word: &AtomicU32, expected: u32, timeout_ns: u64) {
    let ts = super::ns_timespec(timeout_ns);
    // SAFETY: a live word of ours and a valid relative timeout; the kernel
    // only reads the word.
    unsafe {
        super::real::syscall!(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &ts as *const libc::timespec
        )
    };
}

/// Wakes every thread that sleeps on `word`.
pub fn wake_all(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a live word of ours.
    unsafe {
        super::real::syscall!(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX
        )
    };
}
