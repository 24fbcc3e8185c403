//! Trampolines for variadic libc functions whose call must wait first
//! (`scanf`, `printf` and their kin): stable Rust cannot forward a
//! variable argument list, so `gated_variadic!` makes a naked function that
//! saves every register that can carry an argument (the six integer ones,
//! `al` with the number of vector arguments, xmm0-7), asks a gate (given
//! the call's first two arguments) whether to go on, restores them all and
//! jumps to glibc's function, which sees the call exactly as the program
//! made it. A gate answers with glibc's function, or 0 when a signal
//! handler without SA_RESTART ended its wait: the call then returns -1
//! (EOF), errno and the FILE's error flag having been set by the gate.

use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::sys::real::resolve_into;

/// glibc's function `name`, resolved once into `slot`.
pub(super) fn real(slot: &AtomicPtr<c_void>, name: &CStr) -> usize {
    let p = slot.load(Ordering::Acquire);
    if p.is_null() {
        resolve_into(slot, name) as usize
    } else {
        p as usize
    }
}

/// Defines the trampoline `$name`, whose gate (given the call's first two
/// arguments) waits as `$wait` says and answers with glibc's `$name`.
macro_rules! gated_variadic {
    ($name:ident, $gate:ident, |$a0:ident, $a1:ident| $wait:expr) => {
        extern "C" fn $gate($a0: usize, $a1: usize) -> usize {
            static SLOT: std::sync::atomic::AtomicPtr<std::ffi::c_void> =
                std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
            if !$wait {
                return 0;
            }
            $crate::hooks::variadic::real(&SLOT, std::ffi::CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()).unwrap_or_default())
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
pub(super) use gated_variadic;
