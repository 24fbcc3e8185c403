//! CPU affinity of coroutine threads: kept per thread, not applied.
//!
//! A coroutine cannot be pinned (it never leaves its worker once it ran,
//! and its worker runs others), so a thread's `pthread_setaffinity_np`,
//! `sched_setaffinity` (on 0 or its tid) and `pthread_attr_setaffinity_np`
//! mask is kept in its record, computed as the kernel computes it, and
//! given back by the getters. Before, the setters were accepted with no
//! trace, so a thread read back every CPU (libuv's own `thread_affinity`
//! test failed), and `sched_setaffinity(0, ...)` in a thread went to the
//! kernel and pinned its worker, with every other thread that ran there.
//!
//! The kernel's rules kept: a set reads `min(len, kernel size)` bytes
//! (the rest clear), keeps the CPUs the caller may use (here: its worker's,
//! the process's CPUs, corun never pins a worker) and fails with EINVAL if
//! none is left; a get makes the kernel's checks of the buffer (EINVAL when
//! it cannot hold every CPU or is not a multiple of a long, EFAULT),
//! because it is the kernel's call for the main thread whose answer is
//! then overwritten, and glibc clears the bytes past the kernel's size. A
//! thread that set no mask reports main's (natively it inherits its
//! creator's: the same for threads main makes); a thread inherits the mask
//! its creator set. `main` is the process's first kernel thread, worker 0:
//! its affinity stays the kernel's (what `taskset`-like programs set before
//! `exec`, and what children inherit). A forked child of a thread that set
//! a mask gets it applied, its only kernel thread being that thread.

use super::*;

/// The largest mask handled, in bytes: 8,192 CPUs (the NR_CPUS of
/// distribution kernels; the kernel's own size is often 8 bytes).
const MAX_BYTES: usize = 1024;

/// A kept mask, `kernel size` bytes long.
pub(super) type Mask = Box<[u8]>;

/// The CPUs the calling kernel thread may use, as many bytes as the
/// kernel's cpumask has.
fn own_kernel_mask() -> Result<Vec<u8>, c_int> {
    let mut buf = vec![0u8; MAX_BYTES];
    // SAFETY: sched_getaffinity writes at most MAX_BYTES into `buf`.
    let n = unsafe {
        crate::sys::real::syscall!(libc::SYS_sched_getaffinity, 0, MAX_BYTES, buf.as_mut_ptr())
    };
    if n < 0 {
        return Err(crate::sys::errno());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// The mask the kernel would give a thread asking for `len` bytes at
/// `user`: EFAULT for no buffer, EINVAL if no usable CPU is left.
///
/// # Safety
/// `user` is null or points to `len` readable bytes.
unsafe fn clamp(len: usize, user: *const u8) -> Result<Mask, c_int> {
    if user.is_null() {
        return Err(libc::EFAULT);
    }
    let mut m = own_kernel_mask()?;
    let take = len.min(m.len());
    // SAFETY: the caller's `len` bytes, of which `take` are read.
    let asked = unsafe { std::slice::from_raw_parts(user, take) };
    for (i, b) in m.iter_mut().enumerate() {
        *b &= asked.get(i).copied().unwrap_or(0);
    }
    if m.iter().all(|&b| b == 0) {
        return Err(libc::EINVAL);
    }
    Ok(m.into_boxed_slice())
}

/// Keeps the mask at `user` as `rec`'s: 0 or an errno value.
///
/// # Safety
/// As `clamp`.
pub(super) unsafe fn set(rec: &ThreadRec, len: usize, user: *const u8) -> c_int {
    // SAFETY: the caller's contract.
    match unsafe { clamp(len, user) } {
        Ok(m) => {
            *lock(&rec.affinity) = Some(m);
            0
        }
        Err(e) => e,
    }
}

/// Writes `rec`'s mask into the caller's `len` bytes at `out`, as glibc's
/// `sched_getaffinity`/`pthread_getaffinity_np` do: 0 or an errno value.
///
/// # Safety
/// `out` is null or points to `len` writable bytes.
pub(super) unsafe fn get(rec: &ThreadRec, len: usize, out: *mut u8) -> c_int {
    let len = len.min(i32::MAX as usize);
    // The kernel's call for main: its checks of the buffer, and the mask
    // of a thread that set none.
    // SAFETY: the caller's buffer of `len` bytes; getpid has no
    // preconditions.
    let n = unsafe {
        crate::sys::real::syscall!(libc::SYS_sched_getaffinity, libc::getpid(), len, out)
    };
    if n < 0 {
        return crate::sys::errno();
    }
    let n = (n as usize).min(len);
    if let Some(m) = lock(&rec.affinity).as_ref() {
        let k = n.min(m.len());
        // SAFETY: `k` <= `len` bytes of the caller's buffer.
        unsafe { std::ptr::copy_nonoverlapping(m.as_ptr(), out, k) };
    }
    // SAFETY: the rest of the caller's buffer, as glibc clears it.
    unsafe { std::ptr::write_bytes(out.add(n), 0, len - n) };
    0
}

/// What a new thread starts with: the mask of its `attr`
/// (`pthread_attr_setaffinity_np`), else the one its creator set. Err:
/// pthread_create's error (EINVAL: no usable CPU in the attribute's).
///
/// # Safety
/// `attr` is null or an initialised attribute object.
pub(super) unsafe fn for_new_thread(attr: *const pthread_attr_t) -> Result<Option<Mask>, c_int> {
    if !attr.is_null() {
        let mut buf = vec![0u8; MAX_BYTES];
        // SAFETY: an initialised attribute (caller's contract), a buffer
        // of MAX_BYTES.
        let r =
            unsafe { libc::pthread_attr_getaffinity_np(attr, MAX_BYTES, buf.as_mut_ptr().cast()) };
        // glibc fills every byte with 0xff when the attribute has no mask.
        if r == 0 && buf.iter().any(|&b| b != 0xff) {
            // SAFETY: MAX_BYTES readable bytes.
            return unsafe { clamp(MAX_BYTES, buf.as_ptr()) }.map(Some);
        }
    }
    if current_id() == MAIN_ID {
        return Ok(None); // main's is the kernel's, which threads report
    }
    Ok(self_rec().and_then(|r| lock(&r.affinity).clone()))
}

/// In a forked child: the forking thread's kept mask becomes the kernel's
/// for the child's only thread, as the child of a pinned thread is pinned.
pub(super) fn apply_in_child() {
    if current_id() == MAIN_ID {
        return;
    }
    let Some(m) = self_rec().and_then(|r| lock(&r.affinity).clone()) else {
        return;
    };
    // SAFETY: the mask's own bytes, read by the kernel.
    unsafe { crate::sys::real::syscall!(libc::SYS_sched_setaffinity, 0, m.len(), m.as_ptr()) };
}

/// The record a tid names for the `sched_*affinity` calls: the calling
/// coroutine thread's for 0, a coroutine thread's for its tid (ESRCH for
/// a virtual tid that names none); None: the kernel's call (main, the pid,
/// kernel tids, outside a coroutine thread).
pub(super) fn target(pid: libc::pid_t) -> Option<Result<Arc<ThreadRec>, c_int>> {
    if pid == 0 {
        if crate::sched::confined::is() || !coroutine_threads() {
            return None;
        }
        let t = current().filter(|t| t.id != MAIN_ID)?;
        return rec_of(t.id).map(Ok);
    }
    match super::tid::named(-1, pid)? {
        Ok(task) => Some(rec_of(task.id).ok_or(libc::ESRCH)),
        Err(e) => Some(Err(e)),
    }
}
