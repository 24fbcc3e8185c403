//! Preemption: a coroutine that computes for longer than a time slice
//! while others of its worker wait is interrupted and sent to the back of
//! the run queue, as the kernel preempts a thread. Modelled on Go 1.14's
//! asynchronous preemption (sysmon, `preemptM`, `doSigPreempt`,
//! `isAsyncSafePoint`, `asyncPreempt`); our own code.
//!
//! # Who decides
//!
//! A monitor thread (`preempt_monitor.rs`; started with the first spawn,
//! like the watchdog; it blocks every signal and never touches worker-local state) samples each
//! worker: the task it runs (`running_id`) and its switch count, every
//! half slice; or, while a worker with others waiting is in a run it saw
//! at the previous sample or a preemption was made within the last
//! slice, every `GRANULARITY_NS`, sooner when a timer of such a worker is
//! due (200 us at least). A run is preempted when it has lasted a
//! slice (`CORUN_PREEMPT_MS`, 10 ms by default, each run's between half and
//! 1.5 times it: `preempt_monitor::run_slice`; 0 turns all of this off),
//! or `GRANULARITY_NS` once a timer of its worker is due (each worker
//! publishes when its next timer is due: `timer_added` at a timed park,
//! `timers_next` after firing its timers), a signal waits for a worker
//! to hand it to its coroutine (`signals::WORK`), or a thread that woke
//! or was made waits to run there (`Worker::woken_waiting`, or its
//! hand-off slot and inbox), as the kernel lets a thread that wakes
//! preempt one that computes. Preempted tasks then wait behind every
//! task that woke (`run_queue.rs`), the ones the worker's poll wakes at
//! the preemption included (`yield_preempted`).
//! A run that a thread woken there waits behind is also preempted after
//! 100 us of CPU (seen at two looks) when another worker sleeps for lack
//! of work: the preempted thread then moves there (`shed.rs`), as the
//! kernel would run the woken thread on the idle CPU
//! (`preempt_monitor::waits_beside_idle`).
//! Either way only when the worker has other live tasks
//! (`load` >= 2: runnable ones, or parked ones whose timer, fd or signal
//! only the worker itself notices), and the worker's thread is running
//! (state R: a thread asleep in a system call corun cannot see is left
//! alone, a signal would only make the call fail with EINTR), it records
//! which run it means (`WANT`: the switch count + 1) and sends the worker
//! `SIGNAL` with the marker value `VALUE` (SI_QUEUE from our own pid, the
//! way `signals.rs` kicks a worker). It tries again at every tick for as
//! long as the run lasts.
//!
//! # The signal
//!
//! SIGURG, as Go uses: its default action is to do nothing, so a SIGURG
//! the program did not ask for is simply dropped. The program never sees
//! corun's: corun's trampoline stays in the kernel for it whatever the
//! program sets (`hooks/sigpreempt.rs` keeps the program's SIG_DFL or
//! SIG_IGN as its view, and its handler in the trampoline's table), the
//! workers never block it (`sigmask.rs`; a coroutine's own mask is
//! corun's bookkeeping, so `sigprocmask` still reports what the program
//! set), and `sigwait` skips the marker. A SIGURG of the program's own
//! (out-of-band data, `kill`) goes to its handler, or to a `sigwait`, as
//! before. The kernel action carries SA_RESTART, so a system call made
//! inline by the program's own code is restarted, not failed.
//!
//! # The handler
//!
//! Called by the trampoline before anything else (`on_signal`). The
//! coroutine is preempted only when all of these hold, else nothing
//! happens and the monitor tries again at its next tick:
//!
//! - the worker still runs the run the monitor meant (`WANT`), a coroutine
//!   runs (`current`; the scheduler and runtime code clear it), and it is
//!   not the process's only coroutine;
//! - no signal handler runs on the thread (a program's handler, or the
//!   trampoline itself nested), and the process is not confined;
//! - the coroutine holds no FILE lock it took with `flockfile`
//!   (`hooks/filelock.rs`: glibc waits for those with an inline futex);
//! - the interrupted sp is on the coroutine's stack, or on a stack the
//!   program switched to itself whose mapping the monitor found
//!   (`foreign_stack.rs`), with room for the trampoline's frame
//!   (`preempt_asm::STACK_NEEDED`);
//! - the interrupted pc is a safe point (`preempt_safe.rs`: not in corun,
//!   glibc, ld.so, libgcc_s, libstdc++ or libgomp, and no frame of the
//!   stack returns into any of them but corun, or into the thread's own
//!   start routine: libstdc++'s for a `std::thread`).
//!
//! The coroutine's signal mask does not enter into it: the kernel
//! preempts a thread whatever it blocks, and the preemption is invisible
//! to the program. The handler then rewrites the ucontext so that the
//! thread, once `sigreturn` restored the interrupted registers, enters
//! `corun_async_preempt` (`preempt_asm.rs`), which saves every register,
//! calls `yield_preempted` and, resumed, restores them and returns to the
//! interrupted pc. The coroutine's thread pointer and mask are put back by
//! the normal resume path (`resume.rs` installs its thread pointer; its
//! signal mask is corun's bookkeeping, untouched by a switch).
//!
//! A program that never runs a coroutine long pays a monitor wake-up every
//! half slice (a few loads per worker) and nothing on any call path.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::park::{current, in_async_signal_handler, in_signal_handler, suspend};
use super::preempt_refusals::Refusal;
use super::runtime::Runtime;
use super::siginfo::{self, Info};
use super::worker::current_worker;
use crate::config::MAX_WORKERS;

/// The signal corun preempts with.
pub const SIGNAL: i32 = libc::SIGURG;
/// `si_value` of a preemption request ("corunPRE").
pub const VALUE: u64 = 0x636f_7275_6e50_5245;

/// The slice in ns (0: preemption off).
pub(super) static SLICE_NS: AtomicU64 = AtomicU64::new(0);
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
static STARTED: AtomicBool = AtomicBool::new(false);
/// Per worker: the switch count + 1 of the run to preempt (0: none).
#[link_section = "corun_fork_tables"] // read after a fork: sys::ForkReset
pub(super) static WANT: [AtomicU64; MAX_WORKERS] = [const { AtomicU64::new(0) }; MAX_WORKERS];
/// How long a run lasts at least before a due timer preempts it (the
/// order of the kernel's wake-up granularity); also the monitor's period
/// while a run is in progress.
pub(super) const GRANULARITY_NS: u64 = 1_000_000;
/// Per worker: when its next timer is due (u64::MAX: none known). Written
/// by the worker's own thread only; may be early (a timer cancelled since),
/// which costs one needless preemption, after which it is exact again.
pub(super) static NEXT_TIMER: [AtomicU64; MAX_WORKERS] =
    [const { AtomicU64::new(u64::MAX) }; MAX_WORKERS];
/// Requests sent, handled (a request sent while the previous one is still
/// pending, the worker's thread waiting for a CPU, is merged with it), and
/// preemptions made.
pub(super) static SENT: AtomicU64 = AtomicU64::new(0);
static HANDLED: AtomicU64 = AtomicU64::new(0);
static DONE: AtomicU64 = AtomicU64::new(0);
/// An asynchronous cancellation was requested (set once, never cleared):
/// from then on the monitor also preempts a lone run whose thread has one
/// due, so that it acts (`yield_preempted`).
static ASYNC_CANCELS: AtomicBool = AtomicBool::new(false);

/// `pthread_cancel` of a thread whose cancellation is asynchronous: if it
/// computes, the monitor preempts it even alone on its worker.
pub fn async_cancel_requested() {
    ASYNC_CANCELS.store(true, Ordering::SeqCst);
}

/// Whether coroutine `id` has an asynchronous cancellation due.
pub(super) fn async_cancel_due(id: u64) -> bool {
    ASYNC_CANCELS.load(Ordering::Relaxed)
        && super::sigdispatch::find_id(id)
            .is_some_and(|t| t.ident.cancel_async() && t.ident.cancel_due())
}

/// Turns preemption on with a slice of `ms` (0: off). Whether this CPU
/// can have it is known at the first redirect (`preempt_asm::ensure_ready`).
pub fn configure(ms: u64) {
    SLICE_NS.store(ms * 1_000_000, Ordering::Relaxed);
}

/// Whether preemption is on (the hooks keep `SIGNAL` for corun then).
#[inline]
/// The time slice (ns; 0: preemption off).
pub fn slice_ns() -> u64 {
    SLICE_NS.load(Ordering::Relaxed)
}

pub fn enabled() -> bool {
    SLICE_NS.load(Ordering::Relaxed) != 0
}

/// Turns preemption off (the signal could not be set up).
pub fn disable() {
    SLICE_NS.store(0, Ordering::Relaxed);
}

/// (requests sent, requests handled, preemptions made), for the
/// statistics.
pub fn counts() -> (u64, u64, u64) {
    (
        SENT.load(Ordering::Relaxed),
        HANDLED.load(Ordering::Relaxed),
        DONE.load(Ordering::Relaxed),
    )
}

std::thread_local! {
    /// FILE locks the program took with `flockfile` and holds
    /// (`hooks/filelock.rs`): no preemption meanwhile. Per coroutine (each
    /// has its own TLS; with CORUN_TLS=worker, per worker: more cautious).
    static FILE_LOCKS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The program took a FILE lock (`flockfile`).
#[inline]
pub fn lock_taken() {
    FILE_LOCKS.set(FILE_LOCKS.get().saturating_add(1));
}

/// The program released a FILE lock (`funlockfile`).
#[inline]
pub fn lock_released() {
    FILE_LOCKS.set(FILE_LOCKS.get().saturating_sub(1));
}

/// Whether a delivery of `SIGNAL` is corun's request.
pub fn is_request(info: &Info) -> bool {
    siginfo::code(info) == libc::SI_QUEUE
        && siginfo::value(info) == VALUE
        // A confined process may not be allowed getpid (a seccomp filter
        // kills the thread): a request sent as it confined itself is
        // dropped unchecked.
        && (super::confined::is()
            // SAFETY: getpid has no preconditions.
            || siginfo::pid(info) == unsafe { libc::getpid() })
}

/// A coroutine of worker `index` parks with a timer due at `at`.
#[inline]
pub fn timer_added(index: usize, at: u64) {
    let c = &NEXT_TIMER[index];
    if at < c.load(Ordering::Relaxed) {
        c.store(at, Ordering::Relaxed);
    }
}

/// Worker `index` fired its due timers; its next one is due at `next`.
#[inline]
pub fn timers_next(index: usize, next: Option<u64>) {
    NEXT_TIMER[index].store(next.unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// Starts the monitor once (at the first spawn), when preemption is on.
pub fn ensure_started(rt: &'static Runtime) {
    if !enabled() || STARTED.load(Ordering::Relaxed) || STARTED.swap(true, Ordering::AcqRel) {
        return;
    }
    // The objects, for the safe-point test of a fault handler that may
    // park (`fault_at_safe_point`), from the first thread on: published
    // here, before the monitor runs (which refreshes them from then on).
    super::preempt_safe::refresh();
    let started = super::confined::spawn_helper(Box::new(move || {
        crate::sys::block_all_signals();
        super::preempt_monitor::monitor(rt);
    }));
    if started.is_err() {
        STARTED.store(false, Ordering::Release);
    }
}

/// In a forked child the monitor does not exist: the next spawn starts one.
pub fn reset_after_fork() {
    use crate::sys::ForkReset;
    STARTED.reset_to(false);
    for w in &WANT {
        w.reset_to(0);
    }
    super::preempt_safe::reset_after_fork();
    super::foreign_stack::reset();
}

/// Per worker: the switch count + 1 of the run the trampoline left
/// signals pending for (a kick that found no safe point; 0: none); the
/// monitor retries while that run goes on.
pub(super) static KICK_LEFT: [AtomicU64; MAX_WORKERS] = [const { AtomicU64::new(0) }; MAX_WORKERS];

/// The trampoline left a kick's signals pending (no safe point): the
/// monitor hands them over by a preemption once the coroutine reaches one
/// (or it parks first, and they run then). `WORK` alone did not keep the
/// retry going: an idle worker's dispatch clears it, and a thread alone
/// on its worker that spun in glibc (a `clock_gettime` loop waiting for
/// its handler's flag) took 12-17 of 20 `pthread_kill`s only when its 2 s
/// timeout made it call corun (`sig_kick_libc_loop`). Async-signal-safe.
pub fn signals_left_pending() {
    super::signals::WORK.store(true, Ordering::SeqCst);
    if let Some(w) = current_worker() {
        let run = w.switches.load(Ordering::Relaxed) + 1;
        KICK_LEFT[w.index].store(run, Ordering::SeqCst);
    }
}

/// The trampoline got corun's request (`is_request`): preempts the
/// running coroutine if it is at a safe point (see the top of this file).
/// Async-signal-safe; errno is kept.
pub fn on_signal(uc: *mut c_void) {
    HANDLED.fetch_add(1, Ordering::Relaxed);
    if let Err(r) = try_preempt(uc) {
        super::preempt_refusals::note(r);
    }
}

/// `on_signal`'s test and redirection; the reason when refused.
fn try_preempt(uc: *mut c_void) -> Result<(), Refusal> {
    let w = current_worker().ok_or(Refusal::RunOver)?;
    let want = WANT[w.index].swap(0, Ordering::SeqCst);
    if want == 0 || want != w.switches.load(Ordering::Relaxed).wrapping_add(1) || uc.is_null() {
        return Err(Refusal::RunOver);
    }
    if super::confined::is() || in_signal_handler() || in_async_signal_handler() {
        return Err(Refusal::NotNow);
    }
    let t = current().ok_or(Refusal::RunOver)?;
    if t.id != w.running_id.load(Ordering::Relaxed) {
        return Err(Refusal::RunOver);
    }
    if super::alone()
        && super::signals::deliverable(&t) == 0
        && !(t.ident.cancel_async() && t.ident.cancel_due())
    {
        return Err(Refusal::NotNow);
    }
    if FILE_LOCKS.get() != 0 {
        return Err(Refusal::FileLock);
    }
    let (lo, top) = interrupted_stack(uc, w.index).ok_or(Refusal::StackRoom)?;
    redirect(uc, lo, top, w.running_start_addr.load(Ordering::Relaxed))
}

/// The bounds of the stack the coroutine was interrupted on: its own, or
/// one the program switched to itself (`foreign_stack.rs`).
fn interrupted_stack(uc: *mut c_void, index: usize) -> Option<(usize, usize)> {
    let (lo, top) = super::park::current_stack()?;
    let sp = interrupted_sp(uc)?;
    if lo <= sp && sp < top {
        return Some((lo, top));
    }
    super::foreign_stack::bounds(index, sp)
}

#[cfg(target_arch = "x86_64")]
fn interrupted_sp(uc: *mut c_void) -> Option<usize> {
    if uc.is_null() {
        return None;
    }
    // SAFETY: the kernel's ucontext for this delivery (checked non-null),
    // read only.
    let uc = unsafe { &*(uc as *const libc::ucontext_t) };
    Some(uc.uc_mcontext.gregs[libc::REG_RSP as usize] as usize)
}

#[cfg(not(target_arch = "x86_64"))]
fn interrupted_sp(_uc: *mut c_void) -> Option<usize> {
    None
}

/// A kick (`signals.rs`) for the running coroutine's pending signals: when
/// it computes at a safe point, it is preempted as above instead of running
/// its handlers in the kernel's signal frame, and runs them once resumed
/// (`yield_preempted`), as ordinary code of the coroutine: a handler that
/// waits there parks the coroutine, not the worker. Boehm GC's suspend
/// handler waits in `sigsuspend` until the collector restarts the world; in
/// the kernel's frame that wait blocked the worker and every coroutine
/// queued on it, among them threads the collector was still waiting for
/// (bdwgc: "Signals delivery fails constantly"). False when not possible
/// (off, not a safe point, a handler interrupted): the caller runs the
/// handlers where it is. Called by the trampoline, inside its own count of
/// `in_async_signal_handler`.
pub fn redirect_for_signals(uc: *mut c_void) -> bool {
    if in_signal_handler() || super::park::async_signal_depth() != 1 {
        return false;
    }
    switchable_at(uc).is_some_and(|(lo, top, start)| redirect(uc, lo, top, start).is_ok())
}

/// Whether the running coroutine, interrupted by a fault where `uc` says
/// and now in that fault's handler (the only one running on this thread),
/// could have been preempted at that point: preemption on, not holding a
/// FILE lock, and the code at a safe point (none of its frames in runtime
/// code). The handler may then park (`fault_park`).
pub fn fault_at_safe_point(uc: *mut c_void) -> bool {
    switchable_at(uc).is_some_and(|(_, top, start)| safe_point(uc, top, start).is_ok())
}

/// The interrupted stack's bounds and the coroutine's start function, when
/// preemption may look at the point `uc` interrupted (the caller checks
/// which handlers run).
fn switchable_at(uc: *mut c_void) -> Option<(usize, usize, usize)> {
    if !enabled() || uc.is_null() || super::confined::is() {
        return None;
    }
    let (w, t) = (current_worker()?, current()?);
    if t.id != w.running_id.load(Ordering::Relaxed) || FILE_LOCKS.get() != 0 {
        return None;
    }
    let (lo, top) = interrupted_stack(uc, w.index)?;
    Some((lo, top, w.running_start_addr.load(Ordering::Relaxed)))
}

/// The safe-point test on the registers `uc` holds.
#[cfg(target_arch = "x86_64")]
fn safe_point(uc: *mut c_void, top: usize, start: usize) -> Result<(), Refusal> {
    // SAFETY: the kernel's ucontext for this delivery (non-null: checked
    // by `switchable_at`), read only.
    let uc = unsafe { &*(uc as *const libc::ucontext_t) };
    super::preempt_safe::is_safe_point(&dwarf_registers(&uc.uc_mcontext.gregs), top, start)
}

#[cfg(not(target_arch = "x86_64"))]
fn safe_point(_uc: *mut c_void, _top: usize, _start: usize) -> Result<(), Refusal> {
    Err(Refusal::PcInRuntime)
}

/// Whether the ucontext was rewritten to enter `corun_async_preempt`.
#[cfg(target_arch = "x86_64")]
fn redirect(uc: *mut c_void, lo: usize, top: usize, start: usize) -> Result<(), Refusal> {
    // SAFETY: the kernel's ucontext for this delivery (checked non-null),
    // ours until the handler returns.
    let uc = unsafe { &mut *(uc as *mut libc::ucontext_t) };
    let g = &mut uc.uc_mcontext.gregs;
    let (pc, sp) = (
        g[libc::REG_RIP as usize] as usize,
        g[libc::REG_RSP as usize] as usize,
    );
    let room = 128 + super::preempt_asm::STACK_NEEDED;
    if sp < lo || sp >= top || sp - lo < room {
        return Err(Refusal::StackRoom);
    }
    super::preempt_safe::is_safe_point(&dwarf_registers(g), top, start)?;
    if !super::preempt_asm::ensure_ready() {
        cannot_save_registers();
        return Err(Refusal::NotNow);
    }
    // The kernel's signal frame lies below the red zone: the trampoline
    // makes its return address slot itself, from this thread's TLS word.
    super::preempt_asm::set_return_pc(pc);
    g[libc::REG_RSP as usize] = (sp - 128) as i64;
    g[libc::REG_RIP as usize] = super::preempt_asm::entry() as i64;
    Ok(())
}

/// This CPU's register state does not fit the trampoline's frame:
/// preemption goes off, said once. Async-signal-safe.
#[cold]
fn cannot_save_registers() {
    if SLICE_NS.swap(0, Ordering::Relaxed) != 0 {
        crate::sys::raw_stderr(
            b"corun: this CPU's register state does not fit a preemption frame: preemption off\n",
        );
    }
}

/// The interrupted registers by DWARF number (x86_64 psABI: rax, rdx,
/// rcx, rbx, rsi, rdi, rbp, rsp, r8-r15, then the pc as the return
/// address column), for the frame walk.
#[cfg(target_arch = "x86_64")]
fn dwarf_registers(g: &[i64; 23]) -> [Option<usize>; super::cfi::NREGS] {
    use libc::*;
    let order = [
        REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP, REG_R8, REG_R9,
        REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP,
    ];
    order.map(|r| Some(g[r as usize] as usize))
}

#[cfg(not(target_arch = "x86_64"))]
fn redirect(_uc: *mut c_void, _lo: usize, _top: usize, _start: usize) -> Result<(), Refusal> {
    Err(Refusal::PcInRuntime)
}

/// Called by `corun_async_preempt`, in normal context on the preempted
/// coroutine's stack with its registers saved: the coroutine yields to
/// the back of its worker's run queue, after its worker looked at its
/// netpoller and timers (what they woke runs first). Back here, its
/// deliverable signals run, as the kernel delivers a signal that came
/// while a thread waited for a CPU, and a due asynchronous cancellation
/// acts.
pub(super) extern "C" fn yield_preempted() {
    let (Some(w), Some(task), Some(rt)) = (current_worker(), current(), super::runtime::runtime())
    else {
        return;
    };
    let e = crate::sys::errno();
    // What the poll wakes (due timers, ready fds) goes ahead of the
    // coroutines that were preempted, as the kernel runs a thread that
    // wakes before the ones that compute (`run_queue.rs`).
    w.poll(rt, false);
    DONE.fetch_add(1, Ordering::Relaxed);
    task.yielding.set(true);
    task.preempted.set(true);
    suspend(&task);
    super::signals::run_pending(&task);
    // An asynchronous cancellation acts here, in the preempted code: the
    // unwind goes through `corun_async_preempt`'s signal frame into it.
    super::identity::async_cancel_point(&task.ident);
    crate::sys::set_errno(e);
}
