//! Stacks the program switched to itself: user-level fibers (Boost.Context
//! and Boost.Fiber, a runtime's own coroutines, hand-written stack
//! switches) run a thread's code on a stack corun did not make. The
//! preemption handler (`preempt.rs`) needs the bounds of the stack it
//! interrupts: room below the sp for the trampoline's frame, and a top
//! for the safe-point test's walk and scan (`preempt_safe.rs`). For the
//! coroutine's own stack it has them; for a foreign one it refused, so a
//! thread computing on a fiber stack was never preempted: Boost.Fiber's
//! `work_stealing` scheduler spins on its dispatcher fiber's stack while
//! it has nothing to run, and a worker running one spun for good while
//! the program's main thread, runnable on the same worker, never ran.
//!
//! The handler cannot read `/proc/self/maps` (it may interrupt anything),
//! so the work is split: the handler records, per worker, the sp it found
//! off the coroutine's stack (`bounds`, refusing this time); the monitor
//! thread, in normal context at its next tick, looks that sp up in
//! `/proc/self/maps` and publishes the private read-write mapping that
//! holds it (`refresh`); the handler's next request finds the bounds and
//! checks, with `msync` (async-signal-safe: it fails with ENOMEM if any
//! page of the range is unmapped), that the range is still mapped before
//! the walk reads it. A stack carved from a bigger mapping (a heap) gets
//! that mapping's top: the scan is bounded (`MAX_SCAN_WORDS`) and refuses
//! past it, never reads outside the mapping.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::config::MAX_WORKERS;

/// An sp the handler found off the running coroutine's stack (0: none).
#[link_section = "corun_fork_tables"] // read after a fork: sys::ForkReset
static SEEN: [AtomicUsize; MAX_WORKERS] = [const { AtomicUsize::new(0) }; MAX_WORKERS];
/// The mapping the monitor found for it: `LO[i] .. HI[i]` (HI 0: none).
/// Written HI = 0, LO, HI; read HI, LO, HI.
#[link_section = "corun_fork_tables"] // read after a fork: sys::ForkReset
static LO: [AtomicUsize; MAX_WORKERS] = [const { AtomicUsize::new(0) }; MAX_WORKERS];
#[link_section = "corun_fork_tables"] // read after a fork: sys::ForkReset
static HI: [AtomicUsize; MAX_WORKERS] = [const { AtomicUsize::new(0) }; MAX_WORKERS];

/// The handler's side: the bounds `(lo, top)` of the mapping that holds
/// `sp`, published for worker `index` and still mapped; else `None`, and
/// `sp` is left for the monitor to look up. Async-signal-safe.
pub(super) fn bounds(index: usize, sp: usize) -> Option<(usize, usize)> {
    let hi = HI[index].load(Ordering::SeqCst);
    let lo = LO[index].load(Ordering::SeqCst);
    if hi != 0 && HI[index].load(Ordering::SeqCst) == hi && lo <= sp && sp < hi {
        // SAFETY: msync only inspects the range; flags 0 asks for nothing
        // to be written back, and it fails with ENOMEM where a page is
        // not mapped.
        let r = unsafe {
            crate::sys::real::syscall!(libc::SYS_msync, lo as *mut libc::c_void, hi - lo, 0)
        };
        if r == 0 {
            return Some((lo, hi));
        }
    }
    SEEN[index].store(sp, Ordering::Relaxed);
    None
}

/// The monitor's side: when the handler of worker `index` left an sp no
/// published mapping holds, looks it up in `/proc/self/maps`.
pub(super) fn refresh(index: usize) {
    let sp = SEEN[index].swap(0, Ordering::Relaxed);
    if sp == 0 {
        return;
    }
    let (lo, hi) = (
        LO[index].load(Ordering::SeqCst),
        HI[index].load(Ordering::SeqCst),
    );
    if lo <= sp && sp < hi {
        return;
    }
    let Some(maps) = super::proc_view::maps() else {
        return;
    };
    let Some((lo, hi)) = mapping_of(&maps, sp) else {
        return;
    };
    HI[index].store(0, Ordering::SeqCst);
    LO[index].store(lo, Ordering::SeqCst);
    HI[index].store(hi, Ordering::SeqCst);
}

/// The private read-write mapping of `maps` (the text of
/// `/proc/PID/maps`) that holds `addr`.
fn mapping_of(maps: &[u8], addr: usize) -> Option<(usize, usize)> {
    for line in maps.split(|&c| c == b'\n') {
        let mut fields = line.split(|&c| c == b' ');
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        let mut ends = range.split(|&c| c == b'-');
        let (Some(lo), Some(hi)) = (ends.next().and_then(hex), ends.next().and_then(hex)) else {
            continue;
        };
        if lo <= addr && addr < hi {
            let private_rw = perms.starts_with(b"rw") && perms.get(3) == Some(&b'p');
            return private_rw.then_some((lo, hi));
        }
    }
    None
}

fn hex(s: &[u8]) -> Option<usize> {
    usize::from_str_radix(std::str::from_utf8(s).ok()?, 16).ok()
}

/// After a fork: the child's worker indices start afresh.
pub(super) fn reset() {
    use crate::sys::ForkReset;
    for i in 0..MAX_WORKERS {
        SEEN[i].reset_to(0);
        HI[i].reset_to(0);
        LO[i].reset_to(0);
    }
}

#[cfg(test)]
mod tests {
    use super::mapping_of;

    const MAPS: &[u8] = b"55d0a0000000-55d0a0021000 r--p 00000000 08:01 123 /usr/bin/x\n\
7f0000000000-7f0000040000 rw-p 00000000 00:00 0 \n\
7f0000040000-7f0000041000 ---p 00000000 00:00 0 \n\
7f0000041000-7f0000080000 rw-s 00000000 00:01 9 /dev/shm/x\n";

    #[test]
    fn finds_the_private_writable_mapping() {
        assert_eq!(
            mapping_of(MAPS, 0x7f000003f000),
            Some((0x7f0000000000, 0x7f0000040000))
        );
        assert_eq!(mapping_of(MAPS, 0x7f0000040800), None, "guard page");
        assert_eq!(mapping_of(MAPS, 0x7f0000050000), None, "shared mapping");
        assert_eq!(mapping_of(MAPS, 0x55d0a0000100), None, "read-only");
        assert_eq!(mapping_of(MAPS, 0x1000), None, "unmapped");
    }
}
