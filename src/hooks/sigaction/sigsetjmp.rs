//! `__sigsetjmp` (what `sigsetjmp` expands to): with a mask to save, a
//! coroutine's own mask goes into the `sigjmp_buf` next to the one glibc
//! saves, which is the worker's kernel mask (glibc reads it with an inline
//! system call, past the mask hooks). The long jumps (`sigaction.rs`,
//! `before_jump`) make it the coroutine's mask again, as natively the
//! jump restores the mask `sigsetjmp` saved.
//!
//! The kernel reads and writes 8 bytes of a 128-byte `sigset_t`; the
//! coroutine's mask is kept in the second word of the saved set, the third
//! holding it xor a tag, so that a buffer glibc filled for a native thread
//! (or a copy of another's) is not taken for one of ours.

/// Offset of the saved set in glibc's `struct __jmp_buf_tag`.
#[cfg(target_arch = "x86_64")]
pub const JB_SAVED_MASK: usize = 72;
#[cfg(target_arch = "aarch64")]
pub const JB_SAVED_MASK: usize = 184;

const TAG: u64 = 0x636f_7275_6e6d_736b;

/// The coroutine's mask `env` holds, if `__sigsetjmp` stored one.
///
/// # Safety
/// `env` is a `sigjmp_buf` filled by `sigsetjmp(env, 1)`.
pub unsafe fn stored(env: *const u8) -> Option<u64> {
    // SAFETY: the saved set's second and third words, in the buffer.
    let (m, check) = unsafe {
        (
            *(env.add(JB_SAVED_MASK + 8) as *const u64),
            *(env.add(JB_SAVED_MASK + 16) as *const u64),
        )
    };
    (check == m ^ TAG).then_some(m)
}

#[cfg(target_arch = "x86_64")]
pub use imp::{__sigsetjmp, setjmp};

#[cfg(target_arch = "x86_64")]
mod imp {
    use std::ffi::c_void;
    use std::sync::atomic::{AtomicPtr, Ordering};

    use super::{JB_SAVED_MASK, TAG};

    /// glibc's `__sigsetjmp`, once resolved.
    static REAL: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

    /// Stores the coroutine's mask in `env` (when a mask is saved), and
    /// returns glibc's `__sigsetjmp`.
    extern "C" fn prepare(env: *mut u8, savemask: i32) -> *mut c_void {
        if savemask != 0 && !env.is_null() {
            let mask = crate::sched::current()
                .filter(|_| !crate::sched::confined::is())
                .map(|t| t.ident.sigmask.load(Ordering::SeqCst));
            let (m, check) = match mask {
                Some(m) => (m, m ^ TAG),
                None => (0, 0),
            };
            // SAFETY: a sigjmp_buf (savemask set): its saved set is 128
            // bytes, of which glibc writes the first 8.
            unsafe {
                *(env.add(JB_SAVED_MASK + 8) as *mut u64) = m;
                *(env.add(JB_SAVED_MASK + 16) as *mut u64) = check;
            }
        }
        let p = REAL.load(Ordering::Acquire);
        if p.is_null() {
            crate::sys::real::resolve_into(&REAL, c"__sigsetjmp")
        } else {
            p
        }
    }

    /// Returns twice, so no frame of ours may stay: `prepare` is called
    /// with the arguments kept, then glibc's is entered by a jump, seeing
    /// the caller's stack and return address as it would.
    #[unsafe(naked)]
    #[no_mangle]
    pub unsafe extern "C" fn __sigsetjmp(env: *mut c_void, savemask: i32) -> i32 {
        core::arch::naked_asm!(
            "mov rax, qword ptr [rip + {real}@GOTPCREL]",
            "mov rax, qword ptr [rax]",
            "test esi, esi",
            "jnz 2f",
            "test rax, rax",
            "jz 2f",
            "jmp rax",
            "2:",
            "push rdi",
            "push rsi",
            "sub rsp, 8",
            "call {prepare}",
            "add rsp, 8",
            "pop rsi",
            "pop rdi",
            "jmp rax",
            real = sym REAL,
            prepare = sym prepare,
        )
    }

    /// The `setjmp` symbol (BSD: it saves the mask; the `setjmp` macro of
    /// <setjmp.h> is `_setjmp`, which does not): glibc's tail-calls its
    /// `__sigsetjmp` inside libc, past the hook above, and would leave the
    /// words an earlier `sigsetjmp` stored in the buffer for the jump.
    #[unsafe(naked)]
    #[no_mangle]
    pub unsafe extern "C" fn setjmp(env: *mut c_void) -> i32 {
        core::arch::naked_asm!("mov esi, 1", "jmp {sigsetjmp}", sigsetjmp = sym __sigsetjmp)
    }
}
