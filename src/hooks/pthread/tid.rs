//! Thread ids: what `gettid` returns in a coroutine thread, and the calls
//! that take a tid.
//!
//! Natively every thread has its own kernel tid, and `main`'s equals the
//! pid. A coroutine runs on a worker's kernel thread, which many others
//! share: handing out that tid made every thread of a worker the same
//! thread to the program (CPython's `test_threading` counts distinct
//! `threading.get_native_id()` values: 2 of 11 under corun), and made any
//! thread on worker 0 pass the common "am I main" test, `gettid() ==
//! getpid()`.
//!
//! So a coroutine thread's tid is its own: `VTID_BASE + id` (the task id,
//! never reused). `VTID_BASE` is above PID_MAX_LIMIT (2^22), so such a tid
//! never names a kernel thread, of this process or another. `main` keeps
//! the pid: it is pinned to worker 0, the process's first thread.
//!
//! The calls that take a tid know these: `tgkill`, `tkill` and
//! `rt_tgsigqueueinfo` (also through `syscall()`) signal the coroutine, as
//! `pthread_kill` does; `sched_setaffinity` on it (or on 0 in it) keeps
//! the thread's mask, which `sched_getaffinity` gives back (`affinity.rs`);
//! the scheduling calls keep its policy and nice value (`sched_attr.rs`).
//! The glibc descriptor keeps the worker's kernel tid (`ctx::tls`): the
//! kernel checks it for PI and robust futexes. Not mapped: the kernel's
//! `/proc/self/task/<tid>/` directories, which exist for worker threads
//! only.

use super::*;

/// The first virtual tid: above any pid the kernel gives (PID_MAX_LIMIT is
/// 4,194,304 on 64-bit), below `i32::MAX` for ~2 billion threads.
const VTID_BASE: i64 = 1 << 26;

/// A coroutine thread's tid.
pub(crate) fn vtid(id: u64) -> libc::pid_t {
    (VTID_BASE + id as i64).min(i32::MAX as i64) as libc::pid_t
}

/// The coroutine thread a tid names, if it is a virtual one.
pub(crate) fn task_id(tid: libc::pid_t) -> Option<u64> {
    (tid as i64 >= VTID_BASE).then(|| (tid as i64 - VTID_BASE) as u64)
}

/// A tid corun gave a coroutine thread (whether or not it still lives).
pub(crate) fn is_virtual_tid(tid: libc::pid_t) -> bool {
    task_id(tid).is_some()
}

/// `set_tid_address(ptr)` in a coroutine thread: `ptr` becomes its own
/// clear-child-tid word, which the kernel would zero and futex-wake when
/// the thread exits (`clear_child_tid_at_exit`), and the call returns the
/// thread's tid. The worker's own word (glibc's, for the kernel thread)
/// stays as it is. None (the kernel's call): main, or outside a coroutine.
pub(crate) fn set_clear_child_tid(ptr: usize) -> Option<libc::pid_t> {
    if crate::sched::confined::is() {
        return None;
    }
    let t = current().filter(|t| t.id != MAIN_ID)?;
    t.ident.clear_child_tid.set(ptr);
    Some(vtid(t.id))
}

/// At a coroutine thread's end, what the kernel does at a thread's exit
/// for its clear-child-tid word: stores 0 there and wakes one waiter
/// (coroutines parked on it through `syscall(SYS_futex)`, and threads in
/// the kernel).
pub(crate) fn clear_child_tid_at_exit() {
    let Some(t) = current() else { return };
    let p = t.ident.clear_child_tid.replace(0);
    if p == 0 || p % 4 != 0 {
        return;
    }
    // SAFETY: the program gave this address for the kernel to write a u32
    // at the thread's exit, as set_tid_address(2) does; aligned above.
    let word = unsafe { &*(p as *const std::sync::atomic::AtomicU32) };
    word.store(0, Ordering::SeqCst);
    if crate::sched::sync::wake_parked(p, 1, u32::MAX) == 0 {
        // SAFETY: FUTEX_WAKE (shared, as the kernel's) on that word; no
        // memory is written.
        unsafe { crate::sys::real::syscall!(libc::SYS_futex, p, libc::FUTEX_WAKE, 1) };
    }
}

/// The calling thread's tid: its own in a coroutine thread (also inside a
/// signal handler that interrupted one), the kernel's elsewhere.
pub(crate) fn current_tid() -> libc::pid_t {
    if crate::sched::confined::is() {
        // A confined process makes only the program's own calls
        // (docs/ARCHITECTURE.md §5.8): the kernel's tid.
        return crate::sys::gettid();
    }
    match current() {
        Some(t) if t.id != MAIN_ID => vtid(t.id),
        _ => crate::sys::gettid(),
    }
}

/// A live coroutine thread named by a tid of this process: Some(Ok(task)),
/// Some(Err(ESRCH)) for a virtual tid that names none, None for a kernel
/// tid (the kernel's call).
pub(super) fn named(tgid: libc::pid_t, tid: libc::pid_t) -> Option<Result<TaskRef, c_int>> {
    if crate::sched::confined::is() {
        return None; // the kernel's call, as every call there
    }
    let id = task_id(tid)?;
    // SAFETY: getpid has no preconditions.
    if tgid != -1 && tgid != unsafe { libc::getpid() } {
        return Some(Err(libc::ESRCH));
    }
    Some(alive(id).ok_or(libc::ESRCH))
}

/// errno = `e`, and the -1 a failing libc call returns.
pub(super) fn fail(e: c_int) -> c_int {
    crate::sys::set_errno(e);
    -1
}

/// `tgkill`, `tkill` (tgid -1) and `rt_tgsigqueueinfo` (with `info`) on a
/// tid: Some(result) when it names a coroutine thread.
pub(crate) fn signal_tid(
    tgid: libc::pid_t,
    tid: libc::pid_t,
    sig: c_int,
    info: Option<&sched::siginfo::Info>,
) -> Option<c_int> {
    let task = match named(tgid, tid)? {
        Ok(t) => t,
        Err(e) => return Some(fail(e)),
    };
    if !(0..=64).contains(&sig) {
        return Some(fail(libc::EINVAL));
    }
    if sig == 0 {
        return Some(0);
    }
    let own = own_siginfo(sig, libc::SI_TKILL, 0);
    Some(match send_to_coroutine(&task, sig, info.unwrap_or(&own)) {
        0 => 0,
        e => fail(e),
    })
}

#[no_mangle]
pub extern "C" fn gettid() -> libc::pid_t {
    current_tid()
}

#[no_mangle]
pub unsafe extern "C" fn tgkill(tgid: libc::pid_t, tid: libc::pid_t, sig: c_int) -> c_int {
    if let Some(r) = signal_tid(tgid, tid, sig, None) {
        return r;
    }
    // SAFETY: plain integers.
    unsafe { libc::syscall(libc::SYS_tgkill, tgid, tid, sig) as c_int }
}

#[no_mangle]
pub unsafe extern "C" fn sched_setaffinity(
    pid: libc::pid_t,
    size: size_t,
    set: *const libc::cpu_set_t,
) -> c_int {
    // A coroutine thread's mask is kept, not applied (affinity.rs).
    match super::affinity::target(pid) {
        // SAFETY: the caller's buffer of `size` bytes.
        Some(Ok(rec)) => match unsafe { super::affinity::set(&rec, size, set.cast()) } {
            0 => 0,
            e => fail(e),
        },
        Some(Err(e)) => fail(e),
        // SAFETY: the caller's contract.
        None => unsafe { real::sched_setaffinity(pid, size, set) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn sched_getaffinity(
    pid: libc::pid_t,
    size: size_t,
    set: *mut libc::cpu_set_t,
) -> c_int {
    match super::affinity::target(pid) {
        // SAFETY: the caller's buffer of `size` bytes.
        Some(Ok(rec)) => match unsafe { super::affinity::get(&rec, size, set.cast()) } {
            0 => 0,
            e => fail(e),
        },
        Some(Err(e)) => fail(e),
        // SAFETY: the caller's contract.
        None => unsafe { real::sched_getaffinity(pid, size, set) },
    }
}
