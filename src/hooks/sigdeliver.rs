//! Running the program's signal handlers: corun's trampoline, and the
//! delivery of a pending signal inside the coroutine that takes it.
//!
//! corun installs one trampoline in the kernel for every handler the
//! program sets (`sigaction.rs` keeps the program's handler, flags and mask
//! in the tables here). When the kernel delivers a signal to a worker, the
//! trampoline decides who takes it (`sched/signals.rs` has the model):
//!
//! - the running coroutine, at once ("in place"), when the signal is a
//!   fault or was sent to this very thread (`raise`), or is sent to the
//!   process and the coroutine does not block it, unless main would take
//!   it (Linux offers a process signal to the thread group leader first).
//!   Only when the interrupted code runs on the coroutine's own stack, or
//!   on a stack the program switched to itself (a fiber's: neither the
//!   worker thread's stack, `sched/worker_stack.rs`, nor its alternate
//!   one): a signal that lands while the scheduler switches stacks is made
//!   pending instead (a handler may leave by longjmp, which must land on
//!   the coroutine's stack, not the scheduler's). Or inside a trampoline that
//!   runs a handler in place there: a handler with SA_ONSTACK runs on the
//!   worker's alternate stack, and a signal landing in it nests, as the
//!   kernel nests it. One that lands on that stack past the trampoline's
//!   last look is made pending, and a kick the worker sends itself, held
//!   blocked until the outer handler's sigreturn, runs it there (`hold`);
//! - else it is made pending where it belongs (main, the process, or the
//!   coroutine that blocks a signal sent to it), without locks or
//!   allocation, and a worker wakes the taker later.
//!
//! A pending signal is delivered by `run_deferred` in the coroutine that
//! takes it, on its stack, when it resumes from a park (or unblocks it):
//! the handler gets the sender's siginfo (kept in `sched::siginfo`) and a
//! ucontext whose `uc_sigmask` is the mask it interrupted; if the handler
//! changes that mask, it is installed when the handler returns, as
//! `sigreturn` does.
//!
//! While a handler runs, the coroutine's mask also holds the handler's
//! `sa_mask` and the signal itself (unless SA_NODEFER), as the kernel does;
//! a signal that arrives meanwhile stays pending and runs when the handler
//! returns. Each run bumps the coroutine's handler counters, from which a
//! blocking call learns that it was interrupted, and whether every handler
//! had SA_RESTART. A native thread (not a coroutine) just runs the handler,
//! as before.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};

use libc::siginfo_t;

use crate::sched::park::{
    async_signal_enter, async_signal_leave, in_place_delivery, in_place_enter, in_place_leave,
    signal_handler_enter, signal_handler_leave,
};
use crate::sched::siginfo::{self, Info};
use crate::sched::sigmask::{self, bit};
use crate::sched::{self, signals, Task};
use crate::sys::{errno, set_errno};

pub(crate) const NSIG: usize = 65;

/// The program's handler for each signal (0: none of ours installed).
pub(crate) static HANDLER: [AtomicUsize; NSIG] = [const { AtomicUsize::new(0) }; NSIG];
/// The program's sa_flags for it (SA_SIGINFO decides the call's shape).
pub(crate) static FLAGS: [AtomicI32; NSIG] = [const { AtomicI32::new(0) }; NSIG];
/// The program's sa_mask for it (the kernel's 64 bits).
pub(crate) static MASK: [AtomicU64; NSIG] = [const { AtomicU64::new(0) }; NSIG];

/// Whether `h` is a handler function (not SIG_DFL/SIG_IGN/SIG_ERR).
pub(crate) fn is_function(h: usize) -> bool {
    h != libc::SIG_DFL && h != libc::SIG_IGN && h != libc::SIG_ERR
}

/// Registers `run_deferred` with the scheduler.
pub fn install() {
    signals::set_runner(run_deferred);
}

/// Signals whose default action is to do nothing.
fn ignored_by_default(sig: c_int) -> bool {
    matches!(
        sig,
        libc::SIGCHLD | libc::SIGURG | libc::SIGWINCH | libc::SIGCONT
    )
}

/// Calls handler `h` the way its flags say.
fn call(h: usize, flags: c_int, sig: c_int, info: *mut siginfo_t, uc: *mut c_void) {
    if flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the program installed `h` with SA_SIGINFO, so it takes
        // these three arguments.
        let f: extern "C" fn(c_int, *mut siginfo_t, *mut c_void) =
            unsafe { std::mem::transmute(h) };
        f(sig, info, uc);
    } else {
        // SAFETY: a plain handler takes the signal number.
        let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(h) };
        f(sig);
    }
}

/// Runs handler `h` for `sig` as coroutine `t`'s: its mask extended for
/// the duration, its counters bumped, hooks passing through inside; the
/// mask it interrupted is back when it returns.
fn run_as(t: &Task, sig: c_int, h: usize, flags: c_int, info: *mut siginfo_t, uc: *mut c_void) {
    let saved = t.ident.sigmask.load(Ordering::SeqCst);
    let mut extra = MASK[sig as usize].load(Ordering::Relaxed);
    if flags & libc::SA_NODEFER == 0 {
        extra |= bit(sig);
    }
    let s = &t.ident.sig;
    if s.depth.fetch_add(1, Ordering::Relaxed) == 0 {
        s.outer_mask.store(saved, Ordering::Relaxed);
    }
    signals::set_handler_mask(t, saved | extra);
    // The interruptible call the handler interrupted (`armed`) is not the
    // handler's: its own waits (a join, a condition wait) must suspend,
    // where they saw "a handler ran since the call began" and ended every
    // park at once, spinning for ever (Redis's crash handler joins its
    // background threads). The call sees the handler once it is back.
    let interrupted_call = s.armed.swap(0, Ordering::Relaxed);
    s.handled.fetch_add(1, Ordering::Relaxed);
    if flags & libc::SA_RESTART == 0 {
        s.handled_eintr.fetch_add(1, Ordering::Relaxed);
    }
    // SA_ONSTACK with an alternate stack set: the thread is on it for the
    // handler's duration (`sigaction::altstack`), as the kernel would put
    // it there.
    let onstack = flags & libc::SA_ONSTACK != 0
        && s.alt_size.load(Ordering::Relaxed) != 0
        && s.alt_on.load(Ordering::Relaxed) == 0;
    if onstack {
        s.alt_on.store(1, Ordering::Relaxed);
    }
    signal_handler_enter();
    call(h, flags, sig, info, uc);
    signal_handler_leave();
    if onstack {
        s.alt_on.store(0, Ordering::Relaxed);
    }
    s.depth.fetch_sub(1, Ordering::Relaxed);
    s.armed.store(interrupted_call, Ordering::Relaxed);
    signals::restore_mask(t, saved);
    // The handler may have applied its own mask to the thread
    // (`signals::sync_in_handler`); outside handlers, the workers' again.
    signals::sync_here();
}

/// Delivers `sig`, pending for the running coroutine `t`, in `t`.
fn deliver(t: &Task, sig: c_int, mut info: Info) {
    let i = sig as usize;
    let h = HANDLER[i].load(Ordering::Acquire);
    let flags = FLAGS[i].load(Ordering::Acquire);
    if !is_function(h) || h == 0 {
        default_action(sig);
        return;
    }
    if flags & libc::SA_RESETHAND != 0 {
        reset_to_default(sig);
    }
    let saved = t.ident.sigmask.load(Ordering::SeqCst);
    // SAFETY: a zeroed ucontext_t is a valid value.
    let mut uc: libc::ucontext_t = unsafe { std::mem::zeroed() };
    // The registers of this very point, as the kernel gives the point a
    // signal interrupted: a handler that records where its thread stopped
    // reads them. Mono's suspend handler takes the stack pointer and the
    // registers from there for its collector to scan, as bdwgc-style
    // collectors do; zeroed, every suspend of a thread that took its
    // signal while parked looked failed, and Mono retried for ever. The
    // coroutine's own frames lie above this one on the same stack, with
    // the registers they held saved in between.
    // SAFETY: `uc` is a valid out-buffer for getcontext.
    unsafe { libc::getcontext(&mut uc) };
    set_uc_mask(&mut uc, saved);
    run_as(
        t,
        sig,
        h,
        flags,
        info.as_mut_ptr() as *mut siginfo_t,
        &mut uc as *mut libc::ucontext_t as *mut c_void,
    );
    let asked = uc_mask(&uc);
    if asked != saved {
        // The handler changed uc_sigmask: sigreturn would install it.
        signals::set_mask(t, asked);
        signals::sync_here();
    }
}

/// The kernel's default action for `sig` (its handler is gone: the
/// program reset it while the signal was pending, or a signal without a
/// handler was sent to a coroutine that blocked it).
fn default_action(sig: c_int) {
    // SAFETY: a zeroed sigaction is a valid out-buffer; a query.
    let mut cur: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { crate::sys::real::sigaction(sig, std::ptr::null(), &mut cur) };
    if cur.sa_sigaction == libc::SIG_IGN
        || cur.sa_sigaction == trampoline as *const () as usize
        || (cur.sa_sigaction == libc::SIG_DFL && ignored_by_default(sig))
    {
        return;
    }
    // This thread does not block it (the coroutine took it): the kernel
    // acts here, as it would have.
    // SAFETY: tgkill to this very thread.
    unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), crate::sys::gettid(), sig) };
}

/// SA_RESETHAND: the handler runs once, then the default is back.
fn reset_to_default(sig: c_int) {
    HANDLER[sig as usize].store(0, Ordering::Release);
    // SAFETY: a zeroed sigaction with SIG_DFL is valid.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = libc::SIG_DFL;
    // SAFETY: installing SIG_DFL.
    unsafe { crate::sys::real::sigaction(sig, &sa, std::ptr::null_mut()) };
}

/// The runner the scheduler calls: every deliverable signal of the running
/// coroutine `t`, lowest first, each in `t`.
fn run_deferred(t: &Task) {
    let saved = errno();
    while let Some((sig, info)) = signals::take_deliverable(t) {
        deliver(t, sig, info);
    }
    set_errno(saved);
}

fn uc_mask(uc: &libc::ucontext_t) -> u64 {
    // SAFETY: sigset_t is at least 8 bytes; the first 8 are the kernel's.
    unsafe { *(&uc.uc_sigmask as *const libc::sigset_t as *const u64) }
}

fn set_uc_mask(uc: &mut libc::ucontext_t, m: u64) {
    // SAFETY: as in `uc_mask`.
    unsafe { *(&mut uc.uc_sigmask as *mut libc::sigset_t as *mut u64) = m };
}

/// The stack pointer of the code a signal interrupted.
///
/// # Safety
/// `uc` is NULL or the kernel's ucontext for this delivery.
unsafe fn interrupted_sp(uc: *mut c_void) -> usize {
    if uc.is_null() {
        return 0;
    }
    // SAFETY: per the contract.
    let uc = unsafe { &*(uc as *const libc::ucontext_t) };
    #[cfg(target_arch = "x86_64")]
    {
        uc.uc_mcontext.gregs[libc::REG_RSP as usize] as usize
    }
    #[cfg(target_arch = "aarch64")]
    {
        uc.uc_mcontext.sp as usize
    }
}

/// Whether the code a signal interrupted ran on the thread's alternate
/// signal stack: in a handler, whose kernel frame lies above it (the
/// ucontext's `uc_stack` is the thread's alternate stack; the test is the
/// kernel's `on_sig_stack`).
///
/// # Safety
/// `uc` is NULL or the kernel's ucontext for this delivery.
unsafe fn interrupted_on_altstack(uc: *mut c_void) -> bool {
    // SAFETY: per the contract.
    let Some(u) = (unsafe { (uc as *const libc::ucontext_t).as_ref() }) else {
        return false;
    };
    let (lo, size) = (u.uc_stack.ss_sp as usize, u.uc_stack.ss_size);
    // SAFETY: per the contract.
    let sp = unsafe { interrupted_sp(uc) };
    size != 0 && sp > lo && sp - lo <= size
}

/// Whether `sp`, interrupted in a coroutine, is on a stack the program
/// switched to itself (a fiber's): neither the worker thread's own stack,
/// where the scheduler runs, nor its alternate signal stack.
///
/// # Safety
/// `uc` is NULL or the kernel's ucontext for this delivery.
unsafe fn on_program_stack(sp: usize, uc: *mut c_void) -> bool {
    let Some(w) = sched::worker::current_worker() else {
        return false;
    };
    // SAFETY: per the contract.
    sched::worker_stack::is_off(w.index, sp) && !unsafe { interrupted_on_altstack(uc) }
}

/// A fault the kernel raised on this thread's instruction.
fn is_fault(sig: c_int, info: &Info) -> bool {
    matches!(
        sig,
        libc::SIGSEGV | libc::SIGBUS | libc::SIGILL | libc::SIGFPE | libc::SIGTRAP | libc::SIGSYS
    ) && siginfo::code(info) > 0
}

/// Sent to this thread: `raise`/`tgkill`, or SIGPIPE/SIGXFSZ (the kernel
/// sends those to the thread that wrote).
fn to_this_thread(sig: c_int, info: &Info) -> bool {
    let code = siginfo::code(info);
    code == libc::SI_TKILL
        || (matches!(sig, libc::SIGPIPE | libc::SIGXFSZ) && code == libc::SI_USER)
}

fn is_kick(info: &Info) -> bool {
    // (A preemption request that found nothing to preempt is no signal
    // either: the trampoline returns before it gets here.)
    siginfo::code(info) == libc::SI_QUEUE
        && signals::is_marker_value(siginfo::value(info))
        // SAFETY: getpid has no preconditions.
        && siginfo::pid(info) == unsafe { libc::getpid() }
}

/// Runs `t`'s handler for `sig` in place, then whatever became deliverable
/// when its mask came back (as the kernel does at sigreturn).
fn in_place(t: &Task, sig: c_int, info: *mut siginfo_t, uc: *mut c_void, on_stack: bool) {
    let i = sig as usize;
    let h = HANDLER[i].load(Ordering::Acquire);
    let flags = FLAGS[i].load(Ordering::Acquire);
    if !is_function(h) || h == 0 {
        return;
    }
    if flags & libc::SA_RESETHAND != 0 {
        // The kernel reset the disposition as it delivered.
        HANDLER[i].store(0, Ordering::Release);
    }
    let epoch = sigmask::epoch();
    // The handler sees (and may change) the coroutine's mask in its
    // ucontext, not the worker's that the kernel put there.
    let saved = t.ident.sigmask.load(Ordering::SeqCst);
    // SAFETY: the kernel's ucontext for this delivery (or NULL).
    let ucx = unsafe { (uc as *mut libc::ucontext_t).as_mut() };
    let kernel_before = ucx.as_ref().map(|u| uc_mask(u));
    if let Some(u) = ucx {
        set_uc_mask(u, saved);
    }
    run_as(t, sig, h, flags, info, uc);
    // SAFETY: as above.
    let mut ucx = unsafe { (uc as *mut libc::ucontext_t).as_mut() };
    if let Some(u) = ucx.as_deref_mut() {
        let asked = uc_mask(u);
        if asked != saved {
            // sigreturn would install it as the thread's mask.
            signals::set_mask(t, asked);
        }
    }
    if on_stack {
        run_deferred(t);
    }
    if let (Some(u), Some(before)) = (ucx, kernel_before) {
        // What the kernel installs at sigreturn: the mask it interrupted,
        // or the workers' mask if that changed meanwhile.
        let k = if sigmask::epoch() != epoch {
            sigmask::kernel_mask()
        } else {
            before
        };
        set_uc_mask(u, k);
    }
}

/// Runs the program's handler for `sig` right here, as the kernel would
/// have without corun.
fn natively(sig: c_int, info: *mut siginfo_t, uc: *mut c_void, inf: &Info) {
    let i = sig as usize;
    if is_kick(inf) {
        return;
    }
    let h = HANDLER[i].load(Ordering::Acquire);
    if is_function(h) && h != 0 {
        signal_handler_enter();
        call(h, FLAGS[i].load(Ordering::Acquire), sig, info, uc);
        signal_handler_leave();
    }
}

/// The trampoline's decision for the running coroutine `t` (see the
/// module's comment); `on_stack`: the handler may run here.
fn deliver_to(
    t: &Task,
    sig: c_int,
    info: *mut siginfo_t,
    uc: *mut c_void,
    inf: &Info,
    on_stack: bool,
) {
    let open = t.ident.sigmask.load(Ordering::SeqCst) & bit(sig) == 0;
    if is_kick(inf) {
        if siginfo::value(inf) == signals::HELD_VALUE {
            // Our own, held while a handler ran (`hold`): the signals it
            // left pending run now, as they would have at its sigreturn.
            if on_stack {
                run_deferred(t);
            }
        // Preempted at a safe point, it runs them once resumed, where
        // their waits can park (`preempt::redirect_for_signals`).
        // Not at a safe point (in corun, in glibc): they stay pending
        // and the preemption monitor retries until it is; except in the
        // process's only coroutine, which the monitor never preempts and
        // whose calls never park (`sched::parking`): they run here, as
        // natively (a process signal the kernel gave an idle worker, for
        // `main` asleep in `nanosleep`, waited for ever).
        } else if on_stack && !sched::preempt::redirect_for_signals(uc) {
            if sched::preempt::enabled() && !sched::alone() {
                sched::preempt::signals_left_pending();
            } else {
                run_deferred(t);
            }
        }
    } else if is_fault(sig, inf) {
        if on_stack {
            // Its waits may park (`sched::fault_park`).
            sched::fault_park::run(uc, || in_place(t, sig, info, uc, true));
        } else {
            in_place(t, sig, info, uc, false);
        }
    } else if to_this_thread(sig, inf) {
        if open && on_stack {
            in_place(t, sig, info, uc, true);
        } else {
            signals::give(t, sig, inf);
        }
    } else if open && on_stack && (signals::task_is_main(t) || !signals::main_takes(sig)) {
        in_place(t, sig, info, uc, true);
    } else {
        signals::to_process(sig, inf);
    }
}

/// A trampoline nested in another of ours on this thread left a signal
/// pending for `t`, the coroutine both interrupted, after the outer one
/// looked for pending signals for the last time. Natively it would run as
/// soon as the outer handler returns; but the running coroutine looks
/// again only at its next park, and the process's only coroutine makes
/// its blocking calls as natively: never. So this worker sends itself a
/// held kick, blocked in the mask this trampoline returns with, which the
/// outer handler's sigreturn unblocks: the kernel delivers it then, and
/// the pending signals run (`deliver_to`). (A sleep of CPython's signal
/// stress test lost its SIGALRM this way and waited for ever.)
fn hold(t: &Task, uc: *mut c_void) {
    let d = signals::deliverable(t);
    if d == 0 || uc.is_null() {
        return;
    }
    let sig = d.trailing_zeros() as c_int + 1;
    // SAFETY: the kernel's ucontext for this delivery (checked non-null),
    // ours until the handler returns.
    let u = unsafe { &mut *(uc as *mut libc::ucontext_t) };
    set_uc_mask(u, uc_mask(u) | bit(sig));
    signals::send_marker(crate::sys::gettid(), sig, signals::HELD_VALUE);
}

/// What the kernel calls for every signal the program handles.
pub(crate) extern "C" fn trampoline(sig: c_int, info: *mut siginfo_t, uc: *mut c_void) {
    let i = sig as usize;
    if i == 0 || i >= NSIG {
        return;
    }
    let saved_errno = errno();
    if sig == sched::preempt::SIGNAL {
        // SAFETY: the kernel's siginfo for this delivery (or NULL).
        let inf = unsafe { siginfo::from_ptr(info, sig) };
        if sched::preempt::is_request(&inf) {
            // corun's own preemption request, never the program's.
            sched::preempt::on_signal(uc);
            set_errno(saved_errno);
            return;
        }
    }
    // SAFETY: the kernel's siginfo for this delivery (or NULL).
    let inf = unsafe { siginfo::from_ptr(info, sig) };
    if sig == sched::pool_kick::SIGNAL && sched::pool_kick::is_kick(&inf) {
        // corun's kick for a helper thread, sent before the program set
        // this handler: it cut the helper's call short, and is not the
        // program's.
        set_errno(saved_errno);
        return;
    }
    async_signal_enter();
    match sched::current() {
        // Not a coroutine's thread, or a process confined by seccomp
        // (signals are the kernel's there): the handler runs here, natively.
        _ if sched::confined::is() => natively(sig, info, uc, &inf),
        None if sched::worker::current_worker().is_none() => natively(sig, info, uc, &inf),
        None => {
            // The scheduler or runtime code of a worker was interrupted:
            // nobody to run it here.
            if is_fault(sig, &inf) {
                let h = HANDLER[i].load(Ordering::Acquire);
                if is_function(h) && h != 0 {
                    call(h, FLAGS[i].load(Ordering::Acquire), sig, info, uc);
                }
            } else if !is_kick(&inf) {
                signals::to_process(sig, &inf);
            }
        }
        Some(t) => {
            // SAFETY: `uc` is the kernel's ucontext for this delivery.
            let sp = unsafe { interrupted_sp(uc) };
            // On the coroutine's stack, or inside a trampoline that runs a
            // signal in place for it there (a handler with SA_ONSTACK runs
            // on the worker's alternate stack): the kernel would nest this
            // one in it, and so does corun. Or on a stack the program
            // switched to itself (a fiber's): the coroutine's code too.
            let on_stack = sched::current_stack().is_some_and(|(lo, hi)| (lo..hi).contains(&sp))
                || in_place_delivery()
                // SAFETY: `uc` is the kernel's ucontext for this delivery.
                || unsafe { on_program_stack(sp, uc) };
            if on_stack {
                in_place_enter();
            }
            deliver_to(&t, sig, info, uc, &inf, on_stack);
            if on_stack {
                in_place_leave();
            // SAFETY: `uc` is the kernel's ucontext for this delivery.
            } else if unsafe { interrupted_on_altstack(uc) } {
                // Nested in a trampoline of ours past its last look (or
                // in one that did not interrupt the coroutine's code).
                hold(&t, uc);
            }
        }
    }
    async_signal_leave();
    set_errno(saved_errno);
}
