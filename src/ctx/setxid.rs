//! glibc's `setuid` family from a coroutine with a thread pointer of its own.
//!
//! # Why
//!
//! Linux changes credentials per kernel thread. glibc makes `setuid`,
//! `setgid`, `seteuid`, `setresgid`, `setgroups`... process-wide
//! (`__nptl_setxid`): it marks every descriptor on its thread lists but the
//! caller's (a flag in `cancelhandling`), sends each marked thread's kernel
//! tid its internal signal SIGSETXID (33), and loops, signalling again every
//! thread still marked, until none is. The signal's handler makes the same
//! system call on its thread, then clears the flag in *its own* descriptor,
//! the one the thread pointer names (`THREAD_SELF`).
//!
//! A worker's kernel thread is on glibc's lists under the descriptor it was
//! made with (`main`'s, or the real `pthread_create`'s). While it runs a
//! coroutine with its own block (`tls.rs`), its thread pointer names the
//! coroutine's descriptor instead, which glibc does not list. So the handler
//! cleared the flag in the wrong descriptor and glibc signalled the worker
//! again for ever: a thread's `setgid` never returned (h2o's privileged
//! `neverbleed` helper, a forked child whose per-connection thread calls
//! `setgid`/`setuid`, spun at 100% CPU and h2o never served), nor did one
//! made while another worker ran a coroutine.
//!
//! # What is done
//!
//! Each worker's kernel thread notes here which descriptor glibc lists for
//! it: its own thread pointer when it attaches; in a forked child the same
//! one, which `fork_lists.rs` puts back on glibc's list in place of the
//! forking coroutine's (or, if it cannot, the one glibc kept). Once glibc has installed
//! its handler (at the first real `pthread_create`), `wrap_glibc_handler`
//! puts `trampoline` in its place with the same flags: on a worker's thread
//! whose thread pointer is not the listed one, the trampoline installs the
//! listed one, runs glibc's handler, and puts the coroutine's back. It reads
//! no thread-local and allocates nothing.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

use crate::config::MAX_WORKERS;

/// glibc's SIGSETXID (__SIGRTMIN + 1).
const SIGSETXID: c_int = 33;

/// The kernel's `struct sigaction` on x86_64 (what rt_sigaction takes).
#[repr(C)]
#[derive(Default)]
struct KernelSigaction {
    handler: usize,
    flags: u64,
    restorer: usize,
    mask: u64,
}

/// glibc's SIGSETXID handler, once wrapped (0 before).
static GLIBC_HANDLER: AtomicUsize = AtomicUsize::new(0);
/// Serialises `wrap_glibc_handler`.
static WRAPPING: AtomicBool = AtomicBool::new(false);

/// Per worker: its kernel thread's tid and the thread pointer glibc lists
/// for that thread (0, 0: none).
struct Listed {
    tid: AtomicI32,
    tp: AtomicUsize,
}
#[link_section = "corun_fork_tables"] // read after a fork: sys::ForkReset
static LISTED: [Listed; MAX_WORKERS] = [const {
    Listed {
        tid: AtomicI32::new(0),
        tp: AtomicUsize::new(0),
    }
}; MAX_WORKERS];

/// Worker `index` is driven by the calling thread, whose thread pointer now
/// is the descriptor glibc lists for it.
pub fn note_worker_thread(index: usize) {
    let Some(slot) = LISTED.get(index) else {
        return;
    };
    slot.tp
        .store(super::tls::thread_pointer(), Ordering::Relaxed);
    slot.tid.store(crate::sys::gettid(), Ordering::Release);
}

/// In a forked child, on the forking thread, before anything can make a
/// thread: worker `index` is the only one; the parent's other workers are
/// no threads here. glibc's fork kept the descriptor the thread pointer
/// names on its list; if that is a coroutine's, the worker thread's own is
/// put back in its place (`fork_lists.rs`: glibc had made its stack free)
/// and stays the listed one.
pub fn after_fork_child(index: usize) {
    use crate::sys::ForkReset;
    for (i, slot) in LISTED.iter().enumerate() {
        if i != index {
            slot.tid.reset_to(0);
            slot.tp.reset_to(0);
        }
    }
    let Some(slot) = LISTED.get(index) else {
        return;
    };
    let worker = slot.tp.load(Ordering::Relaxed);
    if super::fork_lists::relist_after_fork(super::tls::thread_pointer(), worker) {
        slot.tid.store(crate::sys::gettid(), Ordering::Release);
    } else {
        note_worker_thread(index);
    }
}

/// The thread pointer glibc lists for kernel thread `tid`, if it drives a
/// worker.
fn listed_for(tid: i32) -> Option<usize> {
    LISTED
        .iter()
        .find(|s| s.tid.load(Ordering::Acquire) == tid)
        .map(|s| s.tp.load(Ordering::Relaxed))
        .filter(|&tp| tp != 0)
}

fn read_action(sig: c_int) -> Option<KernelSigaction> {
    let mut old = KernelSigaction::default();
    // SAFETY: rt_sigaction with no new action and a valid out pointer of
    // the kernel's layout; an 8-byte sigset.
    let r = unsafe {
        crate::sys::real::syscall!(
            libc::SYS_rt_sigaction,
            sig,
            std::ptr::null::<KernelSigaction>(),
            &mut old as *mut KernelSigaction,
            8usize
        )
    };
    (r == 0).then_some(old)
}

/// Puts `trampoline` in place of glibc's SIGSETXID handler if glibc has
/// installed one and it is not wrapped yet. Call after each real
/// `pthread_create` (glibc installs the handler at the first one); cheap
/// when there is nothing to do (one system call).
pub fn wrap_glibc_handler() {
    let Some(mut act) = read_action(SIGSETXID) else {
        return;
    };
    let ours = trampoline as extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) as usize;
    // SIG_DFL or SIG_IGN: glibc has not installed it (no thread made yet).
    if act.handler <= 1 || act.handler == ours {
        return;
    }
    if WRAPPING.swap(true, Ordering::Acquire) {
        return; // another thread is at it
    }
    // Read again under the flag: the other thread may have just finished.
    if let Some(now) = read_action(SIGSETXID) {
        if now.handler > 1 && now.handler != ours {
            act = now;
            GLIBC_HANDLER.store(act.handler, Ordering::Release);
            act.handler = ours;
            // SAFETY: the same flags, restorer and mask glibc gave, with a
            // handler of the SA_SIGINFO signature; the kernel's layout.
            unsafe {
                crate::sys::real::syscall!(
                    libc::SYS_rt_sigaction,
                    SIGSETXID,
                    &act as *const KernelSigaction,
                    std::ptr::null_mut::<KernelSigaction>(),
                    8usize
                )
            };
        }
    }
    WRAPPING.store(false, Ordering::Release);
}

/// Runs glibc's SIGSETXID handler with the thread pointer glibc lists for
/// this kernel thread installed. Touches no thread-local storage (the
/// thread pointer changes under it).
extern "C" fn trampoline(sig: c_int, info: *mut libc::siginfo_t, uc: *mut c_void) {
    let h = GLIBC_HANDLER.load(Ordering::Acquire);
    if h == 0 {
        return;
    }
    // SAFETY: `h` is the handler glibc installed with SA_SIGINFO.
    let glibc = unsafe {
        std::mem::transmute::<usize, extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void)>(h)
    };
    let cur = super::tls::thread_pointer();
    match listed_for(crate::sys::gettid()) {
        Some(listed) if listed != cur => {
            // SAFETY: `listed` is a live descriptor of this thread's (its
            // own, or the one glibc's fork kept); nothing here holds a TLS
            // address across the switches.
            unsafe { super::tls::set_thread_pointer(listed) };
            glibc(sig, info, uc);
            // SAFETY: the coroutine's descriptor, as found on entry.
            unsafe { super::tls::set_thread_pointer(cur) };
        }
        _ => glibc(sig, info, uc),
    }
}
