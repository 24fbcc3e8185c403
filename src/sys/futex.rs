//! Private futex waits and wakes on words of corun's own (a native
//! thread's `ThreadParker`, the helper threads' sleeps), made with the raw
//! system call: glibc's `syscall` is interposed for the program's calls.

use std::sync::atomic::AtomicU32;

/// Sleeps while `word` holds `expected`, at most `timeout_ns` (None: no
/// bound); returns at once if it holds anything else. A wake, a signal or
/// the timeout ends it: callers look at their state again after.
pub fn wait(word: &AtomicU32, expected: u32, timeout_ns: Option<u64>) {
    let ts = timeout_ns.map(super::ns_timespec);
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: a live word of ours and a NULL or valid relative timeout;
    // the kernel only reads the word.
    unsafe {
        super::real::syscall!(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            tsp
        )
    };
}

/// Wakes up to `n` threads that sleep on `word`.
pub fn wake(word: &AtomicU32, n: i32) {
    // SAFETY: FUTEX_WAKE on a live word of ours.
    unsafe {
        super::real::syscall!(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            n
        )
    };
}
