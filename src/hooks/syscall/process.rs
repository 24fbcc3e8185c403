//! The system calls that make or confine a process, when the program
//! makes them through `syscall()`: `SYS_fork`, `SYS_clone`, `SYS_clone3`
//! (a new process gets fork's treatment: `hooks::process::clone`) and
//! `SYS_seccomp` (corun stands aside first: `hooks::process::seccomp`).
//! The trampoline in `mod.rs` sends exactly these numbers here.

use std::ffi::c_long;

use super::real6;
use crate::hooks::process::{clone, seccomp};

/// Whether `syscall(n, ...)` comes here.
pub(super) const NUMBERS: [c_long; 4] = [
    libc::SYS_fork,
    libc::SYS_clone,
    libc::SYS_clone3,
    libc::SYS_seccomp,
];

/// The call, made with what corun must do around it.
pub(super) fn call(n: c_long, a: [c_long; 6]) -> c_long {
    if n == libc::SYS_seccomp {
        seccomp::before_filter(
            a[0] == libc::SECCOMP_SET_MODE_FILTER as c_long
                || a[0] == libc::SECCOMP_SET_MODE_STRICT as c_long,
        );
        return real6(n, a);
    }
    clone::raw(n, a, || real6(n, a)).unwrap_or_else(|| real6(n, a))
}
