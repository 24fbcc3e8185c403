//! The ucontext calls: `getcontext`, `setcontext`, `swapcontext`, and the
//! return of a `makecontext` function to its `uc_link`.
//!
//! glibc's versions read and set the signal mask with an inline
//! `rt_sigprocmask`, past the mask hooks (`sigmask.rs`): in a coroutine
//! they saved the worker's kernel mask instead of the thread's, restored
//! none of the thread's, and set the worker's kernel mask to whatever a
//! context held (a context made with a filled `uc_sigmask` closed the
//! worker to every signal for every coroutine on it, until the workers'
//! mask next changed: on one worker the process ignored even SIGTERM).
//!
//! In a coroutine (outside a signal handler) each is made of glibc's own
//! calls around the coroutine's mask:
//!
//! - `getcontext`: glibc's, then the caller's registers and return point
//!   written into the context (glibc saw this hook's frame), and the
//!   coroutine's mask into `uc_sigmask`;
//! - `setcontext`: the context's `uc_sigmask` becomes the coroutine's mask
//!   (as `sigprocmask(SIG_SETMASK)`: a signal it unblocks is delivered
//!   here), then glibc's `setcontext` on a copy whose mask is the workers'
//!   kernel mask, so that glibc's system call changes nothing;
//! - `swapcontext`: `getcontext` into the first, `setcontext` of the second;
//! - a context `makecontext` made: the return address glibc put at the top
//!   of its stack (its `__start_context`, which calls its own `setcontext`
//!   with `uc_link`, or `exit(0)`) is replaced, when the context is first
//!   set, by `start_context` below, which does the same through this hook.
//!
//! Outside coroutines, and in a handler, the calls are glibc's.

#[cfg(target_arch = "x86_64")]
pub use imp::*;

#[cfg(target_arch = "x86_64")]
mod imp {
    use std::ffi::c_int;
    use std::mem::offset_of;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use libc::{greg_t, ucontext_t};

    use crate::sched::park::in_signal_handler;
    use crate::sched::sigmask;

    mod real {
        use libc::{c_int, ucontext_t};
        crate::sys::real::real_fns! {
            fn getcontext(ucp: *mut ucontext_t) -> c_int;
            fn setcontext(ucp: *const ucontext_t) -> c_int;
        }
    }

    /// Offset of general register `r` in a ucontext_t.
    const fn greg(r: c_int) -> usize {
        offset_of!(ucontext_t, uc_mcontext) + r as usize * std::mem::size_of::<greg_t>()
    }
    const RBX: usize = greg(libc::REG_RBX);
    const RBP: usize = greg(libc::REG_RBP);
    const R12: usize = greg(libc::REG_R12);
    const R13: usize = greg(libc::REG_R13);
    const R14: usize = greg(libc::REG_R14);
    const R15: usize = greg(libc::REG_R15);
    const RSP: usize = greg(libc::REG_RSP);
    const RIP: usize = greg(libc::REG_RIP);

    /// Whether the caller's mask is a coroutine's that these hooks keep.
    fn ours() -> bool {
        crate::sched::current().is_some() && !crate::sched::confined::is() && !in_signal_handler()
    }

    /// glibc's getcontext into `ucp`, then the coroutine's mask in it.
    /// The registers and return point glibc saved are this call's: the
    /// naked callers below put their caller's in.
    extern "C" fn save(ucp: *mut ucontext_t) -> c_int {
        // SAFETY: the program's out-buffer, as it passed it to getcontext.
        let r = unsafe { real::getcontext(ucp) };
        if r == 0 && ours() {
            // SAFETY: as above; the hook writes the kernel's 8 bytes of the
            // set with the coroutine's mask.
            unsafe {
                crate::hooks::sigmask::pthread_sigmask(
                    libc::SIG_BLOCK,
                    std::ptr::null(),
                    std::ptr::addr_of_mut!((*ucp).uc_sigmask),
                )
            };
        }
        r
    }

    /// The asm that writes the caller's callee-saved registers, stack
    /// pointer (past the return address) and return address into the
    /// context at rdi, at the offsets the `rbx`... operands name.
    macro_rules! store_caller {
        () => {
            concat!(
                "mov qword ptr [rdi + {rbx}], rbx\n",
                "mov qword ptr [rdi + {rbp}], rbp\n",
                "mov qword ptr [rdi + {r12}], r12\n",
                "mov qword ptr [rdi + {r13}], r13\n",
                "mov qword ptr [rdi + {r14}], r14\n",
                "mov qword ptr [rdi + {r15}], r15\n",
                "mov rcx, qword ptr [rsp]\n",
                "mov qword ptr [rdi + {rip}], rcx\n",
                "lea rcx, [rsp + 8]\n",
                "mov qword ptr [rdi + {rsp}], rcx",
            )
        };
    }

    /// getcontext: `save`, then the caller's callee-saved registers (the
    /// call preserved them), stack pointer and return address.
    #[unsafe(naked)]
    #[no_mangle]
    pub unsafe extern "C" fn getcontext(ucp: *mut ucontext_t) -> c_int {
        core::arch::naked_asm!(
            "push rdi",
            "call {save}",
            "pop rdi",
            "test eax, eax",
            "jnz 2f",
            store_caller!(),
            "2:",
            "ret",
            save = sym save,
            rbx = const RBX, rbp = const RBP, r12 = const R12, r13 = const R13,
            r14 = const R14, r15 = const R15, rip = const RIP, rsp = const RSP,
        )
    }

    /// swapcontext: as getcontext into `oucp` (resumed, it returns 0 to the
    /// caller), then `set` of `ucp`.
    #[unsafe(naked)]
    #[no_mangle]
    pub unsafe extern "C" fn swapcontext(oucp: *mut ucontext_t, ucp: *const ucontext_t) -> c_int {
        core::arch::naked_asm!(
            "push rsi",
            "push rdi",
            "sub rsp, 8",
            "call {save}",
            "add rsp, 8",
            "pop rdi",
            "pop rsi",
            "test eax, eax",
            "jnz 2f",
            store_caller!(),
            "mov rdi, rsi",
            "jmp {set}",
            "2:",
            "ret",
            save = sym save,
            set = sym set,
            rbx = const RBX, rbp = const RBP, r12 = const R12, r13 = const R13,
            r14 = const R14, r15 = const R15, rip = const RIP, rsp = const RSP,
        )
    }

    #[no_mangle]
    pub unsafe extern "C" fn setcontext(ucp: *const ucontext_t) -> c_int {
        set(ucp)
    }

    /// Makes `ucp` the current context (returns only on failure).
    extern "C" fn set(ucp: *const ucontext_t) -> c_int {
        if ucp.is_null() || !ours() {
            // SAFETY: the program's call, as it made it.
            return unsafe { real::setcontext(ucp) };
        }
        // SAFETY: the program's context, readable (glibc reads it too).
        unsafe { patch_fresh(ucp) };
        // SAFETY: as above.
        let mask = unsafe { std::ptr::addr_of!((*ucp).uc_sigmask) };
        // SAFETY: a readable set; the old mask is not asked for.
        unsafe {
            crate::hooks::sigmask::pthread_sigmask(libc::SIG_SETMASK, mask, std::ptr::null_mut())
        };
        // SAFETY: a plain copy of the program's context; its fpregs pointer
        // still points into the original, which glibc reads the FPU
        // environment from, as it would.
        let mut copy: ucontext_t = unsafe { std::ptr::read(ucp) };
        // SAFETY: the copy's set is ours; its first 8 bytes are the kernel's.
        unsafe {
            *(std::ptr::addr_of_mut!(copy.uc_sigmask) as *mut u64) = sigmask::kernel_mask();
            real::setcontext(&copy)
        }
    }

    /// glibc's `__start_context` (not exported): the return address
    /// `makecontext` leaves at the top of a context's stack.
    static START: AtomicUsize = AtomicUsize::new(0);

    extern "C" fn never_run() {}

    fn glibc_start_context() -> usize {
        let s = START.load(Ordering::Relaxed);
        if s != 0 {
            return s;
        }
        let mut stack = [0u64; 64];
        // SAFETY: a zeroed ucontext_t is valid; makecontext writes into
        // `stack` only and the context is never set.
        let s = unsafe {
            let mut uc: ucontext_t = std::mem::zeroed();
            uc.uc_stack.ss_sp = stack.as_mut_ptr().cast();
            uc.uc_stack.ss_size = std::mem::size_of_val(&stack);
            libc::makecontext(&mut uc, never_run, 0);
            *(uc.uc_mcontext.gregs[libc::REG_RSP as usize] as *const usize)
        };
        START.store(s, Ordering::Relaxed);
        s
    }

    /// A context as `makecontext` left it (glibc: its stack pointer 8 past
    /// a 16-byte boundary holding `__start_context`, rbx pointing a few
    /// words above at `uc_link`) gets `start_context` as its return address.
    ///
    /// # Safety
    /// `ucp` is a readable context whose stack pointer, if it is one
    /// `makecontext` made, is that of writable memory.
    unsafe fn patch_fresh(ucp: *const ucontext_t) {
        // SAFETY: readable per the contract.
        let g = unsafe { &(*ucp).uc_mcontext.gregs };
        let sp = g[libc::REG_RSP as usize] as usize;
        let rbx = g[libc::REG_RBX as usize] as usize;
        if sp == 0 || sp % 16 != 8 || rbx <= sp || rbx - sp > 4096 || !rbx.is_multiple_of(8) {
            return;
        }
        // SAFETY: the context's stack pointer: the stack it runs on, mapped
        // (glibc's setcontext is about to use it).
        let top = unsafe { *(sp as *const usize) };
        // SAFETY: rbx lies a few words above, in the same stack.
        if top != glibc_start_context()
            || unsafe { *(rbx as *const usize) } != unsafe { (*ucp).uc_link } as usize
        {
            return;
        }
        // SAFETY: as above: the word makecontext wrote.
        unsafe { *(sp as *mut usize) = start_context as *const () as usize };
    }

    /// What a makecontext function returns to: rbx points at `uc_link`
    /// (as glibc's `__start_context` finds it); that context is set, or,
    /// with none (or if setting it fails), the process exits, as glibc's.
    #[unsafe(naked)]
    unsafe extern "C" fn start_context() -> ! {
        core::arch::naked_asm!(
            "mov rsp, rbx",
            "and rsp, -16",
            "mov rdi, qword ptr [rbx]",
            "test rdi, rdi",
            "je 2f",
            "call {set}",
            "mov edi, eax",
            "2:",
            "call {end}",
            "ud2",
            set = sym set,
            end = sym end,
        )
    }

    extern "C" fn end(code: c_int) -> ! {
        // SAFETY: what glibc's __start_context calls.
        unsafe { libc::exit(code) }
    }
}
