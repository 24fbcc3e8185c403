//! A coroutine thread's timer slack (`prctl(PR_SET_TIMERSLACK /
//! PR_GET_TIMERSLACK)`) and I/O priority (`syscall(SYS_ioprio_set /
//! SYS_ioprio_get)` with IOPRIO_WHO_PROCESS, on 0 in it or on its tid).
//!
//! Natively both belong to each thread: a thread that widens its slack or
//! lowers its I/O class changes only itself, reads back what it set, and
//! a new thread starts with its creator's values (and PR_SET_TIMERSLACK 0
//! brings back the slack it started with). As with nice (`sched_attr.rs`)
//! they are kept in the thread's record and reported, not applied: the
//! worker's are untouched (before, they were the worker's, shared by every
//! thread there, and `ioprio_get` on a thread's tid failed with ESRCH). An
//! `ioprio_set` is checked by the kernel on the worker (the value set, then
//! the worker's own put back), so its errors are the kernel's. `main`,
//! native threads and kernel tids get the kernel's calls.

use super::affinity::target;
use super::tid::fail;
use super::*;

use std::ffi::{c_long, c_ulong};
use std::sync::atomic::AtomicI32;

/// IOPRIO_WHO_PROCESS (linux/ioprio.h).
const WHO_PROCESS: c_long = 1;

/// The kernel's values for main (and native threads), which the threads
/// they make start with: read once, and again after such a thread changed
/// one through the hooks (u64::MAX, -1: not read yet).
static KERNEL_SLACK: AtomicU64 = AtomicU64::new(u64::MAX);
static KERNEL_IOPRIO: AtomicI32 = AtomicI32::new(-1);

/// The kept values of a thread.
pub(super) struct Kept {
    slack: AtomicU64,
    /// What PR_SET_TIMERSLACK 0 brings back: the slack it started with.
    slack_default: u64,
    ioprio: AtomicI32,
}

/// The calling thread's values, which a thread it makes starts with
/// (`parent`: its record, if it is a coroutine thread that has one).
pub(super) fn inherited(parent: Option<&ThreadRec>) -> Kept {
    let (slack, ioprio) = match parent {
        Some(rec) => (
            rec.kept.slack.load(Ordering::Relaxed),
            rec.kept.ioprio.load(Ordering::Relaxed),
        ),
        None => (kernel_slack(), kernel_ioprio()),
    };
    Kept {
        slack: AtomicU64::new(slack),
        slack_default: slack,
        ioprio: AtomicI32::new(ioprio),
    }
}

fn kernel_slack() -> u64 {
    let v = KERNEL_SLACK.load(Ordering::Relaxed);
    if v != u64::MAX {
        return v;
    }
    let keep = crate::sys::errno();
    // SAFETY: a query with no pointer argument.
    let r = unsafe { crate::sys::real::syscall!(libc::SYS_prctl, libc::PR_GET_TIMERSLACK) };
    crate::sys::set_errno(keep);
    let v = r.max(0) as u64;
    KERNEL_SLACK.store(v, Ordering::Relaxed);
    v
}

fn kernel_ioprio() -> c_int {
    let v = KERNEL_IOPRIO.load(Ordering::Relaxed);
    if v >= 0 {
        return v;
    }
    let keep = crate::sys::errno();
    // SAFETY: plain integers.
    let r = unsafe { crate::sys::real::syscall!(libc::SYS_ioprio_get, WHO_PROCESS, 0) };
    crate::sys::set_errno(keep);
    let v = r.max(0) as c_int;
    KERNEL_IOPRIO.store(v, Ordering::Relaxed);
    v
}

/// The calling coroutine thread's record (None: main, a native thread,
/// runtime code, a process under seccomp).
fn self_kept() -> Option<Arc<ThreadRec>> {
    target(0)?.ok()
}

/// `prctl(PR_SET_TIMERSLACK / PR_GET_TIMERSLACK)` in a coroutine thread;
/// None: the kernel's call (and a change there is read again).
pub(crate) fn prctl_slack(option: c_int, arg: c_ulong) -> Option<c_int> {
    if option != libc::PR_SET_TIMERSLACK && option != libc::PR_GET_TIMERSLACK {
        return None;
    }
    let Some(rec) = self_kept() else {
        if option == libc::PR_SET_TIMERSLACK {
            KERNEL_SLACK.store(u64::MAX, Ordering::Relaxed);
        }
        return None;
    };
    let k = &rec.kept;
    if option == libc::PR_GET_TIMERSLACK {
        return Some(k.slack.load(Ordering::Relaxed) as c_int);
    }
    let v = if arg == 0 { k.slack_default } else { arg };
    k.slack.store(v, Ordering::Relaxed);
    Some(0)
}

/// `syscall(SYS_ioprio_set / SYS_ioprio_get)` (`a`: its arguments) on a
/// coroutine thread; None: the kernel's call.
pub(crate) fn ioprio_call(n: c_long, a: [c_long; 3]) -> Option<c_long> {
    if a[0] != WHO_PROCESS {
        return None;
    }
    let rec = match target(a[1] as libc::pid_t) {
        None => {
            if n == libc::SYS_ioprio_set {
                KERNEL_IOPRIO.store(-1, Ordering::Relaxed);
            }
            return None;
        }
        Some(Err(e)) => return Some(fail(e) as c_long),
        Some(Ok(rec)) => rec,
    };
    let k = &rec.kept;
    if n == libc::SYS_ioprio_get {
        return Some(k.ioprio.load(Ordering::Relaxed) as c_long);
    }
    // The kernel checks the value (class, level, the right to RT) on the
    // worker's thread, whose own value is then put back.
    // SAFETY: plain integers.
    let old = unsafe { crate::sys::real::syscall!(libc::SYS_ioprio_get, WHO_PROCESS, 0) };
    // SAFETY: plain integers.
    let r = unsafe { crate::sys::real::syscall!(libc::SYS_ioprio_set, WHO_PROCESS, 0, a[2]) };
    if r != 0 {
        return Some(r as c_long);
    }
    if old >= 0 {
        let keep = crate::sys::errno();
        // SAFETY: plain integers.
        unsafe { crate::sys::real::syscall!(libc::SYS_ioprio_set, WHO_PROCESS, 0, old) };
        crate::sys::set_errno(keep);
    }
    k.ioprio.store(a[2] as c_int, Ordering::Relaxed);
    Some(0)
}
