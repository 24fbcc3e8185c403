//! `fork`, `vfork`.
//!
//! A coroutine that forks gets a child whose runtime keeps only that
//! coroutine, with a scheduler of its own (`sched::fork`). `vfork` is made
//! a `fork`: a vfork child borrows the parent's memory and stack, and any
//! hook it ran (a `close` before `exec`) would change the parent's fd table
//! and wake the parent's coroutines. POSIX lets vfork behave as fork; the
//! only cost is the copy of the page tables. (`posix_spawn`, which glibc's
//! `system` and `popen` use, makes raw syscalls in its child and needs
//! nothing.)

use libc::pid_t;

use crate::sched::{self, fork::after_fork_child, in_coroutine};
use crate::sys::real;

#[no_mangle]
pub unsafe extern "C" fn fork() -> pid_t {
    if !in_coroutine() {
        // SAFETY: plain fork, no arguments.
        return unsafe { real::fork() };
    }
    let task = sched::current_id();
    let is_main = task == crate::hooks::start::main_task_id();
    // SAFETY: plain fork, no arguments.
    let pid = unsafe { real::fork() };
    if pid == 0 {
        let saved = crate::sys::errno();
        after_fork_child(task, is_main);
        crate::sys::set_errno(saved);
    }
    pid
}

#[no_mangle]
pub unsafe extern "C" fn vfork() -> pid_t {
    // SAFETY: as fork.
    unsafe { fork() }
}

/// Parks until `pid` (one child) may have changed state: its pidfd becomes
/// readable when it exits. Returns false if no pidfd could be had.
fn park_until_child_exits(pid: pid_t) -> bool {
    // SAFETY: pidfd_open takes a pid and flags.
    let pfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if pfd < 0 {
        return false;
    }
    if let Some(e) = crate::sched::fdtable::get(pfd) {
        e.reset();
        loop {
            let seen = e.snapshot(crate::sched::fdtable::Dir::Read);
            if crate::hooks::ready_now(pfd, libc::POLLIN) {
                break;
            }
            if crate::sched::park_until_ready(pfd, crate::sched::fdtable::Dir::Read, seen, None)
                != crate::sched::FdWait::Ready
            {
                break;
            }
        }
        e.reset();
    }
    // SAFETY: closing the pidfd opened above (raw: it is ours, not the program's).
    unsafe { libc::syscall(libc::SYS_close, pfd) };
    true
}

/// waitpid that parks: for one child, on its pidfd; for "any child", by
/// polling with WNOHANG at growing intervals (1 to 20 ms).
fn waitpid_parking(pid: pid_t, status: *mut libc::c_int, options: libc::c_int) -> pid_t {
    let mut pause_ns = 1_000_000u64;
    loop {
        // SAFETY: the caller's waitpid contract.
        let r = unsafe { waitpid_real(pid, status, options | libc::WNOHANG) };
        if r != 0 {
            return r;
        }
        if pid > 0 && park_until_child_exits(pid) {
            continue;
        }
        crate::sched::sleep_until(crate::sys::now_ns() + pause_ns);
        pause_ns = (pause_ns * 2).min(20_000_000);
    }
}

mod real_wait {
    use libc::{c_int, pid_t};
    crate::sys::real::real_fns! {
        fn waitpid(pid: pid_t, status: *mut c_int, options: c_int) -> pid_t;
    }
}

unsafe fn waitpid_real(pid: pid_t, status: *mut libc::c_int, options: libc::c_int) -> pid_t {
    // SAFETY: the caller's waitpid contract.
    unsafe { real_wait::waitpid(pid, status, options) }
}

#[no_mangle]
pub unsafe extern "C" fn waitpid(
    pid: pid_t,
    status: *mut libc::c_int,
    options: libc::c_int,
) -> pid_t {
    if !in_coroutine() || options & libc::WNOHANG != 0 {
        // SAFETY: the caller's waitpid contract.
        return unsafe { waitpid_real(pid, status, options) };
    }
    waitpid_parking(pid, status, options)
}

#[no_mangle]
pub unsafe extern "C" fn wait(status: *mut libc::c_int) -> pid_t {
    // SAFETY: wait(s) is waitpid(-1, s, 0).
    unsafe { waitpid(-1, status, 0) }
}
