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
//! with it), and the wide forms.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

use libc::FILE;

use super::scanf_format::skips_blanks_first;
use super::stdio::{stdin_file, wait_input_beyond};
use crate::sys::real::resolve_into;

/// glibc's function `name`, resolved once into `slot`.
fn real(slot: &AtomicPtr<c_void>, name: &CStr) -> usize {
    let p = slot.load(Ordering::Acquire);
    if p.is_null() {
        resolve_into(slot, name) as usize
    } else {
        p as usize
    }
}

/// The wait of a scan of `fmt` on `f`.
fn wait_scan(f: *mut FILE, fmt: *const c_char) -> bool {
    wait_input_beyond(f, skips_blanks_first(fmt))
}

/// Defines the trampoline `$name`, whose gate (given the call's first two
/// arguments) waits as `$wait` says and answers with glibc's `$name`.
macro_rules! scanf_trampoline {
    ($name:ident, $gate:ident, |$a0:ident, $a1:ident| $wait:expr) => {
        extern "C" fn $gate($a0: usize, $a1: usize) -> usize {
            static SLOT: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
            if !$wait {
                return 0;
            }
            real(&SLOT, CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()).unwrap_or_default())
        }

        #[cfg(target_arch = "x86_64")]
        #[unsafe(naked)]
        #[no_mangle]
        pub unsafe extern "C" fn $name() {
            core::arch::naked_asm!(
                // Entry: rsp = 8 mod 16. Seven pushes and 128 bytes leave
                // it 0 mod 16 for the call, as the ABI wants.
                "push rdi",
                "push rsi",
                "push rdx",
                "push rcx",
                "push r8",
                "push r9",
                "push rax",
                "sub rsp, 128",
                "movdqu [rsp], xmm0",
                "movdqu [rsp + 16], xmm1",
                "movdqu [rsp + 32], xmm2",
                "movdqu [rsp + 48], xmm3",
                "movdqu [rsp + 64], xmm4",
                "movdqu [rsp + 80], xmm5",
                "movdqu [rsp + 96], xmm6",
                "movdqu [rsp + 112], xmm7",
                // rdi and rsi are still the caller's first two arguments.
                "call {gate}",
                "mov r11, rax",
                "movdqu xmm0, [rsp]",
                "movdqu xmm1, [rsp + 16]",
                "movdqu xmm2, [rsp + 32]",
                "movdqu xmm3, [rsp + 48]",
                "movdqu xmm4, [rsp + 64]",
                "movdqu xmm5, [rsp + 80]",
                "movdqu xmm6, [rsp + 96]",
                "movdqu xmm7, [rsp + 112]",
                "add rsp, 128",
                "pop rax",
                "pop r9",
                "pop r8",
                "pop rcx",
                "pop rdx",
                "pop rsi",
                "pop rdi",
                "test r11, r11",
                "jz 2f",
                "jmp r11",
                // Interrupted: EOF (errno and the error flag already set).
                "2:",
                "mov eax, -1",
                "ret",
                gate = sym $gate,
            )
        }
    };
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
