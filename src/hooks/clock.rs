//! `clock_gettime`, `clock_getres`: a coroutine thread's CPU clock.
//!
//! `CLOCK_THREAD_CPUTIME_ID` in a coroutine, and the clock
//! `pthread_getcpuclockid` gives for one (the kernel's encoding of a
//! thread's clock, with the thread's own tid, `pthread/tid.rs`), read the
//! coroutine's CPU time as `sched/cpuclock.rs` keeps it, not the worker's
//! thread, which counts every coroutine that ran there. Every other clock
//! is the real call after one comparison.

use std::ffi::c_int;

use libc::{clockid_t, timespec};

use crate::sched::{self, current, TaskRef};

mod real {
    use libc::{c_int, clockid_t, timespec};
    crate::sys::real::real_fns! {
        fn clock_gettime(clk: clockid_t, ts: *mut timespec) -> c_int;
        fn clock_getres(clk: clockid_t, ts: *mut timespec) -> c_int;
    }
}

/// What a clock id names, when it is a coroutine thread's CPU clock.
enum Ours {
    /// The calling coroutine's own.
    Own(sched::Running),
    /// Another coroutine thread's.
    Other(TaskRef),
    /// A coroutine thread's that no longer exists.
    Gone,
}

fn ours(clk: clockid_t) -> Option<Ours> {
    if crate::sched::confined::is() {
        return None;
    }
    if clk == libc::CLOCK_THREAD_CPUTIME_ID {
        return current().map(Ours::Own);
    }
    // A thread's CPU clock: negative, bit 2 set (per thread), the tid's
    // complement above bit 3.
    if clk >= 0 || clk & 4 == 0 {
        return None;
    }
    let tid = !(clk >> 3);
    let id = crate::hooks::pthread::task_id(tid)?;
    Some(match current() {
        Some(t) if t.id == id => Ours::Own(t),
        _ => sched::sigdispatch::find_id(id).map_or(Ours::Gone, Ours::Other),
    })
}

fn put(ts: *mut timespec, ns: u64) -> c_int {
    if ts.is_null() {
        return 0;
    }
    // SAFETY: a non-NULL out-pointer by the caller's contract.
    unsafe { *ts = crate::sys::ns_timespec(ns) };
    0
}

fn invalid() -> c_int {
    crate::sys::set_errno(libc::EINVAL);
    -1
}

#[no_mangle]
pub unsafe extern "C" fn clock_gettime(clk: clockid_t, ts: *mut timespec) -> c_int {
    if clk >= 0 && clk != libc::CLOCK_THREAD_CPUTIME_ID {
        // SAFETY: the caller's contract.
        return unsafe { real::clock_gettime(clk, ts) };
    }
    // SAFETY: as above.
    unsafe { cpu_clock_gettime(clk, ts) }
}

/// A CPU-time clock (apart, so that the other clocks' calls go to libc
/// with no frame of ours).
#[inline(never)]
unsafe fn cpu_clock_gettime(clk: clockid_t, ts: *mut timespec) -> c_int {
    match ours(clk) {
        Some(Ours::Own(t)) => {
            t.ident.cpu.track(true);
            put(ts, t.ident.cpu.read(true))
        }
        Some(Ours::Other(t)) => put(ts, t.ident.cpu.read(false)),
        Some(Ours::Gone) => invalid(),
        // SAFETY: the caller's contract.
        None => unsafe { real::clock_gettime(clk, ts) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn clock_getres(clk: clockid_t, ts: *mut timespec) -> c_int {
    match ours(clk) {
        Some(Ours::Own(_)) | Some(Ours::Other(_)) => put(ts, 1),
        Some(Ours::Gone) => invalid(),
        // SAFETY: the caller's contract.
        None => unsafe { real::clock_getres(clk, ts) },
    }
}
