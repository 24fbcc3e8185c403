//! `system(3)` in a coroutine.
//!
//! glibc's `system` spawns `/bin/sh -c cmd` and waits for it with its own
//! internal `waitpid`, past the hook: the calling thread held its worker
//! for as long as the command ran (a ticker sharing the worker stopped).
//! In a coroutine that parks (`sched::parking`), corun does what glibc's
//! does, through its own hooks, so the wait parks:
//!
//! - while any `system` runs, SIGINT and SIGQUIT are ignored in the
//!   process (a count shared by the threads that call it, the previous
//!   actions put back when the last one ends), and the caller blocks
//!   SIGCHLD;
//! - the child is `/bin/sh -c cmd` with the environment, the caller's
//!   signal mask from before the call, and SIGINT and SIGQUIT at their
//!   default actions unless the caller had them ignored;
//! - the wait is `waitpid`, retried on EINTR; the result is the wait
//!   status, `127 << 8` when no shell could be started, and for a NULL
//!   command whether `exit 0` ran (a shell exists).
//!
//! Elsewhere (the process's only coroutine, a native thread) the real
//! `system` runs.

use std::ffi::{c_char, c_int};
use std::sync::Mutex;

mod real {
    use std::ffi::{c_char, c_int};
    crate::sys::real::real_fns! {
        fn system(cmd: *const c_char) -> c_int;
    }
}

extern "C" {
    static environ: *const *mut c_char;
}

/// Callers inside `system` now, and the SIGINT and SIGQUIT actions the
/// first of them replaced.
struct Ignoring {
    count: u32,
    int: libc::sigaction,
    quit: libc::sigaction,
}

static IGNORING: Mutex<Option<Ignoring>> = Mutex::new(None);

#[no_mangle]
pub unsafe extern "C" fn system(cmd: *const c_char) -> c_int {
    if !crate::sched::parking() {
        // SAFETY: the caller's system contract.
        return unsafe { real::system(cmd) };
    }
    if cmd.is_null() {
        return c_int::from(run(c"exit 0".as_ptr()) == 0);
    }
    run(cmd)
}

/// Ignores SIGINT and SIGQUIT for the first caller; returns which of them
/// the child should reset to their default action (those not ignored
/// before).
fn ignore_interrupts() -> (bool, bool) {
    let mut g = IGNORING.lock().unwrap_or_else(|e| e.into_inner());
    if g.is_none() {
        // SAFETY: zeroed sigaction structures are valid; the hooked
        // sigaction keeps corun's view of the program's handlers.
        let mut st = unsafe {
            Ignoring {
                count: 0,
                int: std::mem::zeroed(),
                quit: std::mem::zeroed(),
            }
        };
        // SAFETY: as above; `ign` is a valid action.
        unsafe {
            let mut ign: libc::sigaction = std::mem::zeroed();
            ign.sa_sigaction = libc::SIG_IGN;
            crate::hooks::sigaction::sigaction(libc::SIGINT, &ign, &mut st.int);
            crate::hooks::sigaction::sigaction(libc::SIGQUIT, &ign, &mut st.quit);
        }
        *g = Some(st);
    }
    let st = g.as_mut().expect("set above");
    st.count += 1;
    (
        st.int.sa_sigaction != libc::SIG_IGN,
        st.quit.sa_sigaction != libc::SIG_IGN,
    )
}

/// The last caller puts SIGINT's and SIGQUIT's actions back.
fn restore_interrupts() {
    let mut g = IGNORING.lock().unwrap_or_else(|e| e.into_inner());
    let last = g.as_mut().is_some_and(|st| {
        st.count -= 1;
        st.count == 0
    });
    if last {
        if let Some(st) = g.take() {
            // SAFETY: the actions sigaction gave back are valid.
            unsafe {
                crate::hooks::sigaction::sigaction(libc::SIGINT, &st.int, std::ptr::null_mut());
                crate::hooks::sigaction::sigaction(libc::SIGQUIT, &st.quit, std::ptr::null_mut());
            }
        }
    }
}

/// Runs `/bin/sh -c cmd` and waits for it, parked; the wait status.
fn run(cmd: *const c_char) -> c_int {
    let (reset_int, reset_quit) = ignore_interrupts();
    // SAFETY: sigset and attribute objects are initialised before use;
    // every pointer passed is to a local or to the caller's string.
    let status = unsafe {
        let mut chld: libc::sigset_t = std::mem::zeroed();
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        crate::hooks::sigmask::pthread_sigmask(libc::SIG_BLOCK, &chld, &mut before);
        let mut defaults: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut defaults);
        if reset_int {
            libc::sigaddset(&mut defaults, libc::SIGINT);
        }
        if reset_quit {
            libc::sigaddset(&mut defaults, libc::SIGQUIT);
        }
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        libc::posix_spawnattr_init(&mut attr);
        libc::posix_spawnattr_setsigmask(&mut attr, &before);
        libc::posix_spawnattr_setsigdefault(&mut attr, &defaults);
        libc::posix_spawnattr_setflags(
            &mut attr,
            (libc::POSIX_SPAWN_SETSIGDEF | libc::POSIX_SPAWN_SETSIGMASK) as libc::c_short,
        );
        let argv: [*mut c_char; 4] = [
            c"sh".as_ptr() as *mut c_char,
            c"-c".as_ptr() as *mut c_char,
            cmd as *mut c_char,
            std::ptr::null_mut(),
        ];
        let mut pid: libc::pid_t = 0;
        let e = super::posix_spawn(
            &mut pid,
            c"/bin/sh".as_ptr(),
            std::ptr::null(),
            &attr,
            argv.as_ptr(),
            environ,
        );
        libc::posix_spawnattr_destroy(&mut attr);
        let mut status: c_int = 127 << 8;
        if e == 0 {
            loop {
                let r = super::waitpid(pid, &mut status, 0);
                if r == -1 && crate::sys::errno() == libc::EINTR {
                    continue;
                }
                if r != pid {
                    status = -1;
                }
                break;
            }
        }
        let saved = crate::sys::errno();
        crate::hooks::sigmask::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
        crate::sys::set_errno(saved);
        status
    };
    restore_interrupts();
    status
}
