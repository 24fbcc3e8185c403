//! `prctl` (PR_SET_NAME and PR_GET_NAME: `hooks/pthread/name.rs`;
//! PR_SET_TIMERSLACK and PR_GET_TIMERSLACK: `hooks/pthread/slack_ioprio.rs`).
//!
//! `prctl(PR_SET_SECCOMP)` and `syscall(SYS_seccomp)` (the `syscall` hook
//! hands that number over): before the program's filter is installed,
//! corun stands aside for good (`sched::confined`, docs/ARCHITECTURE.md
//! §5.9).
//!
//! sshd's sandbox child installs a filter that allows `write` but not
//! `sendmsg`, `epoll_wait` or `preadv2`; a parking `write` there made
//! `sendmsg` and the filter killed the child. Once confined, every hook
//! is a passthrough, so the only system calls made are the program's own.
//! A failed installation leaves corun standing aside all the same (there
//! is no telling beforehand; the process merely loses the parking).

use std::ffi::{c_int, c_ulong};

mod next {
    use std::ffi::{c_int, c_ulong};
    crate::sys::real::real_fns! {
        fn prctl(option: c_int, a2: c_ulong, a3: c_ulong, a4: c_ulong, a5: c_ulong) -> c_int;
    }
}

/// Called just before a seccomp call that may install a filter
/// (`installs`).
pub(crate) fn before_filter(installs: bool) {
    if installs {
        crate::sched::confined::enter();
    }
}

/// glibc's `prctl`. Variadic in C; the four arguments after `option` are
/// where a non-variadic function finds them, and are passed on as they
/// came.
#[no_mangle]
pub unsafe extern "C" fn prctl(
    option: c_int,
    a2: c_ulong,
    a3: c_ulong,
    a4: c_ulong,
    a5: c_ulong,
) -> c_int {
    if option == libc::PR_SET_SECCOMP {
        before_filter(true);
    }
    // SAFETY: the caller's prctl contract for these options.
    if let Some(r) = unsafe { crate::hooks::pthread::prctl_name(option, a2) } {
        return r;
    }
    if let Some(r) = crate::hooks::pthread::prctl_slack(option, a2) {
        return r;
    }
    // SAFETY: the caller's prctl contract.
    unsafe { next::prctl(option, a2, a3, a4, a5) }
}
