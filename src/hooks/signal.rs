//! `sigwait`, `sigwaitinfo`, `sigtimedwait`, `pause`, `sigsuspend`,
//! `sched_yield`.
//!
//! The classic design "block signals everywhere, one thread sits in
//! sigwait" would hold a whole worker in the kernel under corun. In a
//! coroutine these calls instead take a signal of the set pending for the
//! coroutine (`pthread_kill`) or held by corun for the process at once, and
//! poll the kernel's with a zero-timeout `sigtimedwait`, parking a few
//! milliseconds between polls (1 ms growing to 10 ms), until a signal comes
//! or the timeout passes; a signal of the set made pending for the
//! coroutine ends the park at once. The signals must be blocked, as they
//! must be natively: when every coroutine blocks them, so do the workers
//! (`sched/sigmask.rs`), and the kernel keeps them pending.
//!
//! `pause` and `sigsuspend` park until a handler ran in the coroutine
//! (`sched/signals.rs` delivers it there), `sigsuspend` with its mask as the
//! coroutine's meanwhile.
//!
//! All five are cancellation points, as natively: their parks are
//! cancelable (`pthread_cancel` wakes them), and a due cancellation acts
//! before each park and after it. A request already due when `sigsuspend`
//! begins acts with the thread's own mask; one that comes while it waits
//! acts with the mask it waits with, as natively (glibc unwinds from its
//! cancellation signal's handler, which interrupted the kernel's
//! `sigsuspend` and runs with that mask).
//!
//! `sched_yield` in a coroutine lets the other coroutines of its worker run
//! (a spin loop waiting for a coroutine parked on the same worker would
//! otherwise spin for ever); with none runnable it yields the thread.

use std::ffi::c_int;

use libc::{siginfo_t, sigset_t, timespec};

use std::sync::atomic::Ordering;

use crate::sched::identity::cancel_point;
use crate::sched::siginfo;
use crate::sched::signals::{self, Interruptible};
use crate::sched::{current, in_coroutine, park_cancelable, sigmask, yield_now};
use crate::sys::{errno, now_ns, set_errno, timespec_ns};

mod real {
    use libc::{siginfo_t, sigset_t, timespec};
    use std::ffi::c_int;
    crate::sys::real::real_fns! {
        fn sigwait(set: *const sigset_t, sig: *mut c_int) -> c_int;
        fn sigwaitinfo(set: *const sigset_t, info: *mut siginfo_t) -> c_int;
        fn sigtimedwait(set: *const sigset_t, info: *mut siginfo_t, ts: *const timespec) -> c_int;
        fn sched_yield() -> c_int;
    }
}

/// Waits for a signal of `set` without holding the worker. Returns the
/// signal number, or -1 with errno (EAGAIN on timeout, EINVAL...; EINTR
/// when `interruptible` and a handler of another signal ran, as
/// `sigwaitinfo`/`sigtimedwait` do; `sigwait` goes on waiting).
fn wait_parking(
    set: *const sigset_t,
    info: *mut siginfo_t,
    deadline: Option<u64>,
    interruptible: bool,
) -> c_int {
    let Some(t) = current() else {
        set_errno(libc::EINVAL);
        return -1;
    };
    if set.is_null() {
        set_errno(libc::EFAULT);
        return -1;
    }
    // SAFETY: non-null, readable per the caller's contract.
    let want = unsafe { *(set as *const u64) } & !sigmask::UNBLOCKABLE;
    let zero = timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let intr = Interruptible::begin();
    let waiting = &t.ident.sig.waiting_for;
    waiting.store(want, Ordering::SeqCst);
    let mut pause = 1_000_000u64;
    let r = loop {
        if t.ident.cancel_due() {
            waiting.store(0, Ordering::SeqCst);
            cancel_point(&t.ident);
        }
        // Pending for this coroutine or held by corun for the process...
        if let Some((sig, inf)) = signals::take_in(&t, want) {
            if !info.is_null() {
                // SAFETY: a writable siginfo_t per the caller's contract.
                unsafe { std::ptr::copy_nonoverlapping(inf.as_ptr(), info as *mut u64, inf.len()) };
            }
            break sig;
        }
        // ...or in the kernel (the workers block what every coroutine does).
        // SAFETY: a zeroed siginfo_t is a valid out-buffer.
        let mut got: siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: the caller's set; our buffer; a zero timeout polls.
        let r = unsafe { real::sigtimedwait(set, &mut got, &zero) };
        if r > 0 {
            // SAFETY: the kernel filled `got` for signal `r`.
            let inf = unsafe { siginfo::from_ptr(&got, r) };
            // SAFETY: getpid has no preconditions.
            let me = unsafe { libc::getpid() };
            if siginfo::code(&inf) == libc::SI_QUEUE
                && (signals::is_marker_value(siginfo::value(&inf))
                    || crate::sched::preempt::is_request(&inf))
                && siginfo::pid(&inf) == me
            {
                // corun's own kick or preemption request to this worker,
                // left pending: not the program's signal.
                continue;
            }
            if !info.is_null() {
                // SAFETY: a writable siginfo_t per the caller's contract.
                unsafe { *info = got };
            }
            break r;
        }
        let e = errno();
        if e != libc::EAGAIN && e != libc::EINTR {
            break -1;
        }
        if interruptible && intr.check().is_some() {
            set_errno(libc::EINTR);
            break -1;
        }
        let now = now_ns();
        if deadline.is_some_and(|d| now >= d) {
            set_errno(libc::EAGAIN);
            break -1;
        }
        let mut until = now + pause;
        if let Some(d) = deadline {
            until = until.min(d);
        }
        // A signal of the set made pending for this coroutine ends the
        // park at once; the kernel's are polled.
        crate::sched::waitdesc::describe(crate::sched::waitdesc::Cause::Signal, 0);
        park_cancelable(|_| true, Some(until));
        pause = (pause * 2).min(10_000_000);
    };
    waiting.store(0, Ordering::SeqCst);
    r
}

#[no_mangle]
pub unsafe extern "C" fn sigwait(set: *const sigset_t, sig: *mut c_int) -> c_int {
    if !in_coroutine() {
        // SAFETY: the caller's sigwait contract.
        return unsafe { real::sigwait(set, sig) };
    }
    let saved = errno();
    let r = wait_parking(set, std::ptr::null_mut(), None, false);
    if r < 0 {
        let e = errno();
        set_errno(saved);
        return e;
    }
    if !sig.is_null() {
        // SAFETY: the caller passed a writable int.
        unsafe { *sig = r };
    }
    set_errno(saved);
    0
}

#[no_mangle]
pub unsafe extern "C" fn sigwaitinfo(set: *const sigset_t, info: *mut siginfo_t) -> c_int {
    if !in_coroutine() {
        // SAFETY: the caller's contract.
        return unsafe { real::sigwaitinfo(set, info) };
    }
    wait_parking(set, info, None, true)
}

#[no_mangle]
pub unsafe extern "C" fn sigtimedwait(
    set: *const sigset_t,
    info: *mut siginfo_t,
    ts: *const timespec,
) -> c_int {
    if !in_coroutine() || ts.is_null() {
        if ts.is_null() && in_coroutine() {
            return wait_parking(set, info, None, true);
        }
        // SAFETY: the caller's contract.
        return unsafe { real::sigtimedwait(set, info, ts) };
    }
    // SAFETY: non-null and readable per the contract.
    let t = unsafe { *ts };
    if t.tv_nsec < 0 || t.tv_nsec >= 1_000_000_000 || t.tv_sec < 0 {
        set_errno(libc::EINVAL);
        return -1;
    }
    wait_parking(
        set,
        info,
        Some(now_ns().saturating_add(timespec_ns(&t))),
        true,
    )
}

#[no_mangle]
pub unsafe extern "C" fn sched_yield() -> c_int {
    if !in_coroutine() {
        // SAFETY: no arguments.
        return unsafe { real::sched_yield() };
    }
    if crate::sched::worker::current_worker().is_some_and(|w| w.has_other_work()) {
        yield_now();
        return 0;
    }
    // Nothing else to run here: counted all the same (yield_now counts
    // the other case), the watchdog's sign that this coroutine yields.
    crate::sched::stats::yielded();
    // A loop of sched_yield waiting for a thread parked on an fd of this
    // worker (GLib's tests: a GMainContext woken through its eventfd) would
    // never let the worker look at its netpoller: after a slice, it does
    // (`sched::slice`), and what woke runs.
    crate::sched::slice::yield_if_slice_spent();
    // SAFETY: no arguments.
    unsafe { real::sched_yield() }
}

mod real_wait {
    use libc::sigset_t;
    use std::ffi::c_int;
    crate::sys::real::real_fns! {
        fn pause() -> c_int;
        fn sigsuspend(mask: *const sigset_t) -> c_int;
    }
}

/// Parks until a handler ran in this coroutine, with `mask` (if any) as
/// its mask meanwhile; then -1/EINTR, as `pause` and `sigsuspend` return.
fn suspend_parking(mask: Option<u64>) -> c_int {
    let Some(t) = current() else {
        set_errno(libc::EINVAL);
        return -1;
    };
    // A request due already acts before the mask changes.
    cancel_point(&t.ident);
    let intr = Interruptible::begin();
    let old = mask.map(|m| {
        let old = signals::set_mask(&t, m);
        // What `mask` lets through, pending in the kernel or on corun's
        // side, is delivered now.
        signals::sync_here();
        signals::run_pending(&t);
        old
    });
    let restore = |old: Option<u64>| {
        if let Some(old) = old {
            signals::set_mask(&t, old);
            signals::sync_here();
        }
    };
    while intr.check().is_none() {
        // A request that came during the wait acts with the mask the call
        // waits with, as natively: glibc's cancellation signal interrupts
        // the kernel's sigsuspend, whose mask its handler keeps, and
        // unwinds from there. (The park acts on a request that lands just
        // before it the same way.)
        cancel_point(&t.ident);
        crate::sched::waitdesc::describe(crate::sched::waitdesc::Cause::Signal, 0);
        park_cancelable(|_| true, None);
    }
    restore(old);
    set_errno(libc::EINTR);
    -1
}

/// `pause` in a coroutine parks until a handler ran in it (a signal sent to
/// the process runs in main first, as on Linux).
#[no_mangle]
pub unsafe extern "C" fn pause() -> c_int {
    if !in_coroutine() {
        // SAFETY: no arguments.
        return unsafe { real_wait::pause() };
    }
    suspend_parking(None)
}

/// `sigsuspend(mask)` in a coroutine: `mask` becomes its mask until a
/// handler ran, then the old mask is back and the call fails with EINTR.
#[no_mangle]
pub unsafe extern "C" fn sigsuspend(mask: *const sigset_t) -> c_int {
    if !in_coroutine() || mask.is_null() {
        // SAFETY: the caller's contract.
        return unsafe { real_wait::sigsuspend(mask) };
    }
    // SAFETY: non-null, readable per the contract.
    suspend_parking(Some(unsafe { *(mask as *const u64) }))
}
