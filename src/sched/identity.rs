//! What makes a coroutine a thread to the program: its thread pointer (own
//! TLS and glibc descriptor), its signal mask and pending signals, and its
//! cancellation state. All of it lives here, in the task, in one place:
//!
//! - `ctx::tls` builds and switches the thread pointer; the scheduler
//!   installs it around each resume of the task;
//! - the signal hooks read and write `sigmask` and `pending` (a bit per
//!   signal, bit `sig - 1`, as the kernel's 64-bit sigset), and
//!   `sched::signals` keeps the rest of a thread's signal state in `sig`;
//! - the pthread hooks read and write `cancel`.
//!
//! The atomics may be touched from any thread and from signal handlers
//! (they never lock or allocate); `tls` is only touched by the home worker.

use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use crate::ctx::tls::ThreadBlock;

/// `cancel` bits.
pub mod cancel {
    /// pthread_setcancelstate(PTHREAD_CANCEL_DISABLE).
    pub const DISABLED: u32 = 1;
    /// pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS).
    pub const ASYNC: u32 = 2;
    /// pthread_cancel was called.
    pub const REQUESTED: u32 = 4;
    /// The cancellation is being acted upon (unwinding): never again.
    pub const ACTING: u32 = 8;
    /// A thread made by pthread_create (cancellable, runs TLS destructors
    /// at its end); corun_spawn tasks are not.
    pub const PTHREAD: u32 = 16;
    /// The cancel token the coroutine runs under is cancelled
    /// (`sched::token`): a token-aware wait fails with ECANCELED instead of
    /// parking. Set and cleared under that token's lock; never unwinds.
    pub const TOKEN: u32 = 32;
}

#[derive(Default)]
pub struct Identity {
    /// The coroutine's own thread pointer, when it has one (pthread_create
    /// threads, once `ctx::tls` is available); `None`: it runs with its
    /// worker's thread pointer (main, corun_spawn tasks).
    pub tls: Cell<Option<ThreadBlock>>,
    /// That block's thread pointer (0: none), read at every resume.
    pub tp: Cell<usize>,
    /// A thread made by `pthread_create`: gets its own TLS when it first
    /// runs (corun_spawn tasks keep the cheap shared path).
    pub own_tls: Cell<bool>,
    /// It took (or asked for) a lock that glibc keeps by kernel tid (a
    /// process-shared, robust or priority-protocol mutex, a process-shared
    /// rwlock: glibc compares the owner with the descriptor's `tid`, the
    /// kernel does for PI futexes), so it stays on its worker's kernel
    /// thread for good (`sched::shed`). Set and read on its home worker.
    pub kernel_bound: Cell<bool>,
    /// The word `set_tid_address` named (0: none): zeroed and woken when
    /// the thread ends, as the kernel does (`hooks/pthread/tid.rs`).
    pub clear_child_tid: Cell<usize>,
    /// Signals this thread blocks (bit `sig - 1`).
    pub sigmask: AtomicU64,
    /// Signals pending for this thread (bit `sig - 1`).
    pub pending: AtomicU64,
    /// `cancel::*` bits.
    pub cancel: AtomicU32,
    /// Parked (or about to park) at a cancellation point.
    pub at_cancel_point: AtomicBool,
    /// The cancel token the coroutine runs under (`sched::token`), if any:
    /// touched only by the task itself.
    pub token: Cell<Option<std::sync::Arc<super::token::Inner>>>,
    /// Set by `token::check` just before a park: that park returns at once
    /// (without registering) if the token is cancelled, and the caller's
    /// next `token::check` fails its call with ECANCELED. Consumed by the
    /// park (see `park::park_as`).
    pub token_point: Cell<bool>,
    /// Top of the thread's chain of C cleanup buffers
    /// (`__pthread_register_cancel`, what C's `pthread_cleanup_push`
    /// makes), 0 when empty.
    pub cleanup: Cell<usize>,
    /// A stack address just above the frames of the thread's start
    /// routine: where an exit's unwinding stops (0: not a pthread).
    pub entry_limit: Cell<usize>,
    /// The value `pthread_exit` (or a cancellation) ends the thread with.
    pub exit_value: Cell<usize>,
    /// The exception object of the thread's exit unwinding (it must outlive
    /// the frames the unwinder discards, as glibc keeps it in the thread
    /// descriptor).
    pub unwind: UnsafeCell<UnwindException>,
    /// Signal state beyond the mask and the pending set (`sched::signals`).
    pub sig: SignalState,
    /// The thread's CPU clock, kept once somebody reads it
    /// (`sched::cpuclock`).
    pub cpu: super::cpuclock::CpuClock,
}

/// What signal delivery keeps per thread besides `sigmask` and `pending`
/// (see `sched/signals.rs` for how each is used).
#[derive(Default)]
pub struct SignalState {
    /// The mask counted in the per-signal tallies that decide the workers'
    /// kernel mask: `sigmask` outside handlers (a handler's own mask, set
    /// for its duration, is not counted).
    pub counted: AtomicU64,
    /// Handlers run in this thread so far, and how many of those lacked
    /// SA_RESTART: a blocking call compares them before and after a wait.
    pub handled: AtomicU32,
    pub handled_eintr: AtomicU32,
    /// An interruptible call is under way: `ARMED | handled` as it began.
    /// A park does not suspend once `handled` moved past it.
    pub armed: AtomicU64,
    /// Signals a sigwait-like call waits for: one becoming pending wakes
    /// the thread although it blocks it.
    pub waiting_for: AtomicU64,
    /// A wait that must not be cut short (a blocking-pool call: the helper
    /// thread still uses the caller's buffers): signals wait for its end.
    pub uninterruptible: AtomicBool,
    /// While `uninterruptible` for a pool job that a signal may cut short:
    /// `pool_kick::KICKABLE` (a deliverable signal wakes the wait) or
    /// `KICKED` (the helper was told; signals wait for the job's end).
    pub pool_kick: AtomicU8,
    /// Nesting of handlers running in this thread, and the mask to go back
    /// to when the outermost one is left by a long jump.
    pub depth: AtomicU32,
    pub outer_mask: AtomicU64,
    /// In the registry of live tasks (`sigdispatch::register`).
    pub registered: AtomicBool,
    /// The thread's alternate signal stack as `sigaltstack` set it (size
    /// 0: none), and its SS_AUTODISARM bit (`hooks::sigaction::altstack`).
    pub alt_sp: AtomicUsize,
    pub alt_size: AtomicUsize,
    pub alt_flags: AtomicU32,
    /// Handlers with SA_ONSTACK running in this thread while it had an
    /// alternate stack: it is "on" that stack (SS_ONSTACK, EPERM).
    pub alt_on: AtomicU32,
}

/// `struct _Unwind_Exception` (unwind.h), 16-byte aligned on x86_64.
#[repr(C, align(16))]
#[derive(Default)]
pub struct UnwindException {
    pub class: u64,
    pub cleanup: usize,
    pub private: [usize; 2],
}

/// Called at a cancellation point when a cancellation is due; never
/// returns (the hooks layer installs it: it unwinds the thread).
static CANCEL_ACT: std::sync::OnceLock<fn() -> !> = std::sync::OnceLock::new();

/// Installs what acting on a cancellation does.
pub fn set_cancel_action(f: fn() -> !) {
    let _ = CANCEL_ACT.set(f);
}

/// At a cancellation point: acts on a due cancellation (never returns then).
#[inline]
pub fn cancel_point(ident: &Identity) {
    if ident.cancel_due() {
        act_on_cancel(ident);
    }
}

/// Where a wait that is not a cancellation point ended (its registration
/// taken back): acts on a due request if cancellation is asynchronous, as
/// the kernel's signal reaches a thread natively wherever it is.
#[inline]
pub fn async_cancel_point(ident: &Identity) {
    if ident.cancel_async() {
        cancel_point(ident);
    }
}

#[cold]
fn act_on_cancel(ident: &Identity) {
    if let Some(f) = CANCEL_ACT.get() {
        ident.cancel.fetch_or(cancel::ACTING, Ordering::AcqRel);
        f()
    }
}

impl Identity {
    /// Whether a cancellation request should act at a cancellation point.
    #[inline]
    pub fn cancel_due(&self) -> bool {
        let c = self.cancel.load(Ordering::Acquire);
        c & (cancel::REQUESTED | cancel::DISABLED | cancel::ACTING) == cancel::REQUESTED
    }

    /// Whether cancellation is enabled and asynchronous: a request acts
    /// wherever the thread waits or computes, not only at cancellation
    /// points (`park::park_as`, `sync::wait`, `preempt::yield_preempted`).
    #[inline]
    pub fn cancel_async(&self) -> bool {
        let c = self.cancel.load(Ordering::Acquire);
        c & (cancel::ASYNC | cancel::DISABLED | cancel::ACTING) == cancel::ASYNC
    }

    /// Whether the cancel token the coroutine runs under is cancelled.
    #[inline]
    pub fn token_cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst) & cancel::TOKEN != 0
    }
}
