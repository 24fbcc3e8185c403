//! The code a preempted coroutine runs on its way back to the scheduler:
//! a trampoline that saves every register, yields, and restores them.
//!
//! The preempt signal's handler (`preempt.rs`) does not switch stacks
//! itself (it runs inside the kernel's signal frame). It rewrites the
//! interrupted context so that, once the kernel's `sigreturn` has put back
//! every register of the interrupted code, the thread "calls"
//! `corun_async_preempt` from the interrupted instruction, as Go's
//! `asyncPreempt` is entered:
//!
//! ```text
//!   rsp' = rsp - 128          (the red zone below rsp is left as is: a leaf
//!                              function may keep live data there)
//!   rip' = corun_async_preempt
//!   corun_preempt_pc (a TLS word of this thread) = interrupted pc
//! ```
//!
//! The handler cannot push the pc itself: below the red zone lies the
//! kernel's signal frame (its FP state save area first), which `sigreturn`
//! reads back. So the trampoline's first instructions make the return
//! address slot and fill it from the thread's TLS word, touching no flag.
//!
//! The trampoline then pushes the flags and the 15 general registers,
//! saves the whole FP/SIMD state (XSAVE of every feature the OS enabled in
//! XCR0 into a 64-byte aligned area of the size CPUID leaf 0xD reports:
//! x87, SSE, AVX, AVX-512, with MXCSR; 11 KB with AMX enabled; FXSAVE
//! where the OS has no XSAVE), resets the x87 stack and MXCSR to what the
//! C ABI gives at a call, calls `preempt::yield_preempted` (the coroutine
//! goes to the back of its worker's run queue and comes back here when it
//! is resumed), restores
//! everything in reverse and returns with `ret 128`, which pops the
//! interrupted pc and drops the red-zone gap: the interrupted code goes on
//! with every register, flag and its stack exactly as they were.
//!
//! Unwind information (CFI) describes the frame as a signal frame whose
//! caller's stack pointer is 128 bytes above the return address, so a
//! backtrace (or `pthread_exit` from a handler run at the preemption)
//! walks through it into the interrupted code.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// Bytes of the XSAVE area (0: use FXSAVE). Read by the trampoline.
static XSAVE_SIZE: AtomicUsize = AtomicUsize::new(0);

/// Whether `XSAVE_SIZE` was read (`ensure_ready`): not yet, the trampoline
/// can be used, or it cannot (the area would not fit).
static READY: AtomicU8 = AtomicU8::new(UNREAD);
const UNREAD: u8 = 0;
const USABLE: u8 = 1;
const UNUSABLE: u8 = 2;

/// Stack the trampoline needs below the red zone, at most (registers,
/// the largest save area, alignment, and the frames of the yield).
pub const STACK_NEEDED: usize = 32 * 1024;

#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".pushsection .text.corun_async_preempt,\"ax\",@progbits",
    ".globl corun_async_preempt",
    ".hidden corun_async_preempt",
    ".type corun_async_preempt,@function",
    ".p2align 4",
    "corun_async_preempt:",
    ".cfi_startproc",
    ".cfi_signal_frame",
    // On entry rsp is the interrupted one less the red zone.
    ".cfi_def_cfa_offset 0",
    ".cfi_val_offset rsp, 128",
    // The return address slot, filled from the TLS word (lea and mov
    // leave the flags alone).
    "lea rsp, [rsp - 8]",
    ".cfi_adjust_cfa_offset 8",
    "push rax",
    ".cfi_adjust_cfa_offset 8",
    "mov rax, qword ptr [rip + corun_preempt_pc@GOTTPOFF]",
    "mov rax, qword ptr fs:[rax]",
    "mov qword ptr [rsp + 8], rax",
    "pop rax",
    ".cfi_adjust_cfa_offset -8",
    // Now as after a call: CFA = rsp + 8, the interrupted rsp 128 above it.
    ".cfi_val_offset rsp, 128",
    "pushfq",
    ".cfi_adjust_cfa_offset 8",
    "push rax",
    ".cfi_adjust_cfa_offset 8",
    "push rbx",
    ".cfi_adjust_cfa_offset 8",
    ".cfi_rel_offset rbx, 0",
    "push rcx",
    ".cfi_adjust_cfa_offset 8",
    "push rdx",
    ".cfi_adjust_cfa_offset 8",
    "push rsi",
    ".cfi_adjust_cfa_offset 8",
    "push rdi",
    ".cfi_adjust_cfa_offset 8",
    "push rbp",
    ".cfi_adjust_cfa_offset 8",
    ".cfi_rel_offset rbp, 0",
    "push r8",
    ".cfi_adjust_cfa_offset 8",
    "push r9",
    ".cfi_adjust_cfa_offset 8",
    "push r10",
    ".cfi_adjust_cfa_offset 8",
    "push r11",
    ".cfi_adjust_cfa_offset 8",
    "push r12",
    ".cfi_adjust_cfa_offset 8",
    ".cfi_rel_offset r12, 0",
    "push r13",
    ".cfi_adjust_cfa_offset 8",
    ".cfi_rel_offset r13, 0",
    "push r14",
    ".cfi_adjust_cfa_offset 8",
    ".cfi_rel_offset r14, 0",
    "push r15",
    ".cfi_adjust_cfa_offset 8",
    ".cfi_rel_offset r15, 0",
    // 16 words pushed: CFA = rbp + 136 from here on.
    "mov rbp, rsp",
    ".cfi_def_cfa_register rbp",
    // The C ABI wants the direction flag clear at a call.
    "cld",
    "mov rax, qword ptr [rip + {size}]",
    "test rax, rax",
    "jz 2f",
    "sub rsp, rax",
    "and rsp, -64",
    // XRSTOR faults unless the header's reserved bytes (XCOMP_BV and the
    // rest after XSTATE_BV) are zero; XSAVE writes XSTATE_BV only.
    "xor eax, eax",
    "mov qword ptr [rsp + 512], rax",
    "mov qword ptr [rsp + 520], rax",
    "mov qword ptr [rsp + 528], rax",
    "mov qword ptr [rsp + 536], rax",
    "mov qword ptr [rsp + 544], rax",
    "mov qword ptr [rsp + 552], rax",
    "mov qword ptr [rsp + 560], rax",
    "mov qword ptr [rsp + 568], rax",
    "mov eax, -1",
    "mov edx, -1",
    "xsave64 [rsp]",
    "call 4f",
    "mov eax, -1",
    "mov edx, -1",
    "xrstor64 [rsp]",
    "jmp 3f",
    "2:",
    "sub rsp, 512",
    "and rsp, -64",
    "fxsave64 [rsp]",
    "call 4f",
    "fxrstor64 [rsp]",
    "3:",
    "mov rsp, rbp",
    ".cfi_def_cfa_register rsp",
    "pop r15",
    ".cfi_adjust_cfa_offset -8",
    "pop r14",
    ".cfi_adjust_cfa_offset -8",
    "pop r13",
    ".cfi_adjust_cfa_offset -8",
    "pop r12",
    ".cfi_adjust_cfa_offset -8",
    "pop r11",
    ".cfi_adjust_cfa_offset -8",
    "pop r10",
    ".cfi_adjust_cfa_offset -8",
    "pop r9",
    ".cfi_adjust_cfa_offset -8",
    "pop r8",
    ".cfi_adjust_cfa_offset -8",
    "pop rbp",
    ".cfi_adjust_cfa_offset -8",
    "pop rdi",
    ".cfi_adjust_cfa_offset -8",
    "pop rsi",
    ".cfi_adjust_cfa_offset -8",
    "pop rdx",
    ".cfi_adjust_cfa_offset -8",
    "pop rcx",
    ".cfi_adjust_cfa_offset -8",
    "pop rbx",
    ".cfi_adjust_cfa_offset -8",
    "pop rax",
    ".cfi_adjust_cfa_offset -8",
    "popfq",
    ".cfi_adjust_cfa_offset -8",
    "ret 128",
    // The scheduler and the coroutine it resumes next expect the state
    // the C ABI gives at a call: an empty x87 stack (XSAVE and FXSAVE
    // leave the interrupted code's values in it: the next coroutine's
    // first `fld` found it full and computed NaNs), default x87 control
    // and MXCSR, clean AVX upper halves. The saved state comes back with
    // the XRSTOR/FXRSTOR above.
    "4:",
    "fninit",
    "push 0x1f80",
    "ldmxcsr dword ptr [rsp]",
    "pop rax",
    "jmp {yield_fn}",
    ".cfi_endproc",
    ".size corun_async_preempt, . - corun_async_preempt",
    ".popsection",
    // The interrupted pc, per thread (a coroutine with a thread pointer of
    // its own has its own copy: the handler and the trampoline run on the
    // same thread pointer).
    ".pushsection .tbss,\"awT\",@nobits",
    ".p2align 3",
    ".globl corun_preempt_pc",
    ".hidden corun_preempt_pc",
    ".type corun_preempt_pc,@object",
    ".size corun_preempt_pc, 8",
    "corun_preempt_pc:",
    ".zero 8",
    ".popsection",
    yield_fn = sym super::preempt::yield_preempted,
    size = sym XSAVE_SIZE,
);

#[cfg(target_arch = "x86_64")]
extern "C" {
    fn corun_async_preempt();
}

/// Where the handler sends the interrupted thread.
#[cfg(target_arch = "x86_64")]
pub fn entry() -> usize {
    corun_async_preempt as *const () as usize
}

/// Stores the interrupted pc where the trampoline takes it from.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn set_return_pc(pc: usize) {
    // SAFETY: writes this thread's copy of the TLS word defined above
    // (initial-exec: libcorun is loaded with the program).
    unsafe {
        std::arch::asm!(
            "mov {t}, qword ptr [rip + corun_preempt_pc@GOTTPOFF]",
            "mov qword ptr fs:[{t}], {pc}",
            t = out(reg) _,
            pc = in(reg) pc,
            options(nostack, preserves_flags)
        )
    };
}

/// Whether the trampoline can be entered: on the first call, reads which
/// save instruction the CPU and OS allow and how large an area XSAVE
/// needs; false when the area would not fit the stack budget.
///
/// Read when the first redirect is about to be made, not when the process
/// starts: on a virtual machine each `cpuid` traps to the hypervisor (13 us
/// on this one), and most processes (a compiler, a shell command) never
/// preempt. Async-signal-safe (two instructions and atomics): it runs in
/// the handler that redirects; two threads that race both read the same
/// values and store the same answer.
pub fn ensure_ready() -> bool {
    match READY.load(Ordering::Acquire) {
        USABLE => true,
        UNUSABLE => false,
        _ => {
            let ok = read_save_area();
            READY.store(if ok { USABLE } else { UNUSABLE }, Ordering::Release);
            ok
        }
    }
}

/// Reads which save instruction the CPU and OS allow, and how large an
/// area XSAVE needs. False when the area would not fit the stack budget.
#[cfg(target_arch = "x86_64")]
fn read_save_area() -> bool {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    // CPUID exists on every x86_64 CPU; leaf 1 always.
    let l1 = __cpuid(1);
    let osxsave = l1.ecx & (1 << 27) != 0;
    if !osxsave {
        XSAVE_SIZE.store(0, Ordering::Relaxed);
        return true;
    }
    // Leaf 0xD exists when the OS enabled XSAVE; EBX is the area size for
    // the features enabled in XCR0 now.
    let d = __cpuid_count(0xd, 0);
    let size = (d.ebx as usize).max(576);
    if size + 64 > STACK_NEEDED / 2 {
        return false;
    }
    XSAVE_SIZE.store(size, Ordering::Relaxed);
    true
}

#[cfg(not(target_arch = "x86_64"))]
fn read_save_area() -> bool {
    false
}

#[cfg(not(target_arch = "x86_64"))]
pub fn entry() -> usize {
    0
}
