//! Thread names: `pthread_setname_np`, `pthread_getname_np`, and
//! `prctl(PR_SET_NAME / PR_GET_NAME)`.
//!
//! Natively a name is the kernel's `comm` of the thread, and the main
//! thread's is the process's: what `ps`, `top`, `pgrep -x`, `pidof` and
//! `killall` match. A coroutine thread's name is kept in its record
//! (`ThreadRec::name`), as the kernel thread under it is shared. Two
//! cases touch the kernel's:
//!
//! - `main` runs on worker 0, the process's first thread (tid = pid): its
//!   name is also that thread's kernel name, set as natively (Traffic
//!   Server's main thread names itself `[TS_MAIN]`, its process name
//!   natively; it stayed `traffic_server` under corun);
//! - `prctl(PR_SET_NAME)` from any other coroutine thread names that
//!   thread only: it renamed the worker's kernel thread before, and on
//!   worker 0 the whole process (a thread naming itself made `ps` show the
//!   process under the thread's name; `pthread_getname_np` did not see it).
//!
//! A forked child's only thread is named after the thread that forked,
//! as natively (`apply_in_child`).

use std::ffi::c_ulong;

use super::*;

/// Set once `main`'s kernel name was changed through a hook: the worker
/// threads (named after the process at their start) may no longer all
/// carry the name a forked child of theirs should have.
static MAIN_RENAMED: AtomicBool = AtomicBool::new(false);

/// The bytes of a name before its NUL (at most 15).
fn bytes(name: &[u8; NAME_LEN]) -> &[u8] {
    let end = name.iter().position(|&b| b == 0).unwrap_or(NAME_LEN);
    &name[..end]
}

fn store(rec: &ThreadRec, s: &[u8]) {
    let mut n = lock(&rec.name);
    n.fill(0);
    n[..s.len()].copy_from_slice(s);
}

/// Names the calling kernel thread (`PR_SET_NAME`): 0 or an errno value.
fn set_kernel_name_here(s: &[u8]) -> c_int {
    let mut buf = [0u8; NAME_LEN];
    buf[..s.len()].copy_from_slice(s);
    // SAFETY: PR_SET_NAME reads the NUL-terminated local buffer.
    let r = unsafe { crate::sys::real::syscall!(libc::SYS_prctl, libc::PR_SET_NAME, buf.as_ptr()) };
    if r < 0 {
        crate::sys::errno()
    } else {
        0
    }
}

/// Gives the process's first thread (tid = pid), where `main` runs, the
/// kernel name `s` (at most 15 bytes): on that thread with `prctl`, from
/// another through /proc/self/comm (the thread-group leader's, as glibc
/// names another thread through its comm file).
fn set_main_kernel_name(s: &[u8]) -> c_int {
    MAIN_RENAMED.store(true, Ordering::Relaxed);
    // SAFETY: getpid has no preconditions.
    if crate::sys::gettid() == unsafe { libc::getpid() } {
        return set_kernel_name_here(s);
    }
    // SAFETY: raw openat/write/close on a path literal and the caller's
    // bytes.
    unsafe {
        use crate::sys::real::syscall;
        let fd = syscall!(
            libc::SYS_openat,
            libc::AT_FDCWD,
            c"/proc/self/comm".as_ptr(),
            libc::O_WRONLY | libc::O_CLOEXEC
        );
        if fd < 0 {
            return crate::sys::errno();
        }
        let n = syscall!(libc::SYS_write, fd, s.as_ptr(), s.len());
        let e = crate::sys::errno();
        syscall!(libc::SYS_close, fd);
        if n < 0 {
            return e;
        }
    }
    0
}

/// Names coroutine thread `id` `s` (at most 15 bytes): its record, the
/// debugger's copy (`sched/debugreg.rs`: gdb reads no Rust layout) and,
/// for `main`, the kernel's. 0 or an errno value.
fn set_name(id: u64, rec: &ThreadRec, s: &[u8]) -> c_int {
    if id == MAIN_ID {
        let e = set_main_kernel_name(s);
        if e != 0 {
            return e;
        }
    }
    store(rec, s);
    if let Some(t) = crate::sched::sigdispatch::find_id(id) {
        t.debug.set_name(s);
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn pthread_setname_np(t: pthread_t, name: *const c_char) -> c_int {
    let Some(id) = decode(t) else {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_setname_np(t, name) };
    };
    if name.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: a NUL-terminated string by the caller's contract.
    let s = unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes();
    if s.len() >= NAME_LEN {
        return libc::ERANGE;
    }
    let Some(rec) = rec_of(id) else {
        return libc::ESRCH;
    };
    set_name(id, &rec, s)
}

#[no_mangle]
pub unsafe extern "C" fn pthread_getname_np(t: pthread_t, buf: *mut c_char, len: size_t) -> c_int {
    let Some(id) = decode(t) else {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_getname_np(t, buf, len) };
    };
    if len < NAME_LEN {
        return libc::ERANGE;
    }
    let Some(rec) = rec_of(id) else {
        return libc::ESRCH;
    };
    let n = *lock(&rec.name);
    // SAFETY: `buf` has room for `len` >= 16 bytes (caller's contract).
    unsafe { std::ptr::copy_nonoverlapping(n.as_ptr(), buf as *mut u8, NAME_LEN) };
    0
}

/// `prctl(PR_SET_NAME / PR_GET_NAME, arg)` in a coroutine thread: the
/// thread's own name, as the kernel keeps it (15 bytes at most, longer
/// ones cut); `main`'s is also the kernel's (the process's name). None:
/// another option, or not a coroutine thread (the kernel's call).
///
/// # Safety
/// `arg` is what the caller passed: for these options the address of 16
/// bytes (PR_GET_NAME writes them) or of a string (PR_SET_NAME).
pub(crate) unsafe fn prctl_name(option: c_int, arg: c_ulong) -> Option<c_int> {
    if option != libc::PR_SET_NAME && option != libc::PR_GET_NAME {
        return None;
    }
    if crate::sched::confined::is() || !coroutine_threads() {
        return None;
    }
    let t = current()?;
    let p = arg as usize as *mut u8;
    if p.is_null() {
        return Some(super::tid::fail(libc::EFAULT));
    }
    let rec = self_rec()?;
    if option == libc::PR_GET_NAME {
        if t.id == MAIN_ID {
            return None;
        }
        let n = *lock(&rec.name);
        // SAFETY: PR_GET_NAME's buffer holds 16 bytes (TASK_COMM_LEN).
        unsafe { std::ptr::copy_nonoverlapping(n.as_ptr(), p, NAME_LEN) };
        return Some(0);
    }
    let mut s = [0u8; NAME_LEN];
    for (i, b) in s.iter_mut().take(NAME_LEN - 1).enumerate() {
        // SAFETY: a NUL-terminated string (caller's contract), read up to
        // its NUL or 15 bytes, as the kernel reads it.
        *b = unsafe { *p.add(i) };
        if *b == 0 {
            break;
        }
    }
    match set_name(t.id, &rec, bytes(&s)) {
        0 => Some(0),
        e => Some(super::tid::fail(e)),
    }
}

/// In a forked child: its only thread takes the name of the thread that
/// forked (natively the child's `comm` is that thread's). Nothing to do
/// for `main` (worker 0 has its name), nor while every kernel thread still
/// has the process's name and so does the forking thread.
pub(super) fn apply_in_child() {
    if current_id() == MAIN_ID {
        return;
    }
    let Some(rec) = self_rec() else { return };
    let n = *lock(&rec.name);
    if n == process_name() && !MAIN_RENAMED.load(Ordering::Relaxed) {
        return;
    }
    set_kernel_name_here(bytes(&n));
}
