//! Thread-local words read at a fixed offset from the thread pointer
//! (the initial-exec TLS model), for what the scheduler touches on every
//! switch: the running task, the worker, the signal-handler depths.
//!
//! Why: `thread_local!` in a shared library is general-dynamic, so every
//! access is a call of ld.so's `__tls_get_addr` (11 instructions and the
//! call): a spawn+join made six, a yield one. Here the word's address is
//! two instructions (`%fs:0`, plus its offset from the GOT), as glibc's
//! `__errno_location` computes errno's.
//!
//! Why it holds: libcorun is preloaded or linked at start, so its TLS
//! block sits in the static TLS of every thread at one offset, which the
//! linker resolves (`@GOTTPOFF`; the library is marked `DF_STATIC_TLS`).
//! The blocks corun makes for coroutine threads come from ld.so's
//! `_dl_allocate_tls` with the same layout (`ctx/tls.rs`; `prefetch.rs`
//! relies on the same fact).
//!
//! The words are defined in `.tbss` here (zero at thread start, as the
//! `const` thread-locals they replace were). Each access reads `%fs:0` at
//! the moment it runs, so it is never stale after a switch of the thread
//! pointer (`resume.rs`).
//!
//! errno: a yield or park finds its slot from these words and the
//! offset the worker learnt when it attached (`sched::park::suspend`),
//! not with two calls of `__errno_location`. (Tried once before, timed
//! by wall clock: the round trip looked slower, 101 ns against 76; with
//! the words looked up once a yield, callgrind counts 6 fewer
//! instructions for the errno part, and CPU time per round trip under
//! load did not get worse.)

core::arch::global_asm!(
    ".pushsection .tbss,\"awT\",@nobits",
    ".p2align 3",
    ".globl corun_tls_current",
    ".hidden corun_tls_current",
    ".type corun_tls_current,@object",
    ".size corun_tls_current,8",
    "corun_tls_current: .zero 8",
    ".globl corun_tls_worker",
    ".hidden corun_tls_worker",
    ".type corun_tls_worker,@object",
    ".size corun_tls_worker,8",
    "corun_tls_worker: .zero 8",
    ".globl corun_tls_signal_depth",
    ".hidden corun_tls_signal_depth",
    ".type corun_tls_signal_depth,@object",
    ".size corun_tls_signal_depth,8",
    "corun_tls_signal_depth: .zero 8",
    ".globl corun_tls_async_depth",
    ".hidden corun_tls_async_depth",
    ".type corun_tls_async_depth,@object",
    ".size corun_tls_async_depth,8",
    "corun_tls_async_depth: .zero 8",
    ".popsection",
);

macro_rules! static_tls_word {
    ($(#[$m:meta])* $name:ident, $sym:literal) => {
        $(#[$m])*
        pub struct $name;

        impl $name {
            /// The calling thread's value.
            #[inline(always)]
            pub fn get() -> usize {
                // SAFETY: `addr` is this thread's word (module doc).
                unsafe { *(Self::addr() as *const usize) }
            }

            /// Sets the calling thread's value.
            #[inline(always)]
            pub fn set(v: usize) {
                // SAFETY: as in `get`; only this thread uses its word.
                unsafe { *(Self::addr() as *mut usize) = v }
            }

            /// The word's address in the calling thread's block.
            #[inline(always)]
            pub fn addr() -> usize {
                let a: usize;
                // SAFETY: as in `get`; `%fs:0` holds the thread pointer
                // itself (the TCB's `tcb` word, in blocks corun makes too).
                unsafe {
                    core::arch::asm!(
                        "mov {a}, qword ptr fs:[0]",
                        concat!("add {a}, qword ptr [rip + ", $sym, "@GOTTPOFF]"),
                        a = out(reg) a,
                        options(nostack, readonly)
                    )
                };
                a
            }
        }
    };
}

static_tls_word!(
    /// The task running on this thread (`sched::worker::current_task_ptr`).
    Current,
    "corun_tls_current"
);
static_tls_word!(
    /// The worker this thread drives (`sched::worker::current_worker`).
    WorkerWord,
    "corun_tls_worker"
);
static_tls_word!(
    /// Signal handlers running on this thread (`sched::park`).
    SignalDepth,
    "corun_tls_signal_depth"
);
static_tls_word!(
    /// Of those, handlers the kernel started (`sched::park`).
    AsyncDepth,
    "corun_tls_async_depth"
);

/// The calling thread's four words at once, in the order `.tbss` above
/// defines them: the running task, the worker, the signal-handler depth,
/// the asynchronous-handler depth. A path that reads several of them
/// (a yield: the task, the worker, the depth) computes the block's
/// address once rather than once a word. The address stays this
/// thread's as long as its thread pointer does: a coroutine's is the same
/// before and after it suspends (one that changes worker has its own,
/// which moves with it: `sched/shed.rs`).
#[inline(always)]
pub fn words() -> *mut [usize; 4] {
    Current::addr() as *mut [usize; 4]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_per_thread_and_start_at_zero() {
        Current::set(0x1234);
        assert_eq!(Current::get(), 0x1234);
        let other = std::thread::spawn(|| {
            let before = Current::get();
            Current::set(7);
            (before, Current::get(), Current::addr())
        })
        .join()
        .unwrap();
        assert_eq!(other.0, 0);
        assert_eq!(other.1, 7);
        assert_ne!(other.2, Current::addr());
        assert_eq!(Current::get(), 0x1234);
        // SAFETY: the address is this thread's word, just set.
        assert_eq!(unsafe { *(Current::addr() as *const usize) }, 0x1234);
        Current::set(0);
    }

    #[test]
    fn words_are_the_four_in_order() {
        let w = words() as usize;
        assert_eq!(WorkerWord::addr(), w + 8);
        assert_eq!(SignalDepth::addr(), w + 16);
        assert_eq!(AsyncDepth::addr(), w + 24);
    }
}
