//! `system`: the shell's child is waited for parked.
//!
//! glibc's `system` waits with its internal `__waitpid`, which no hook
//! sees: a thread running `system("sleep 1")` held its worker for the
//! second, and every other thread there waited with it. From a coroutine,
//! `system` is made here as its manual page describes it, step by step,
//! with the wait going through the `waitpid` hook:
//!
//! 1. SIGINT and SIGQUIT are ignored in the process while any `system`
//!    runs (the first to start saves their actions, the last to end puts
//!    them back, so overlapping calls from several threads compose);
//! 2. SIGCHLD is blocked in the calling thread;
//! 3. `/bin/sh -c command` is spawned with the thread's mask from before
//!    step 2, and with SIGINT and SIGQUIT back at their defaults unless
//!    the program itself ignored them;
//! 4. the child is waited for (a handler that interrupts the wait makes
//!    it wait again), then the mask and the two actions are restored.
//!
//! The shell that cannot be started gives the status of `exit(127)`, as
//! glibc's does. Outside a coroutine, and for `system(NULL)` (a question,
//! no wait), glibc's own runs. Not done: glibc kills the child when the
//! calling thread is cancelled during the wait; here the wait ends and the
//! child runs on.

use std::ffi::{c_char, c_int};
use std::sync::Mutex;

use super::real_spawn;

mod real {
    use std::ffi::{c_char, c_int};
    crate::sys::real::real_fns! {
        fn system(cmd: *const c_char) -> c_int;
    }
}

extern "C" {
    static environ: *const *mut c_char;
}

/// The `system` calls in flight, and the actions of SIGINT and SIGQUIT
/// from before the first of them.
struct Ignoring {
    count: usize,
    int: libc::sigaction,
    quit: libc::sigaction,
}

// SAFETY: `sigaction` holds a handler address and flags, plain data.
unsafe impl Send for Ignoring {}

static IGNORING: Mutex<Option<Ignoring>> = Mutex::new(None);

fn is_ignored(a: &libc::sigaction) -> bool {
    a.sa_sigaction == libc::SIG_IGN
}

/// Step 1: SIGINT and SIGQUIT ignored; answers whether each was already
/// ignored by the program (the child then keeps ignoring it).
fn ignore_int_quit() -> (bool, bool) {
    let mut g = crate::sched::fdtable::lock(&IGNORING);
    let st = g.get_or_insert_with(|| Ignoring {
        count: 0,
        // SAFETY: an all-zero sigaction is a valid value (SIG_DFL).
        int: unsafe { std::mem::zeroed() },
        // SAFETY: as above.
        quit: unsafe { std::mem::zeroed() },
    });
    if st.count == 0 {
        // SAFETY: as above.
        let mut ign: libc::sigaction = unsafe { std::mem::zeroed() };
        ign.sa_sigaction = libc::SIG_IGN;
        // SAFETY: valid actions; through corun's own `sigaction`, as the
        // program's call would go.
        unsafe {
            libc::sigaction(libc::SIGINT, &ign, &mut st.int);
            libc::sigaction(libc::SIGQUIT, &ign, &mut st.quit);
        }
    }
    st.count += 1;
    (is_ignored(&st.int), is_ignored(&st.quit))
}

/// Step 4's end: the last call in flight restores the two actions.
fn restore_int_quit() {
    let mut g = crate::sched::fdtable::lock(&IGNORING);
    if let Some(st) = g.as_mut() {
        st.count -= 1;
        if st.count == 0 {
            // SAFETY: the actions saved by `ignore_int_quit`.
            unsafe {
                libc::sigaction(libc::SIGINT, &st.int, std::ptr::null_mut());
                libc::sigaction(libc::SIGQUIT, &st.quit, std::ptr::null_mut());
            }
        }
    }
}

/// Step 3: `/bin/sh -c cmd` with `mask`, SIGINT/SIGQUIT at their defaults
/// unless ignored before. The child's pid, or None.
fn spawn_shell(
    cmd: *const c_char,
    mask: &libc::sigset_t,
    ignored: (bool, bool),
) -> Option<libc::pid_t> {
    // SAFETY: zeroed attribute and set objects are initialised below
    // before use; `cmd` is the caller's NUL-terminated command.
    unsafe {
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        libc::posix_spawnattr_init(&mut attr);
        let mut def: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut def);
        if !ignored.0 {
            libc::sigaddset(&mut def, libc::SIGINT);
        }
        if !ignored.1 {
            libc::sigaddset(&mut def, libc::SIGQUIT);
        }
        libc::posix_spawnattr_setsigdefault(&mut attr, &def);
        libc::posix_spawnattr_setsigmask(&mut attr, mask);
        libc::posix_spawnattr_setflags(
            &mut attr,
            (libc::POSIX_SPAWN_SETSIGDEF | libc::POSIX_SPAWN_SETSIGMASK) as libc::c_short,
        );
        let argv = [
            c"sh".as_ptr() as *mut c_char,
            c"-c".as_ptr() as *mut c_char,
            cmd as *mut c_char,
            std::ptr::null_mut(),
        ];
        let mut pid: libc::pid_t = 0;
        let r = real_spawn::posix_spawn(
            &mut pid,
            c"/bin/sh".as_ptr(),
            std::ptr::null(),
            &attr,
            argv.as_ptr(),
            environ,
        );
        libc::posix_spawnattr_destroy(&mut attr);
        (r == 0).then_some(pid)
    }
}

#[no_mangle]
pub unsafe extern "C" fn system(cmd: *const c_char) -> c_int {
    crate::hooks::listener::child_made();
    if cmd.is_null() || !crate::sched::parking() {
        // SAFETY: the caller's system contract.
        return unsafe { real::system(cmd) };
    }
    let ignored = ignore_int_quit();
    // SAFETY: zeroed sets are valid; through corun's own
    // `pthread_sigmask`, which keeps the thread's mask.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe {
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        libc::pthread_sigmask(libc::SIG_BLOCK, &chld, &mut old);
    }
    let status = match spawn_shell(cmd, &old, ignored) {
        None => 127 << 8,
        Some(pid) => loop {
            let mut st: c_int = 0;
            // SAFETY: the corun `waitpid` hook: it parks.
            let r = unsafe { super::waitpid(pid, &mut st, 0) };
            if r == pid {
                break st;
            }
            if r < 0 && crate::sys::errno() != libc::EINTR {
                break -1;
            }
        },
    };
    let saved = crate::sys::errno();
    // SAFETY: the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    restore_int_quit();
    crate::sys::set_errno(saved);
    status
}
