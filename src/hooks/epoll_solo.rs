//! A coroutine alone on its worker blocks in its own `epoll_wait`.
//!
//! Parked the usual way (`epoll.rs`), an event loop that waits costs three
//! epoll calls where it natively makes one (`sched/solo.rs` says why the
//! worker may block here instead). The worker's wake eventfd joins the
//! program's epoll set, level-triggered, under a reserved tag:
//!
//! ```text
//!   data = TAG | wake fd        (TAG: a value no pointer or fd has)
//! ```
//!
//! and the wait is one real `epoll_pwait2` with the time left. Events
//! with the tag never reach the program: every epoll call of a process
//! that ever added one drops them from its results (a forked child shares
//! the parent's epoll instances, and so their tags). A wait that returns
//! only our eventfd (the worker has work: a task placed here, a signal to
//! route) or fails with EINTR (a signal) is not the program's: the caller
//! takes one round the usual way, through the scheduler.
//!
//! Per epoll fd (below `SLOTS`), one word says whose eventfd it holds:
//! the fd's generation (a closed and reused number starts afresh), the
//! wake fd registered (a forked child's worker has a new one), and
//! whether a second worker waited on it. An epoll set that coroutines of
//! two workers wait on is shared: the waiter of one worker could take the
//! other's wake-up, so nobody waits there solo any more, and each worker
//! takes its eventfd back out when it next comes by.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use libc::{epoll_event, sigset_t, timespec};

use crate::sched::fdtable;
use crate::sched::solo;
use crate::sys::{errno, now_ns, set_errno};

/// High bits of the reserved epoll data; the low 24 are the wake fd.
const TAG: u64 = 0xC0A5_17E0_0000_0000;
const TAG_MASK: u64 = !0xFF_FFFF;
/// epoll fds tracked (event loops make theirs early).
const SLOTS: usize = 1024;
/// State word: generation << 32 | SHARED | wake fd + 1 (0: none).
const SHARED: u64 = 1 << 31;
const FD_MASK: u64 = 0xFF_FFFF;

/// Whether this process ever added a wake eventfd to an epoll set.
static USED: AtomicBool = AtomicBool::new(false);
static STATE: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];

/// Outcome of a solo wait.
pub(super) enum Solo {
    /// The program's answer: events, 0 at the deadline, or -1 and errno.
    Done(c_int),
    /// Not the program's: take one round through the scheduler.
    Round,
    /// Not possible here: wait the usual way.
    No,
}

/// Whether reserved events may show up in this process's epoll sets.
pub(super) fn used() -> bool {
    USED.load(Ordering::Relaxed)
}

/// Removes reserved events from the first `n` of `ev`; returns how many
/// are left. A wake-up of this worker's own eventfd is taken (drained).
/// A tag of another worker marks `epfd` shared.
///
/// # Safety
/// `ev` holds `n` events written by the kernel.
pub(super) unsafe fn filter(epfd: c_int, ev: *mut epoll_event, n: c_int) -> c_int {
    if n <= 0 || !USED.load(Ordering::Relaxed) {
        return n;
    }
    // SAFETY: the kernel wrote `n` events there (this function's contract).
    let evs = unsafe { std::slice::from_raw_parts_mut(ev, n as usize) };
    // A look at each event's data, nothing written, until a tagged one
    // (most waits have none): the compaction below copied every event
    // through a bounds-checked loop, 27 instructions an event (callgrind,
    // Redis's solo wait returning about 30).
    let Some(first) = evs.iter().position(|e| ({ e.u64 }) & TAG_MASK == TAG) else {
        return n;
    };
    let mut kept = first;
    for i in first..evs.len() {
        let data = evs[i].u64;
        if data & TAG_MASK == TAG {
            note_tag(epfd, (data & FD_MASK) as i32);
            continue;
        }
        evs[kept] = evs[i];
        kept += 1;
    }
    kept as c_int
}

fn note_tag(epfd: c_int, wake: i32) {
    if solo::worker_wake_fd() == Some(wake) {
        solo::drain_wake();
    } else if let Some(s) = slot(epfd) {
        s.fetch_or(SHARED, Ordering::Relaxed);
    }
}

fn slot(epfd: c_int) -> Option<&'static AtomicU64> {
    STATE.get(usize::try_from(epfd).ok()?)
}

/// Forgets what was known of `epfd` (a new epoll instance got the number).
pub(super) fn reset(epfd: c_int) {
    if let Some(s) = slot(epfd) {
        s.store(0, Ordering::Relaxed);
    }
}

/// Registers `wake` in `epfd` if it is not yet; false when `epfd` is not
/// for a solo wait (shared, or the kernel refused).
fn ensure_registered(epfd: c_int, wake: i32) -> bool {
    let Some(s) = slot(epfd) else { return false };
    let gen = u64::from(fdtable::generation(epfd)) << 32;
    let want = gen | (wake as u64 + 1);
    let cur = s.load(Ordering::Relaxed);
    if cur == want {
        return true;
    }
    if cur & !0xFFFF_FFFF == gen && cur & SHARED != 0 {
        return false;
    }
    if cur & !0xFFFF_FFFF == gen && cur & FD_MASK != 0 {
        // Another worker's (or a parent's) eventfd is there: shared.
        s.fetch_or(SHARED, Ordering::Relaxed);
        return false;
    }
    let mut e = epoll_event {
        events: libc::EPOLLIN as u32,
        u64: TAG | wake as u64,
    };
    USED.store(true, Ordering::Relaxed);
    // SAFETY: a valid event struct; the kernel checks both fds.
    let r = unsafe { libc::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, wake, &mut e) };
    if r != 0 && errno() != libc::EEXIST {
        return false;
    }
    s.compare_exchange(cur, want, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
}

/// Takes this worker's eventfd out of `epfd` once it is shared.
pub(super) fn unshare(epfd: c_int) {
    let Some(s) = slot(epfd) else { return };
    let cur = s.load(Ordering::Relaxed);
    if cur & SHARED == 0 || cur & FD_MASK == 0 {
        return;
    }
    let wake = ((cur & FD_MASK) - 1) as i32;
    if solo::worker_wake_fd() != Some(wake) {
        return;
    }
    let e = errno();
    // SAFETY: plain fds; DEL ignores the event pointer.
    unsafe { libc::epoll_ctl(epfd, libc::EPOLL_CTL_DEL, wake, std::ptr::null_mut()) };
    set_errno(e);
    let _ = s.compare_exchange(cur, cur & !FD_MASK, Ordering::Relaxed, Ordering::Relaxed);
}

/// Waits in the program's `epfd` itself until `deadline`, if the running
/// coroutine is alone on its worker.
pub(super) fn wait(
    epfd: c_int,
    ev: *mut epoll_event,
    max: c_int,
    deadline: Option<u64>,
    mask: *const sigset_t,
) -> Solo {
    let Some(wake) = solo::solo_wake_fd() else {
        return Solo::No;
    };
    if !ensure_registered(epfd, wake) {
        return Solo::No;
    }
    let ts = deadline.map(|d| crate::sys::ns_timespec(d.saturating_sub(now_ns())));
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const timespec);
    let call = || {
        if !crate::sys::epoll::pwait2_missing() {
            // SAFETY: the caller's epoll_pwait contract; `tsp` is NULL or a live timespec.
            let r = unsafe { super::epoll::next::epoll_pwait2(epfd, ev, max, tsp, mask) };
            if r >= 0 || errno() != libc::ENOSYS {
                return r;
            }
            crate::sys::epoll::note_pwait2_missing();
        }
        // No epoll_pwait2 (Linux < 5.11): the time left in whole
        // milliseconds, rounded up, as the program's own timeout was.
        let ms = match deadline {
            None => -1,
            Some(d) => d
                .saturating_sub(now_ns())
                .div_ceil(1_000_000)
                .min(c_int::MAX as u64) as c_int,
        };
        // SAFETY: as above.
        unsafe { super::epoll::next::epoll_pwait(epfd, ev, max, ms, mask) }
    };
    let Some(r) = solo::sleep_solo(wake, call) else {
        return Solo::No;
    };
    if r < 0 {
        return if errno() == libc::EINTR {
            Solo::Round
        } else {
            Solo::Done(r)
        };
    }
    if r == 0 {
        return Solo::Done(0);
    }
    // SAFETY: the kernel wrote `r` events to `ev`.
    match unsafe { filter(epfd, ev, r) } {
        0 => Solo::Round,
        n => Solo::Done(n),
    }
}
