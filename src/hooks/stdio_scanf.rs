//! The `scanf` family on a pipe, socket or terminal: the thread waits for
//! input first, parked, then glibc scans (as `stdio.rs` does for `fgets`).
//!
//! glibc fills a FILE's buffer through its internal `__read`, which no hook
//! sees: a thread in `scanf("%d")` on an empty pipe blocked its worker, and
//! every other thread there waited for the input.
//!
//! The `v` forms take a `va_list`, which the x86_64 ABI passes as a
//! pointer: they are ordinary hooks. `scanf` and `fscanf` are variadic,
//! and stable Rust cannot forward a variable argument list, so each is a
//! small trampoline (`scanf_trampoline!`): it saves every register that
//! can carry an argument (the six integer ones, `al` with the number of
//! vector arguments, xmm0-7), asks a gate whether to go on, restores them
//! all and jumps to glibc's function, which sees the call exactly as the
//! program made it. The gate waits for input and answers with glibc's
//! function, or with 0 when a handler without SA_RESTART ended the wait:
//! the call then returns EOF with errno EINTR and the FILE's error flag
//! set, as glibc's does when its read fails so. The `__isoc99_`/`__isoc23_`
//! names are what C compilers call for `scanf` under the C99/C23
//! standards.
//!
//! A buffer holding only white space counts as empty when the format
//! starts by skipping it (the newline a previous `scanf("%d")` left).
//! Not covered, as for `fgets`: input a conversion needs beyond what
//! arrived at once (glibc reads again and may wait inside, its worker
//! with it). The wide forms are `stdio_wide.rs`.

use std::ffi::{c_char, c_int, c_void};

use libc::FILE;

use super::scanf_format::skips_blanks_first;
use super::stdio::{stdin_file, wait_input_beyond};
use super::variadic::gated_variadic as scanf_trampoline;

/// The wait of a scan of `fmt` on `f`.
fn wait_scan(f: *mut FILE, fmt: *const c_char) -> bool {
    wait_input_beyond(f, skips_blanks_first(fmt))
}

scanf_trampoline!(scanf, gate_scanf, |fmt, _a| wait_scan(
    stdin_file(),
    fmt as _
));
scanf_trampoline!(__isoc99_scanf, gate_isoc99_scanf, |fmt, _a| wait_scan(
    stdin_file(),
    fmt as _
));
scanf_trampoline!(__isoc23_scanf, gate_isoc23_scanf, |fmt, _a| wait_scan(
    stdin_file(),
    fmt as _
));
scanf_trampoline!(fscanf, gate_fscanf, |f, fmt| wait_scan(f as _, fmt as _));
scanf_trampoline!(__isoc99_fscanf, gate_isoc99_fscanf, |f, fmt| wait_scan(
    f as _, fmt as _
));
scanf_trampoline!(__isoc23_fscanf, gate_isoc23_fscanf, |f, fmt| wait_scan(
    f as _, fmt as _
));

/// The `v` forms: `va_list` is a pointer here (x86_64).
#[allow(non_snake_case)]
mod va {
    use super::*;
    mod real {
        use super::{c_char, c_int, c_void, FILE};
        crate::sys::real::real_fns! {
            fn vscanf(fmt: *const c_char, ap: *mut c_void) -> c_int;
            fn vfscanf(f: *mut FILE, fmt: *const c_char, ap: *mut c_void) -> c_int;
            fn __isoc99_vscanf(fmt: *const c_char, ap: *mut c_void) -> c_int;
            fn __isoc99_vfscanf(f: *mut FILE, fmt: *const c_char, ap: *mut c_void) -> c_int;
            fn __isoc23_vscanf(fmt: *const c_char, ap: *mut c_void) -> c_int;
            fn __isoc23_vfscanf(f: *mut FILE, fmt: *const c_char, ap: *mut c_void) -> c_int;
        }
    }

    macro_rules! v_hook {
        ($name:ident ($($arg:ident : $ty:ty),*), $wait:expr) => {
            #[no_mangle]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
                if !$wait {
                    return libc::EOF;
                }
                // SAFETY: the caller's contract.
                unsafe { real::$name($($arg),*) }
            }
        };
    }

    v_hook!(vscanf(fmt: *const c_char, ap: *mut c_void), wait_scan(stdin_file(), fmt));
    v_hook!(__isoc99_vscanf(fmt: *const c_char, ap: *mut c_void), wait_scan(stdin_file(), fmt));
    v_hook!(vfscanf(f: *mut FILE, fmt: *const c_char, ap: *mut c_void), wait_scan(f, fmt));
    v_hook!(__isoc99_vfscanf(f: *mut FILE, fmt: *const c_char, ap: *mut c_void), wait_scan(f, fmt));
    v_hook!(__isoc23_vscanf(fmt: *const c_char, ap: *mut c_void), wait_scan(stdin_file(), fmt));
    v_hook!(__isoc23_vfscanf(f: *mut FILE, fmt: *const c_char, ap: *mut c_void), wait_scan(f, fmt));
}
