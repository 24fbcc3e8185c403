//! A process that confined itself with a seccomp filter
//! (docs/ARCHITECTURE.md §5.9): from then on corun makes only the system
//! calls the program asks for.
//!
//! A filter decides system call by system call, and it was written for
//! the program's own calls: sshd's sandbox allows `write` on a socket but
//! not the `sendmsg` a parking `write` would make, nor `epoll_wait`, nor
//! `preadv2`. So once a filter is about to be installed
//! (`hooks::process::seccomp` calls `enter`), the whole process runs as
//! without corun: every hook passes through (`in_coroutine` is false),
//! `pthread_create` makes a kernel thread, masks and handlers are the
//! kernel's. The coroutine that installs the filter keeps running on its
//! worker, which it never gives back (a blocking call now blocks the
//! worker, as it blocks the thread natively). Coroutines parked elsewhere
//! at that moment still run on their own workers, now as passthroughs too.
//!
//! No thread of corun's may keep the process alive once the program's own
//! threads are gone: a filter's "kill thread" action ends only the thread
//! that broke the rule, and natively a process whose only thread that was
//! ends with it (sshd's monitor then sees the socket close). So `enter`
//! makes corun's helper threads (the blocking pool's, the watchdog, the
//! preemption monitor (which looks at every sample), the cancel-deadline
//! thread, the shared-futex watcher) leave, and waits, up to `HELPERS_GONE_NS`, until
//! the kernel no longer knows them (helpers start through `spawn_helper`
//! and record their kernel thread id in `HELPERS`). So do the threads of
//! workers that have no coroutine left (`runtime::retire_idle`; a forked
//! child's threads ran on workers of their own); worker 0's thread, the
//! caller's, and those with coroutines stay.
//!
//! One flag for the process, set once and never cleared (a filter cannot
//! be removed); a forked child inherits it with the filter.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

static CONFINED: AtomicBool = AtomicBool::new(false);

/// Kernel thread ids of corun's helper threads (0: free slot). More
/// helpers than slots are not waited for.
static HELPERS: [AtomicI32; 64] = [const { AtomicI32::new(0) }; 64];

/// Helper threads asked for whose thread has not registered yet.
static STARTING: AtomicUsize = AtomicUsize::new(0);

/// How long `enter` waits for the helpers to be gone.
const HELPERS_GONE_NS: u64 = 1_000_000_000;

/// Whether the process installed a seccomp filter.
#[inline]
pub fn is() -> bool {
    CONFINED.load(Ordering::Relaxed)
}

/// Starts helper thread `f` of corun's (the real pthread_create): it is
/// known here before it runs, so `enter` never misses one that is just
/// starting.
pub fn spawn_helper(f: Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()> {
    STARTING.fetch_add(1, Ordering::SeqCst);
    let r = crate::sys::spawn_native_thread(Box::new(move || {
        register_helper();
        f();
    }));
    if r.is_err() {
        STARTING.fetch_sub(1, Ordering::SeqCst);
    } else {
        // glibc installs its SIGSETXID handler at its first pthread_create.
        crate::ctx::setxid::wrap_glibc_handler();
    }
    r
}

/// The new helper thread records its kernel thread id.
fn register_helper() {
    let tid = crate::sys::gettid();
    for s in &HELPERS {
        if s.compare_exchange(0, tid, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            break;
        }
    }
    STARTING.fetch_sub(1, Ordering::SeqCst);
}

/// Called by a helper thread that leaves on its own (a retiring pool
/// helper): nobody need wait for it, and its id may be reused.
pub fn unregister_helper() {
    let tid = crate::sys::gettid();
    for s in &HELPERS {
        if s.compare_exchange(tid, 0, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

/// Whether kernel thread `tid` of this process still exists.
fn alive(tid: i32) -> bool {
    // SAFETY: tgkill with signal 0 only checks that the thread exists.
    let r = unsafe {
        crate::sys::real::syscall!(
            libc::SYS_tgkill,
            crate::sys::real::syscall!(libc::SYS_getpid),
            tid,
            0
        )
    };
    r == 0 || crate::sys::errno() != libc::ESRCH
}

/// The process is about to install a seccomp filter: corun stands aside.
/// The calling thread's kernel mask becomes the running coroutine's, as
/// signals are now the kernel's business; corun's helper threads leave.
pub fn enter() {
    if CONFINED.swap(true, Ordering::SeqCst) {
        return;
    }
    let saved = crate::sys::errno();
    if let Some(t) = super::park::current() {
        super::sigmask::set_thread_mask(t.ident.sigmask.load(Ordering::SeqCst));
    }
    super::blocking::retire_all();
    super::watchdog::wake();
    super::helper_park::wake_all();
    super::deadline::wake();
    super::sync::shared_watch::wake();
    let until = crate::sys::now_ns() + HELPERS_GONE_NS;
    let pause = || {
        let ts = crate::sys::ns_timespec(100_000);
        // SAFETY: real nanosleep on a valid timespec.
        unsafe { crate::sys::real::nanosleep(&ts, std::ptr::null_mut()) };
    };
    // A helper just starting sees the flag and leaves at once.
    while STARTING.load(Ordering::SeqCst) != 0 && crate::sys::now_ns() < until {
        pause();
    }
    for s in &HELPERS {
        let tid = s.load(Ordering::Acquire);
        while tid != 0 && alive(tid) && crate::sys::now_ns() < until {
            pause();
        }
        s.store(0, Ordering::Release);
    }
    // Workers without a coroutine stop too: a forked child's renewed
    // workers (`fork.rs`) outlived the threads they ran.
    let me = super::worker::current_worker().map(|w| w.index);
    for tid in super::runtime::retire_idle(me) {
        while alive(tid) && crate::sys::now_ns() < until {
            pause();
        }
    }
    crate::sys::set_errno(saved);
}
