//! `pclose`: the command is waited for parked.
//!
//! glibc's `pclose` closes the pipe and then waits for the command with
//! its internal `__waitpid`, which no hook sees: a thread that wrote a
//! mail into `popen("sendmail ...", "w")` held its worker until the
//! command ended, and every other thread there waited with it.
//!
//! `popen` is glibc's; corun notes the stream and its command's pid (in
//! glibc's `struct _IO_proc_file`, right after the FILE and its vtable
//! pointer: read once, and believed only if `waitid` confirms that pid is
//! a child of this process). `pclose` from a coroutine then:
//!
//! 1. flushes the stream, and puts /dev/null in place of its pipe
//!    (`dup2`, atomic), so the command sees the end of its input, or a
//!    broken pipe, as when the pipe closes;
//! 2. waits, parked, until the command has ended, without reaping it;
//! 3. lets glibc's `pclose` close the stream and reap the command, which
//!    no longer blocks.
//!
//! A stream corun did not see opened (made before the runtime started)
//! goes to glibc's `pclose` as it is.

use std::ffi::{c_char, c_int};
use std::sync::Mutex;

use libc::FILE;

mod real {
    use libc::{c_char, c_int, FILE};
    crate::sys::real::real_fns! {
        fn popen(cmd: *const c_char, mode: *const c_char) -> *mut FILE;
        fn pclose(f: *mut FILE) -> c_int;
    }
}

/// Streams from `popen`, with their command's pid.
static STREAMS: Mutex<Vec<(usize, libc::pid_t)>> = Mutex::new(Vec::new());

/// Where glibc keeps a popen stream's pid: after `struct _IO_FILE` (216
/// bytes on x86_64) and the vtable pointer.
#[cfg(target_arch = "x86_64")]
const PID_OFFSET: usize = 216 + 8;

/// Whether `pid` is a child of this process (exited or not).
fn is_child(pid: libc::pid_t) -> bool {
    // SAFETY: a zeroed siginfo is a valid out-buffer.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid with WNOHANG|WNOWAIT only reports; it reaps nothing.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    r == 0
}

#[no_mangle]
pub unsafe extern "C" fn popen(cmd: *const c_char, mode: *const c_char) -> *mut FILE {
    crate::hooks::listener::child_made();
    // SAFETY: the caller's popen contract.
    let f = unsafe { real::popen(cmd, mode) };
    if !f.is_null() {
        // SAFETY: `f` is a popen stream, a glibc `_IO_proc_file`, whose
        // pid field lies at PID_OFFSET; checked by `is_child` before use.
        let pid = unsafe { *((f as *const u8).add(PID_OFFSET) as *const libc::pid_t) };
        if pid > 0 && is_child(pid) {
            let mut s = crate::sched::fdtable::lock(&STREAMS);
            s.retain(|&(p, _)| p != f as usize);
            s.push((f as usize, pid));
        }
    }
    f
}

#[no_mangle]
pub unsafe extern "C" fn pclose(f: *mut FILE) -> c_int {
    let pid = {
        let mut s = crate::sched::fdtable::lock(&STREAMS);
        let i = s.iter().position(|&(p, _)| p == f as usize);
        i.map(|i| s.swap_remove(i).1)
    };
    if let Some(pid) = pid.filter(|_| crate::sched::parking()) {
        let saved = crate::sys::errno();
        // SAFETY: `f` is the caller's open popen stream.
        unsafe { end_input_and_wait(f, pid) };
        crate::sys::set_errno(saved);
    }
    if !f.is_null() {
        // glibc closes the stream's fd inside, where no hook sees it.
        // SAFETY: the caller's pclose contract: `f` came from popen.
        crate::sched::fdtable::forget(unsafe { libc::fileno(f) });
    }
    // SAFETY: the caller's pclose contract.
    unsafe { real::pclose(f) }
}

/// Steps 1 and 2 above.
///
/// # Safety
/// `f` is an open popen stream whose command is `pid`.
unsafe fn end_input_and_wait(f: *mut FILE, pid: libc::pid_t) {
    // SAFETY: per the contract.
    let fd = unsafe {
        libc::fflush(f);
        libc::fileno(f)
    };
    // SAFETY: opening /dev/null and putting it at `fd`, which the stream
    // owns and glibc's pclose closes next; the calls go through corun's
    // own hooks, which keep their fd table right.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null < 0 {
            return;
        }
        let moved = fd >= 0 && libc::dup2(null, fd) == fd;
        libc::close(null);
        if !moved {
            return;
        }
    }
    // Waits until the command has ended (reaped by glibc next): a waitid
    // that leaves it a zombie, through the parking hook.
    let mut info: libc::siginfo_t;
    loop {
        // SAFETY: a zeroed siginfo is a valid out-buffer.
        info = unsafe { std::mem::zeroed() };
        // SAFETY: the `waitid` hook, with WNOWAIT: it reaps nothing.
        let r = unsafe {
            super::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 || crate::sys::errno() != libc::EINTR {
            return;
        }
    }
}
