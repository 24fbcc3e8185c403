//! The OS layer, kept thin and apart (in the manner of mio's `sys`): real libc
//! symbols, errno, clocks, epoll and eventfd. Nothing here knows about
//! coroutines; everything above calls the kernel only through this module or
//! through `libc` functions that corun does not interpose.

pub mod alloc;
pub mod block_cache;
pub mod cgroup_cpu;
pub mod epoll;
pub mod futex;
pub mod nocancel;
pub mod private_read;
pub mod procfs;
pub mod real;
pub mod static_tls;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The calling thread's errno.
#[inline]
pub fn errno() -> i32 {
    // SAFETY: __errno_location always returns this thread's errno slot.
    unsafe { *libc::__errno_location() }
}

/// Sets the calling thread's errno. Hooks call this last, after their final
/// switch, so the value lands in the thread that returns to the program
/// (docs/ARCHITECTURE.md §5.2).
#[inline]
pub fn set_errno(e: i32) {
    // SAFETY: as in `errno`.
    unsafe { *libc::__errno_location() = e }
}

/// Writes to fd 2 with the raw syscall: no hook, no allocation, no lock, so it
/// is usable from a signal handler and before the runtime exists.
pub fn raw_stderr(msg: &[u8]) {
    let mut off = 0;
    while off < msg.len() {
        // SAFETY: the pointer and length describe a live slice.
        let n = unsafe {
            crate::sys::real::syscall!(libc::SYS_write, 2, msg[off..].as_ptr(), msg.len() - off)
        };
        if n <= 0 {
            if n < 0 && errno() == libc::EINTR {
                continue;
            }
            return;
        }
        off += n as usize;
    }
}

/// Formats `v` in decimal into `buf`, returning the used tail (no allocation).
pub fn fmt_u64(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

/// Monotonic time in nanoseconds (vDSO, no syscall).
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Converts a timespec duration to nanoseconds, saturating.
pub fn timespec_ns(ts: &libc::timespec) -> u64 {
    (ts.tv_sec.max(0) as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec.max(0) as u64)
}

/// A nanosecond count as a timespec.
pub fn ns_timespec(ns: u64) -> libc::timespec {
    let d = Duration::from_nanos(ns);
    libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    }
}

/// Page size of the machine (asked once: every spawn rounds its stack
/// size with it, and sysconf was 1% of a spawn and join).
#[inline]
pub fn page_size() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static PAGE: AtomicUsize = AtomicUsize::new(0);
    let p = PAGE.load(Ordering::Relaxed);
    if p != 0 {
        return p;
    }
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let p = if p > 0 { p as usize } else { 4096 };
    PAGE.store(p, Ordering::Relaxed);
    p
}

/// Number of CPUs this process may run on.
pub fn available_cpus() -> usize {
    // The kernel's call, not the exported hook (a coroutine thread's hook
    // gives the mask the thread set: hooks/pthread/affinity.rs).
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if real::syscall!(libc::SYS_sched_getaffinity, 0, size, &mut set) > 0 {
            let n = libc::CPU_COUNT(&set);
            if n > 0 {
                return n as usize;
            }
        }
    }
    1
}

/// Where runtime fds go at most: the kernel's fd table grows to the
/// highest fd open, and every `fork` copies it (an fd near 20,000 made each
/// fork of a fork-per-connection server ~150 us slower; near 4,000, the
/// copy was still 7% of such a server's time). Below 1,024 they also stay
/// where `select` can see fds, as natively.
const FD_CEILING: u64 = 1024;

/// How many fd numbers below the top runtime fds may take: 64, or four per
/// worker and a margin on a machine of many CPUs (`reserve_runtime_fds`).
/// With 64 slots and 64 workers, the fds of workers 28 and up did not fit
/// and fell back to the lowest free numbers: a program's first `dup` gave
/// 68, not 3.
static FD_SLOTS: AtomicUsize = AtomicUsize::new(64);

/// Makes room for the runtime fds of `workers` workers: an epoll instance,
/// an eventfd and two kept /proc files each (`procfs.rs`), with 48 more for
/// the others (the dump's eventfd, files kept for parked calls, maps). The top moves above `FD_CEILING` by as
/// much as the room grows beyond 64, where the soft limit allows.
pub fn reserve_runtime_fds(workers: usize) {
    FD_SLOTS.store((4 * workers + 48).max(64), Ordering::Relaxed);
}

/// Moves a runtime fd out of the low numbers a program expects to get
/// (a program that prints or assumes its first socket is fd 3 must see the
/// same numbers under corun): duplicated close-on-exec to the top of the
/// soft RLIMIT_NOFILE range, or just below `FD_CEILING` if that is lower,
/// the original closed. Falls back to `fd`.
pub fn move_fd_high(fd: i32) -> i32 {
    let nfd = dup_high(fd, fd + 1);
    if nfd < 0 {
        return fd;
    }
    // SAFETY: raw close of an fd this function owns (the hook for the
    // name must not see runtime fds).
    unsafe { crate::sys::real::syscall!(libc::SYS_close, fd) };
    nfd
}

/// A close-on-exec duplicate of `fd` where `move_fd_high` puts runtime fds
/// (at `min` or above), -1 (errno set) if there is no room there.
pub fn dup_high(fd: i32, min: i32) -> i32 {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `rl` is a valid out-pointer.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) };
    let slots = FD_SLOTS.load(Ordering::Relaxed) as u64;
    let soft = rl.rlim_cur.min(FD_CEILING + (slots - 64)) as i64;
    let base = (soft - slots as i64).max(min as i64);
    if base >= soft {
        set_errno(libc::EMFILE);
        return -1;
    }
    // SAFETY: raw fcntl (the hook for the name must not see runtime fds).
    unsafe { crate::sys::real::syscall!(libc::SYS_fcntl, fd, libc::F_DUPFD_CLOEXEC, base) as i32 }
}

/// Starts a detached kernel thread running `f()`. Always the *real*
/// pthread_create: corun's own threads (workers, helpers, the watchdog)
/// must be kernel threads, never coroutines.
pub fn spawn_native_thread(f: Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()> {
    extern "C" fn body(arg: *mut libc::c_void) -> *mut libc::c_void {
        // SAFETY: `arg` is the Box<Box<dyn FnOnce>> leaked below, taken once.
        let f = unsafe { Box::from_raw(arg as *mut Box<dyn FnOnce() + Send>) };
        f();
        std::ptr::null_mut()
    }
    let arg = Box::into_raw(Box::new(f)) as *mut libc::c_void;
    let mut tid: libc::pthread_t = 0;
    // The new thread starts with every signal blocked (it inherits this
    // thread's mask): a signal must not reach it before it is a worker
    // with the workers' mask, or a helper that never takes one.
    // (Not glibc's own SIGCANCEL and SIGSETXID: `setuid` waits for every
    // thread to take the latter.)
    let all = !((1u64 << 31) | (1u64 << 32));
    let mut old = 0u64;
    // SAFETY: 8-byte kernel sigsets from live locals; this thread only.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &all as *const u64,
            &mut old as *mut u64,
            8usize,
        )
    };
    // SAFETY: the real pthread_create with a valid entry point and argument.
    let r = unsafe { real::pthread_create(&mut tid, std::ptr::null(), body, arg) };
    // SAFETY: as above: this thread's mask back.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &old as *const u64,
            std::ptr::null_mut::<u64>(),
            8usize,
        )
    };
    if r != 0 {
        // SAFETY: the thread was not created, so `arg` is still ours.
        drop(unsafe { Box::from_raw(arg as *mut Box<dyn FnOnce() + Send>) });
        return Err(std::io::Error::from_raw_os_error(r));
    }
    // SAFETY: a joinable thread nobody joins (the real pthread_detach: the
    // hook would look for a coroutine).
    unsafe { real::pthread_detach(tid) };
    Ok(())
}

/// Blocks every signal in the calling thread. corun's helper threads (the
/// blocking pool, the watchdog) call this first, so the program's signals
/// are delivered to the threads that run its code (the workers), never to
/// a helper in the middle of a blocking call made for a parked coroutine.
pub fn block_all_signals() {
    // SAFETY: a filled sigset_t, applied to this thread only (raw syscall:
    // pthread_sigmask may be interposed).
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        crate::sys::real::syscall!(
            libc::SYS_rt_sigprocmask,
            libc::SIG_BLOCK,
            &set as *const libc::sigset_t,
            std::ptr::null_mut::<libc::sigset_t>(),
            8usize,
        );
    }
}

/// A `Mutex` that a forked child can make usable again when a thread of
/// the parent held it at the fork (that thread does not exist in the
/// child, so it never unlocks it). The mutex sits in an `UnsafeCell` so
/// that the child may replace it. It also remembers whether it was ever
/// handed out: one the parent never used is left alone in the child, whose
/// try-lock would otherwise write (copy) its page (`ForkReset`).
pub struct ForkMutex<T>(
    std::cell::UnsafeCell<std::sync::Mutex<T>>,
    std::sync::atomic::AtomicBool,
);

// SAFETY: shared like the Mutex inside; the cell is only written by
// `unlock_after_fork`, in a forked child, when it is the only thread.
unsafe impl<T: Send> Sync for ForkMutex<T> {}

impl<T> ForkMutex<T> {
    pub const fn new(v: T) -> ForkMutex<T> {
        ForkMutex(
            std::cell::UnsafeCell::new(std::sync::Mutex::new(v)),
            std::sync::atomic::AtomicBool::new(false),
        )
    }

    /// The mutex.
    #[inline]
    pub fn get(&self) -> &std::sync::Mutex<T> {
        if !self.1.load(Ordering::Relaxed) {
            // Before any lock of it (SeqCst, once): a fork that catches
            // the mutex held finds the mark in the child.
            self.1.store(true, Ordering::SeqCst);
        }
        // SAFETY: only `unlock_after_fork` writes the cell, in a forked
        // child with no other thread and no outstanding reference in use.
        unsafe { &*self.0.get() }
    }

    /// Whether `get` was ever called (in this process or, before a fork,
    /// its parent).
    #[inline]
    pub fn ever_used(&self) -> bool {
        self.1.load(Ordering::Relaxed)
    }

    /// In a forked child: if the mutex was held at the fork, replace it by
    /// a new one holding `fresh()`; the old contents (maybe half-updated)
    /// are leaked, never dropped. One never used is as new: untouched.
    pub fn unlock_after_fork(&self, fresh: impl FnOnce() -> T) {
        if !self.ever_used() {
            return;
        }
        if let Err(std::sync::TryLockError::WouldBlock) = self.get().try_lock() {
            // SAFETY: the child runs one thread, this one; the holder of the
            // old mutex is gone and nobody else refers to it now.
            unsafe { std::ptr::write(self.0.get(), std::sync::Mutex::new(fresh())) };
        }
    }
}

/// Stores for a forked child's resets that write only what differs.
///
/// Right after a fork every page the parent wrote is shared copy-on-write,
/// so the child's first store to a page copies it (a page fault, 1-3 us on
/// this VM) even when it leaves the value as it was; and a first look at a
/// page the parent never touched maps the zero page (a fault too). A child
/// of a fork-per-connection server that serves one request and exits paid
/// ~20 such faults in corun's resets (`perf record -e page-faults -d`;
/// `bench_baselines fork`, docs/ARCHITECTURE.md §5.5). Only for the
/// child's one thread, before it makes another: nothing else runs, so the
/// order of the load and the store needs no care.
pub trait ForkReset<T> {
    /// Makes the value `v`, writing only if it is not `v` already.
    fn reset_to(&self, v: T);
}

macro_rules! fork_reset {
    ($($atomic:ty => $t:ty),*) => {$(
        impl ForkReset<$t> for $atomic {
            #[inline]
            fn reset_to(&self, v: $t) {
                if self.load(Ordering::Relaxed) != v {
                    self.store(v, Ordering::SeqCst);
                }
            }
        }
    )*};
}
fork_reset!(
    std::sync::atomic::AtomicBool => bool,
    std::sync::atomic::AtomicU8 => u8,
    std::sync::atomic::AtomicI32 => i32,
    std::sync::atomic::AtomicU32 => u32,
    std::sync::atomic::AtomicU64 => u64,
    AtomicUsize => usize
);

impl<T> ForkReset<*mut T> for std::sync::atomic::AtomicPtr<T> {
    #[inline]
    fn reset_to(&self, v: *mut T) {
        if self.load(Ordering::Relaxed) != v {
            self.store(v, Ordering::SeqCst);
        }
    }
}

/// The kernel thread id of the caller.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { crate::sys::real::syscall!(libc::SYS_gettid) as i32 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fmt_u64_formats() {
        let mut b = [0u8; 20];
        assert_eq!(fmt_u64(0, &mut b), b"0");
        assert_eq!(fmt_u64(262144, &mut b), b"262144");
        assert_eq!(fmt_u64(u64::MAX, &mut b), b"18446744073709551615");
    }

    #[test]
    fn timespec_roundtrip() {
        let ts = ns_timespec(1_500_000_123);
        assert_eq!(ts.tv_sec, 1);
        assert_eq!(ts.tv_nsec, 500_000_123);
        assert_eq!(timespec_ns(&ts), 1_500_000_123);
    }
}
