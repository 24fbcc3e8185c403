//! SYS_futex through `syscall()`, as the kernel does it, on the table of
//! `sched::sync` that the pthread objects share with native threads: waits
//! park a coroutine, wakes reach coroutines and threads (the module comment
//! of `syscall/mod.rs` says how each command is made).

use std::ffi::{c_int, c_long};
use std::sync::atomic::{AtomicU32, Ordering};

use super::{fail, real6};
use crate::sched::in_coroutine;
use crate::sched::sync::{self, Deadline, WaitResult, MATCH_ANY};
use crate::sys::{errno, set_errno};

const FUTEX_WAIT: c_int = libc::FUTEX_WAIT;
const FUTEX_WAKE: c_int = libc::FUTEX_WAKE;
const FUTEX_REQUEUE: c_int = libc::FUTEX_REQUEUE;
const FUTEX_CMP_REQUEUE: c_int = libc::FUTEX_CMP_REQUEUE;
const FUTEX_WAKE_OP: c_int = libc::FUTEX_WAKE_OP;
const FUTEX_WAIT_BITSET: c_int = libc::FUTEX_WAIT_BITSET;
const FUTEX_WAKE_BITSET: c_int = libc::FUTEX_WAKE_BITSET;
const PRIVATE: c_int = libc::FUTEX_PRIVATE_FLAG;
const REALTIME: c_int = libc::FUTEX_CLOCK_REALTIME;

/// How often a coroutine waiting on a shared futex looks at its word.
const SHARED_PAUSE_NS: u64 = 10_000_000;

/// One SYS_futex call's arguments, as the caller passed them.
#[derive(Clone, Copy)]
pub(super) struct Call {
    pub(super) uaddr: c_long,
    pub(super) op: c_int,
    pub(super) val: c_long,
    /// The timeout, or the second count (requeues, FUTEX_WAKE_OP).
    pub(super) t: c_long,
    pub(super) uaddr2: c_long,
    pub(super) val3: c_long,
}

impl Call {
    /// The command, without FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME.
    fn cmd(&self) -> c_int {
        self.op & !(PRIVATE | REALTIME)
    }

    /// The real futex call with these arguments.
    fn kernel(&self) -> c_long {
        let a = [
            self.uaddr,
            self.op as c_long,
            self.val,
            self.t,
            self.uaddr2,
            self.val3,
        ];
        real6(libc::SYS_futex, a)
    }

    /// The real FUTEX_WAKE of `n` on `uaddr`, private if this call is.
    fn kernel_wake(&self, uaddr: c_long, n: usize) -> c_long {
        let op = FUTEX_WAKE | (self.op & PRIVATE);
        let wake = Call {
            uaddr,
            op,
            val: n as c_long,
            t: 0,
            uaddr2: 0,
            val3: 0,
        };
        wake.kernel()
    }
}

/// SYS_futex, where corun has a part; None: the kernel's call as it is.
pub(super) fn futex(c: Call) -> Option<c_long> {
    match c.cmd() {
        FUTEX_WAIT | FUTEX_WAIT_BITSET if in_coroutine() => Some(wait(c)),
        // FUTEX_CLOCK_REALTIME on anything but a wait: the kernel's ENOSYS.
        _ if c.op & REALTIME != 0 => None,
        FUTEX_WAKE | FUTEX_WAKE_BITSET => wake(c),
        FUTEX_REQUEUE | FUTEX_CMP_REQUEUE => requeue(c),
        FUTEX_WAKE_OP => wake_op(c),
        _ => None,
    }
}

/// A deadline of 0 on the monotonic clock: passed, for `futex_waitv`'s
/// attempt (`waitv.rs`; it still arms a kernel timer, see there).
pub(super) const PAST: libc::timespec = libc::timespec {
    tv_sec: 0,
    tv_nsec: 0,
};

/// The caller's timeout in ns (None: none); EINVAL as the kernel says it.
pub(super) fn timeout_ns(t: c_long) -> Result<Option<u64>, c_int> {
    if t == 0 {
        return Ok(None);
    }
    // SAFETY: the timeout the caller passed (see the module comment).
    let ts = unsafe { *(t as *const libc::timespec) };
    if ts.tv_sec < 0 || !(0..1_000_000_000).contains(&ts.tv_nsec) {
        return Err(libc::EINVAL);
    }
    Ok(Some(crate::sys::timespec_ns(&ts)))
}

/// The deadline of one park: the caller's, or sooner the next look at a
/// shared futex's word.
pub(super) fn with_pause(deadline: Option<Deadline>, shared: bool) -> Option<Deadline> {
    let pause = shared.then(|| crate::sys::now_ns() + SHARED_PAUSE_NS);
    match (deadline, pause) {
        (Some(d), Some(p)) => Some(Deadline::Monotonic(d.monotonic().min(p))),
        (d, None) => d,
        (None, Some(p)) => Some(Deadline::Monotonic(p)),
    }
}

/// A wait from a coroutine.
fn wait(c: Call) -> c_long {
    let (cmd, op, val) = (c.cmd(), c.op, c.val as u32);
    let bits = if cmd == FUTEX_WAIT {
        MATCH_ANY
    } else {
        c.val3 as u32
    };
    let deadline = match timeout_ns(c.t) {
        Err(e) => return fail(e),
        Ok(None) => None,
        Ok(Some(ns)) => Some(if cmd == FUTEX_WAIT {
            Deadline::Monotonic(crate::sys::now_ns().saturating_add(ns))
        } else if op & REALTIME != 0 {
            Deadline::Realtime(ns)
        } else {
            Deadline::Monotonic(ns)
        }),
    };
    if bits == 0 {
        // The kernel's answer to a wait that no wake could match.
        return fail(libc::EINVAL);
    }
    // The check, by the kernel: FUTEX_CMP_REQUEUE of nobody from the word
    // to itself compares the word with `val` (EAGAIN when it differs),
    // and fails as the wait would for an unaligned (EINVAL) or unmapped
    // (EFAULT) address, without sleeping. A FUTEX_WAIT_BITSET with a
    // deadline already past, as this check was made before, arms a timer
    // and sleeps until it fires: 150-200 us per call at load 15 on this
    // 2-CPU machine (1 us for this one), paid by every contended wait of
    // GLib's bit locks, libstdc++'s and Rust std's; GLib's 1bit-mutex test
    // took 45 s under corun against 26 s natively.
    let r = Call {
        op: FUTEX_CMP_REQUEUE | (op & PRIVATE),
        val: 0,
        t: 0,
        uaddr2: c.uaddr,
        val3: val as c_long,
        ..c
    }
    .kernel();
    if r < 0 {
        return -1;
    }
    if deadline.is_some_and(|d| d.passed()) {
        return fail(libc::ETIMEDOUT);
    }
    // SAFETY: the kernel just read this aligned word; it is the program's
    // futex, which it keeps alive while it waits on it.
    let word = unsafe { &*(c.uaddr as *const AtomicU32) };
    let shared = op & PRIVATE == 0;
    let mut first = true;
    loop {
        match sync::park_on(word, val, bits, with_pause(deadline, shared)) {
            WaitResult::Woken => return 0,
            // The word changed while we slept: a wake we could not see.
            WaitResult::Mismatch if !first => return 0,
            WaitResult::Mismatch => return fail(libc::EAGAIN),
            WaitResult::TimedOut if deadline.is_some_and(|d| d.passed()) => {
                return fail(libc::ETIMEDOUT)
            }
            WaitResult::TimedOut => first = false,
        }
    }
}

/// How many a futex wake wakes: the kernel wakes one for a count <= 0.
fn wake_count(v: c_long) -> usize {
    let v = v as c_int;
    if v <= 0 {
        1
    } else {
        v as usize
    }
}

/// The kernel's result for the sleepers the table did not have, added to
/// the `k` it had; errno is left alone when the sum is a success.
fn plus_kernel(k: usize, call: impl FnOnce() -> c_long) -> c_long {
    let saved = errno();
    let r = call();
    if r >= 0 {
        k as c_long + r
    } else if k > 0 {
        set_errno(saved);
        k as c_long
    } else {
        r
    }
}

fn wake(c: Call) -> Option<c_long> {
    let bits = if c.cmd() == FUTEX_WAKE_BITSET {
        c.val3 as u32
    } else {
        MATCH_ANY
    };
    // Arguments the kernel refuses are its to refuse.
    if bits == 0 || c.uaddr & 3 != 0 || !sync::any_parked() {
        return None;
    }
    let n = wake_count(c.val);
    let k = sync::wake_parked(c.uaddr as usize, n, bits);
    if k >= n {
        return Some(k as c_long);
    }
    Some(plus_kernel(k, || {
        let val = if k == 0 { c.val } else { (n - k) as c_long };
        Call { val, ..c }.kernel()
    }))
}

fn requeue(c: Call) -> Option<c_long> {
    let (n_wake, n_move) = (c.val as c_int, c.t as u32 as c_int);
    if n_wake < 0 || n_move < 0 || (c.uaddr | c.uaddr2) & 3 != 0 || !sync::any_parked() {
        return None;
    }
    let cmp = c.cmd() == FUTEX_CMP_REQUEUE;
    let check = || {
        // SAFETY: only called when coroutines sleep on this word: it is
        // an aligned, live futex of the program's.
        let word = unsafe { &*(c.uaddr as *const AtomicU32) };
        !cmp || word.load(Ordering::SeqCst) == c.val3 as u32
    };
    let (n_wake, n_move) = (n_wake as usize, n_move as usize);
    match sync::requeue_parked(c.uaddr as usize, c.uaddr2 as usize, n_wake, n_move, check) {
        None => Some(fail(libc::EAGAIN)),
        Some((0, 0)) => None,
        Some((w, m)) => Some(plus_kernel(w + m, || {
            // The comparison was made: the rest is a plain requeue.
            Call {
                op: FUTEX_REQUEUE | (c.op & PRIVATE),
                val: (n_wake - w) as c_long,
                t: (n_move - m) as c_long,
                val3: 0,
                ..c
            }
            .kernel()
        })),
    }
}

/// FUTEX_WAKE_OP's operation, decoded as the kernel does: the new value
/// from the old, and the condition on the old value.
fn decode_op(v: u32) -> Option<(impl Fn(u32) -> u32, impl Fn(u32) -> bool)> {
    let sext12 = |x: u32| ((x << 20) as i32) >> 20;
    let (op, cmp) = ((v >> 28) & 7, (v >> 24) & 15);
    let mut oparg = sext12((v >> 12) & 0xfff);
    let cmparg = sext12(v & 0xfff);
    if v & (8 << 28) != 0 {
        oparg = 1 << (oparg & 31);
    }
    let oparg = oparg as u32;
    if op > 4 || cmp > 5 {
        return None;
    }
    let apply = move |old: u32| match op {
        0 => oparg,
        1 => old.wrapping_add(oparg),
        2 => old | oparg,
        3 => old & !oparg,
        _ => old ^ oparg,
    };
    let test = move |old: u32| {
        let o = old as i32;
        match cmp {
            0 => o == cmparg,
            1 => o != cmparg,
            2 => o < cmparg,
            3 => o <= cmparg,
            4 => o > cmparg,
            _ => o >= cmparg,
        }
    };
    Some((apply, test))
}

fn wake_op(c: Call) -> Option<c_long> {
    if (c.uaddr | c.uaddr2) & 3 != 0 || !sync::any_parked() {
        return None;
    }
    let (apply, test) = decode_op(c.val3 as u32)?;
    let (n1, n2) = (wake_count(c.val), wake_count(c.t as u32 as c_long));
    let r = sync::wake_two(c.uaddr as usize, n1, c.uaddr2 as usize, n2, |parked| {
        if !parked {
            // No coroutine concerned: the kernel's call, made while no
            // coroutine can start waiting on either word.
            return Err(c.kernel());
        }
        // SAFETY: a coroutine sleeps on one of the words (see the module
        // comment for the other); aligned, the program's futex.
        let w2 = unsafe { &*(c.uaddr2 as *const AtomicU32) };
        let old = w2
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |o| Some(apply(o)))
            .unwrap_or_else(|o| o);
        Ok(test(old))
    });
    let (k1, k2, cond) = match r {
        Err(r) => return Some(r),
        Ok(k) => k,
    };
    // The operation is done: what the kernel adds for its own sleepers is
    // counted, its errors are not the caller's.
    let saved = errno();
    let mut total = (k1 + k2) as c_long;
    if k1 < n1 {
        total += c.kernel_wake(c.uaddr, n1 - k1).max(0);
    }
    if cond && k2 < n2 {
        total += c.kernel_wake(c.uaddr2, n2 - k2).max(0);
    }
    set_errno(saved);
    Some(total)
}
