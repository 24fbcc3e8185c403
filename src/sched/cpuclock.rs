//! A coroutine thread's own CPU clock.
//!
//! Natively each thread has a CPU-time clock (`CLOCK_THREAD_CPUTIME_ID`
//! for itself, `pthread_getcpuclockid` for any): profilers, the JVM's
//! `ThreadMXBean`, CPython's `time.thread_time` and its own test of
//! `pthread_getcpuclockid` read it. A worker's kernel clock counts every
//! coroutine that ran there, so a coroutine's clock is kept here: the CPU
//! time of its worker's thread between each resume and the suspension that
//! follows, added up.
//!
//! Reading the thread's CPU time is a system call (~0.2 us), too dear for
//! every switch of every coroutine, so a clock is kept only for coroutines
//! somebody asked about (`track`): from then on the scheduler samples
//! around each of its resumes (`resumed`, `suspended`). A clock first read
//! while its coroutine runs starts counting at that moment, not at the
//! thread's start: every use seen (intervals, rates) takes differences.
//!
//! Readers on other threads: `resumed_at` is 0 while the coroutine does
//! not run; else the reader adds what the worker's kernel clock moved
//! since. A reader racing a suspension may see one slice twice or not at
//! all for that one read: never a clock that goes back for the coroutine
//! itself, which reads while it runs.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

#[derive(Default)]
pub struct CpuClock {
    /// Somebody asked: the scheduler samples around each resume.
    tracked: AtomicBool,
    /// CPU time of finished slices, ns.
    total: AtomicU64,
    /// The worker thread's CPU time when the current slice began (0: the
    /// coroutine does not run, or is not tracked).
    resumed_at: AtomicU64,
    /// The kernel tid of the worker running the current slice.
    worker: AtomicI32,
}

/// CPU time of the calling kernel thread, ns.
fn own_thread_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
}

/// The kernel's CPU clock of thread `tid` (clock_getcpuclockid's
/// encoding: per thread, scheduler time).
pub fn kernel_thread_clock(tid: i32) -> libc::clockid_t {
    ((!(tid as libc::clockid_t)) << 3) | 6
}

/// CPU time of the kernel thread `tid` (of this process), ns.
pub fn thread_cpu_ns(tid: i32) -> Option<u64> {
    clock_ns(kernel_thread_clock(tid))
}

/// CPU time of worker `w`'s thread, ns (None before it started): what the
/// preemption monitor and the watchdog tell a computing run by.
pub fn worker_thread_ns(w: &super::worker::Worker) -> Option<u64> {
    let tid = w.tid.load(Ordering::Relaxed);
    if tid <= 0 {
        return None;
    }
    thread_cpu_ns(tid)
}

fn clock_ns(clk: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: the raw system call with a valid out-pointer (the hook of
    // clock_gettime is not for the runtime's own reads).
    let r = unsafe { crate::sys::real::syscall!(libc::SYS_clock_gettime, clk, &mut ts) };
    (r == 0).then(|| crate::sys::timespec_ns(&ts))
}

impl CpuClock {
    /// Starts keeping this clock. `running_here`: the coroutine runs on
    /// the calling thread now (its current slice counts from now).
    pub fn track(&self, running_here: bool) {
        if self.tracked.swap(true, Ordering::AcqRel) {
            return;
        }
        if running_here {
            self.worker.store(crate::sys::gettid(), Ordering::Relaxed);
            self.resumed_at
                .store(own_thread_ns().max(1), Ordering::Release);
        }
    }

    /// The scheduler resumes the coroutine on this thread.
    #[inline]
    pub fn resumed(&self, worker_tid: i32) {
        if self.tracked.load(Ordering::Relaxed) {
            self.worker.store(worker_tid, Ordering::Relaxed);
            self.resumed_at
                .store(own_thread_ns().max(1), Ordering::Release);
        }
    }

    /// The coroutine has just suspended (on this thread).
    #[inline]
    pub fn suspended(&self) {
        if self.tracked.load(Ordering::Relaxed) {
            let at = self.resumed_at.swap(0, Ordering::AcqRel);
            if at != 0 {
                let spent = own_thread_ns().saturating_sub(at);
                self.total.fetch_add(spent, Ordering::Release);
            }
        }
    }

    /// The coroutine's CPU time so far, ns. `own`: read by the coroutine
    /// itself (on the thread it runs on).
    pub fn read(&self, own: bool) -> u64 {
        let total = self.total.load(Ordering::Acquire);
        let at = self.resumed_at.load(Ordering::Acquire);
        if at == 0 {
            return total;
        }
        let now = if own {
            own_thread_ns()
        } else {
            clock_ns(kernel_thread_clock(self.worker.load(Ordering::Relaxed))).unwrap_or(at)
        };
        total + now.saturating_sub(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_only_slices_once_tracked() {
        let c = CpuClock::default();
        c.resumed(crate::sys::gettid());
        c.suspended();
        assert_eq!(c.read(true), 0, "untracked: nothing kept");
        c.track(true);
        // Spins for `ms` of this thread's own CPU time (not wall time: on
        // a loaded machine 10 ms of wall time may hold 1 ms of CPU).
        let thread_cpu_ns = || {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: a valid clock id and out-pointer.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
        };
        let spin = |ms: u64| {
            let t0 = thread_cpu_ns();
            let mut x = 0u64;
            while thread_cpu_ns() - t0 < ms * 1_000_000 {
                x = std::hint::black_box(x + 1);
            }
        };
        spin(20);
        let a = c.read(true);
        assert!(a >= 5_000_000, "a running slice counts: {a}");
        c.suspended();
        let b = c.read(false);
        assert!(b >= a);
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(c.read(false), b, "not running: the clock stands still");
        c.resumed(crate::sys::gettid());
        spin(10);
        assert!(
            c.read(false) >= b + 2_000_000,
            "read from the kernel's thread clock"
        );
    }
}
