//! `fork`, `vfork`, `waitpid`, `wait`, `wait3`, `wait4`, `waitid`, `posix_spawn`,
//! `posix_spawnp`.
//!
//! A coroutine that forks gets a child whose runtime keeps only that
//! coroutine, with a scheduler of its own (`sched::fork`). `vfork` is made
//! a `fork`: a vfork child borrows the parent's memory and stack, and any
//! hook it ran (a `close` before `exec`) would change the parent's fd table
//! and wake the parent's coroutines. POSIX lets vfork behave as fork; the
//! only cost is the copy of the page tables. (`posix_spawn`, which glibc's
//! `system` and `popen` use, makes raw syscalls in its child and needs
//! nothing, except the signal mask: glibc gives the child its thread's
//! kernel mask, the worker's, so `posix_spawn` from a coroutine asks for
//! the coroutine's mask, unless the caller set one.)
//!
//! A wait for a child ends with EINTR when a handler without SA_RESTART
//! runs in the waiting coroutine (SIGCHLD's, often).

use libc::pid_t;

pub(crate) mod clone;
pub(crate) mod daemon;
pub(crate) mod popen;
pub(crate) mod seccomp;
pub(crate) mod system;

use crate::sched::{self, fork::after_fork_child, in_coroutine};
use crate::sys::real;

/// Looks up, once, the real functions a forked child is likely to call, so
/// that each child inherits them resolved instead of repeating the lookups.
fn resolve_for_children() {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if DONE.swap(true, std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let saved = crate::sys::errno();
    crate::sys::real::resolve_all();
    super::file::real::resolve_all();
    super::mmsg::next::resolve_all();
    super::epoll::next::resolve_all();
    super::poll::next::resolve_all();
    super::fdctl::next::resolve_all();
    real_wait::resolve_all();
    crate::sys::set_errno(saved);
}

#[no_mangle]
#[link_section = ".text.hot.corun"] // a forked child's path: build.rs
pub unsafe extern "C" fn fork() -> pid_t {
    super::listener::child_made();
    if !in_coroutine() {
        // SAFETY: plain fork, no arguments.
        return unsafe { real::fork() };
    }
    // SAFETY: plain fork, no arguments.
    as_fork(|| unsafe { real::fork() } as libc::c_long) as pid_t
}

/// The forking coroutine, as the child's runtime must know it: its task
/// id and whether it is `main`.
#[derive(Clone, Copy)]
pub(crate) struct Forker {
    task: u64,
    is_main: bool,
}

impl Forker {
    /// The running coroutine, about to make a new process; looks up the
    /// real functions a child is likely to call first.
    pub(crate) fn here() -> Forker {
        super::listener::child_made();
        resolve_for_children();
        let task = sched::current_id();
        Forker {
            task,
            is_main: task == crate::hooks::start::main_task_id(),
        }
    }

    /// In the new process, before any of the program's code: the runtime
    /// keeps this coroutine alone (docs/ARCHITECTURE.md §5.5).
    #[link_section = ".text.hot.corun"] // a forked child's path: build.rs
    pub(crate) fn child(self) {
        let saved = crate::sys::errno();
        after_fork_child(self.task, self.is_main);
        super::pthread::after_fork_child();
        crate::sys::set_errno(saved);
    }
}

/// Makes a new process with `call` (a fork, or a clone that copies the
/// address space and continues on the same stack), from a coroutine: the
/// child (where `call` returns 0) gets its runtime rebuilt.
pub(crate) fn as_fork(call: impl FnOnce() -> libc::c_long) -> libc::c_long {
    let f = Forker::here();
    let r = call();
    if r == 0 {
        f.child();
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn vfork() -> pid_t {
    // SAFETY: as fork.
    unsafe { fork() }
}

/// Parks until `pid` (one child) may have changed state or `pause_ns`
/// passed: its pidfd becomes readable when it exits; a stop or continue
/// (WUNTRACED, WCONTINUED, and every stop of a ptraced child) does not make
/// it readable, hence the deadline. Returns false if no pidfd could be had.
fn park_on_child(pid: pid_t, pause_ns: u64) -> bool {
    // SAFETY: pidfd_open takes a pid and flags.
    let pfd = unsafe { crate::sys::real::syscall!(libc::SYS_pidfd_open, pid, 0) } as i32;
    if pfd < 0 {
        return false;
    }
    if let Some(e) = crate::sched::fdtable::get(pfd) {
        e.reset();
        let seen = e.snapshot(crate::sched::fdtable::Dir::Read);
        if !crate::hooks::ready_now(pfd, libc::POLLIN) {
            let deadline = crate::sys::now_ns() + pause_ns;
            crate::sched::park_until_ready(
                pfd,
                crate::sched::fdtable::Dir::Read,
                seen,
                Some(deadline),
            );
        }
        e.reset();
    }
    // SAFETY: closing the pidfd opened above (raw: it is ours, not the program's).
    unsafe { crate::sys::real::syscall!(libc::SYS_close, pfd) };
    true
}

/// A wait for a child that parks. `attempt(options)` makes the real call;
/// it is made with WNOHANG, and between attempts the coroutine parks: on
/// the child's pidfd (woken at once when it exits) for one child, by
/// sleeping for "any child"; either way for at most 1 ms growing to 20 ms,
/// so stops (which a pidfd does not report) are seen too.
fn wait_parking(
    pid: pid_t,
    options: libc::c_int,
    mut attempt: impl FnMut(libc::c_int) -> pid_t,
) -> pid_t {
    let mut pause_ns = 1_000_000u64;
    let mut intr: Option<crate::sched::signals::Interruptible> = None;
    loop {
        let r = attempt(options | libc::WNOHANG);
        if r != 0 {
            return r;
        }
        // A handler that ran while it waited (SIGCHLD's, often): EINTR,
        // unless it had SA_RESTART.
        let i = intr.get_or_insert_with(crate::sched::signals::Interruptible::begin);
        if let Some(restart) = i.check() {
            if !restart {
                crate::sys::set_errno(libc::EINTR);
                return -1;
            }
            *i = crate::sched::signals::Interruptible::begin();
        }
        if !(pid > 0 && park_on_child(pid, pause_ns)) {
            crate::sched::park(|_| true, Some(crate::sys::now_ns() + pause_ns));
        }
        pause_ns = (pause_ns * 2).min(20_000_000);
    }
}

mod real_wait {
    use libc::{c_int, id_t, idtype_t, pid_t, rusage, siginfo_t};
    crate::sys::real::real_fns! {
        fn waitpid(pid: pid_t, status: *mut c_int, options: c_int) -> pid_t;
        fn wait4(pid: pid_t, status: *mut c_int, options: c_int, ru: *mut rusage) -> pid_t;
        fn waitid(idtype: idtype_t, id: id_t, info: *mut siginfo_t, options: c_int) -> c_int;
    }
}

#[no_mangle]
pub unsafe extern "C" fn waitpid(
    pid: pid_t,
    status: *mut libc::c_int,
    options: libc::c_int,
) -> pid_t {
    if !crate::sched::parking() || options & libc::WNOHANG != 0 {
        // SAFETY: the caller's waitpid contract.
        return unsafe { real_wait::waitpid(pid, status, options) };
    }
    // SAFETY: the caller's waitpid contract.
    wait_parking(pid, options, |o| unsafe {
        real_wait::waitpid(pid, status, o)
    })
}

#[no_mangle]
pub unsafe extern "C" fn wait4(
    pid: pid_t,
    status: *mut libc::c_int,
    options: libc::c_int,
    ru: *mut libc::rusage,
) -> pid_t {
    if !crate::sched::parking() || options & libc::WNOHANG != 0 {
        // SAFETY: the caller's wait4 contract.
        return unsafe { real_wait::wait4(pid, status, options, ru) };
    }
    // SAFETY: the caller's wait4 contract.
    wait_parking(pid, options, |o| unsafe {
        real_wait::wait4(pid, status, o, ru)
    })
}

#[no_mangle]
pub unsafe extern "C" fn waitid(
    idtype: libc::idtype_t,
    id: libc::id_t,
    info: *mut libc::siginfo_t,
    options: libc::c_int,
) -> libc::c_int {
    if !crate::sched::parking() || options & libc::WNOHANG != 0 || info.is_null() {
        // SAFETY: the caller's waitid contract.
        return unsafe { real_wait::waitid(idtype, id, info, options) };
    }
    let pid = if idtype == libc::P_PID {
        id as pid_t
    } else {
        -1
    };
    wait_parking(pid, options, |o| {
        // waitid with WNOHANG returns 0 whether or not a child changed
        // state; si_pid says which (0: none).
        // SAFETY: `info` is writable per the contract.
        unsafe {
            (*info).si_signo = 0;
            let r = real_wait::waitid(idtype, id, info, o);
            if r < 0 {
                return -1;
            }
            if (*info).si_pid() == 0 {
                0
            } else {
                1
            }
        }
    })
    .min(0)
}

/// glibc's `wait3` calls its internal `__wait4`, which no hook sees.
#[no_mangle]
pub unsafe extern "C" fn wait3(
    status: *mut libc::c_int,
    options: libc::c_int,
    ru: *mut libc::rusage,
) -> pid_t {
    // SAFETY: wait3(s, o, r) is wait4(-1, s, o, r).
    unsafe { wait4(-1, status, options, ru) }
}

#[no_mangle]
pub unsafe extern "C" fn wait(status: *mut libc::c_int) -> pid_t {
    // SAFETY: wait(s) is waitpid(-1, s, 0).
    unsafe { waitpid(-1, status, 0) }
}

mod real_spawn {
    use libc::{c_char, c_int, pid_t, posix_spawn_file_actions_t, posix_spawnattr_t};
    crate::sys::real::real_fns! {
        fn posix_spawn(pid: *mut pid_t, path: *const c_char, fa: *const posix_spawn_file_actions_t,
            attr: *const posix_spawnattr_t, argv: *const *mut c_char, envp: *const *mut c_char) -> c_int;
        fn posix_spawnp(pid: *mut pid_t, file: *const c_char, fa: *const posix_spawn_file_actions_t,
            attr: *const posix_spawnattr_t, argv: *const *mut c_char, envp: *const *mut c_char) -> c_int;
    }
}

/// The attributes a spawn from a coroutine uses: the child starts with the
/// coroutine's signal mask, as a child starts with its thread's natively
/// (glibc gives it the calling thread's kernel mask, the worker's). A
/// caller's own POSIX_SPAWN_SETSIGMASK is left alone. None: use `attr`.
///
/// # Safety
/// `attr` is NULL or an initialised attribute object.
unsafe fn spawn_attr(attr: *const libc::posix_spawnattr_t) -> Option<libc::posix_spawnattr_t> {
    let t = crate::sched::current()?;
    let m = t.ident.sigmask.load(std::sync::atomic::Ordering::SeqCst);
    if !in_coroutine() || m == crate::sched::sigmask::thread_mask() {
        return None;
    }
    // SAFETY: a zeroed attribute object is initialised by
    // posix_spawnattr_init, or overwritten by a copy of the caller's (a
    // plain structure in glibc: flags, pgroup, sigsets, sched params).
    let mut a: libc::posix_spawnattr_t = unsafe { std::mem::zeroed() };
    let mut flags: libc::c_short = 0;
    // SAFETY: per this function's contract; `a` and `flags` are ours.
    unsafe {
        if attr.is_null() {
            libc::posix_spawnattr_init(&mut a);
        } else {
            a = *attr;
            libc::posix_spawnattr_getflags(&a, &mut flags);
            if flags & libc::POSIX_SPAWN_SETSIGMASK as libc::c_short != 0 {
                return None;
            }
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        *(&mut set as *mut libc::sigset_t as *mut u64) = m;
        libc::posix_spawnattr_setsigmask(&mut a, &set);
        libc::posix_spawnattr_setflags(
            &mut a,
            flags | libc::POSIX_SPAWN_SETSIGMASK as libc::c_short,
        );
    }
    Some(a)
}

#[no_mangle]
pub unsafe extern "C" fn posix_spawn(
    pid: *mut pid_t,
    path: *const libc::c_char,
    fa: *const libc::posix_spawn_file_actions_t,
    attr: *const libc::posix_spawnattr_t,
    argv: *const *mut libc::c_char,
    envp: *const *mut libc::c_char,
) -> libc::c_int {
    super::listener::child_made();
    // SAFETY: the caller's posix_spawn contract.
    let mine = unsafe { spawn_attr(attr) };
    let attr = mine.as_ref().map_or(attr, |a| a as *const _);
    // SAFETY: the caller's contract, with our copy of the attributes.
    unsafe { real_spawn::posix_spawn(pid, path, fa, attr, argv, envp) }
}

#[no_mangle]
pub unsafe extern "C" fn posix_spawnp(
    pid: *mut pid_t,
    file: *const libc::c_char,
    fa: *const libc::posix_spawn_file_actions_t,
    attr: *const libc::posix_spawnattr_t,
    argv: *const *mut libc::c_char,
    envp: *const *mut libc::c_char,
) -> libc::c_int {
    super::listener::child_made();
    // SAFETY: the caller's posix_spawnp contract.
    let mine = unsafe { spawn_attr(attr) };
    let attr = mine.as_ref().map_or(attr, |a| a as *const _);
    // SAFETY: the caller's contract, with our copy of the attributes.
    unsafe { real_spawn::posix_spawnp(pid, file, fa, attr, argv, envp) }
}
