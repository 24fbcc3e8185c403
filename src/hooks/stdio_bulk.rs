//! A large `fwrite` into a pipe, socket or terminal: written by corun, in
//! the pieces the reader makes room for, while the thread holds the
//! FILE's lock and parks between them.
//!
//! `stdio_write.rs` waits until the fd takes data, then lets glibc write;
//! that covers what fits in the room a reader leaves (a page of a pipe).
//! An `fwrite` of 1 MiB into a pipe whose reader is slower is one glibc
//! call that waits inside (`__write`, no hook) until the reader has taken
//! most of it: the thread's worker, and every other thread there, waited
//! with it. glibc holds the FILE's lock for the whole call, so no other
//! thread's output on that FILE comes in between: a split call must keep
//! that.
//!
//! So, for an `fwrite` on a fully buffered or unbuffered stream whose data
//! does not fit in what its buffer has left, corun does what glibc's
//! `_IO_new_file_xsputn` does, with parking writes:
//!
//! 1. takes the FILE's lock (`ftrylockfile`: counted, no preemption while
//!    held) once no other thread holds it, waiting parked meanwhile;
//! 2. writes out what the buffer holds (`stdio_write::wait_output` waits
//!    for room, then glibc's `fflush_unlocked`: at most a buffer, which a
//!    writable pipe takes);
//! 3. writes the whole buffer-size blocks of the data itself, through the
//!    `write` hook (a blocking write that parks for room as often as it
//!    needs: the bytes on the fd and their order are glibc's);
//! 4. puts the rest into the buffer with glibc's `fwrite_unlocked`, which
//!    then fits without writing; unlocks.
//!
//! A failed write ends it as glibc's failed write does: the FILE's error
//! flag, errno from the write, the count of whole elements written.
//!
//! While a thread holds a FILE lock across parks, another thread of its
//! worker that took the lock inside glibc would wait in the kernel and
//! hold that worker: the holder would never resume. `wait_lock_free`
//! prevents it for every stdio call corun hooks (output, input, `scanf`):
//! before glibc's call, the thread waits parked until no other thread
//! holds the lock. It costs one load of a counter while no lock is held so.
//! Stdio calls corun does not hook (`ftell`, `fseek`, wide-character
//! output...) on that FILE from that worker would still wait in the kernel.
//!
//! Not taken (glibc's call, as before): line-buffered streams, one that
//! was read from last (its switch to writing is glibc's), a FILE
//! without a lock (`__fsetlocking`), one whose lock this thread holds
//! already (`flockfile`), wide-oriented streams, regular files, fds the
//! program made non-blocking, the process's only coroutine, and
//! CORUN_TLS=worker (glibc's lock owner is the thread pointer, then shared
//! by a worker's threads; so are `corun_spawn` tasks' with the thread
//! they run beside on their worker).

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use libc::{size_t, FILE};

use super::stdio::{file_lock, lock_held_here};
// glibc's FILE head and flags, as `stdio_write.rs` reads them.
use super::stdio_write::{
    FileHead, FIRST_BUFFER, IO_CURRENTLY_PUTTING, IO_ERR_SEEN, IO_LINE_BUF, IO_NO_WRITES,
    IO_UNBUFFERED,
};
use super::{fd_kind, user_nonblocking};
use crate::sched::fdtable::{self, KIND_FILE};
use crate::sched::{park, parking};
use crate::sys::now_ns;

mod real {
    use libc::{c_int, c_void, size_t, FILE};
    crate::sys::real::real_fns! {
        fn fwrite_unlocked(p: *const c_void, size: size_t, n: size_t, f: *mut FILE) -> size_t;
        fn fflush_unlocked(f: *mut FILE) -> c_int;
        fn fwide(f: *mut FILE, mode: c_int) -> c_int;
    }
}

/// FILE locks held by threads that may park with them (step 1 to 4).
static HELD_ACROSS_PARKS: AtomicUsize = AtomicUsize::new(0);

/// First and longest nap while another thread holds a FILE's lock (ns).
const FIRST_NAP: u64 = 20_000;
const LONGEST_NAP: u64 = 1_000_000;

/// Before a stdio call on `f` that glibc makes under the FILE's lock:
/// waits, parked, while another thread holds it (one that may be parked
/// with it, on this worker). Returns at once while no thread holds a FILE
/// lock across parks.
#[inline(always)]
pub(super) fn wait_lock_free(f: *mut FILE) {
    if HELD_ACROSS_PARKS.load(Ordering::Relaxed) != 0 {
        wait_lock_free_slow(f);
    }
}

#[inline(never)]
fn wait_lock_free_slow(f: *mut FILE) {
    if f.is_null() || !parking() {
        return;
    }
    let mut nap = FIRST_NAP;
    // Bounded by the holder: it releases the lock when its write is done.
    while held_by_another(f) {
        let until = now_ns() + nap;
        crate::sched::waitdesc::describe(crate::sched::waitdesc::Cause::Timer, until);
        park(|_| true, Some(until));
        nap = (nap * 2).min(LONGEST_NAP);
    }
}

/// Whether threads have thread pointers of their own (CORUN_TLS=thread),
/// which is how glibc's FILE lock tells its owner: with CORUN_TLS=worker
/// the threads of a worker would all own a lock one of them took.
fn own_thread_pointers() -> bool {
    crate::sched::runtime().is_some_and(|rt| rt.config.own_tls)
}

/// Whether a thread other than this one holds `f`'s lock.
fn held_by_another(f: *mut FILE) -> bool {
    let Some(lock) = file_lock(f) else {
        return false;
    };
    // SAFETY: the lock glibc made with the FILE; racy reads of two words
    // only decide whether to nap once more.
    let (cnt, owner) = unsafe {
        (
            std::ptr::read_volatile(&(*lock).cnt),
            std::ptr::read_volatile(&(*lock).owner),
        )
    };
    cnt > 0 && owner as usize != crate::ctx::tls::thread_pointer()
}

/// `fwrite(p, size, n, f)` written as the top says, or None: make glibc's
/// call.
#[inline(always)]
pub(super) fn fwrite(p: *const c_void, size: size_t, n: size_t, f: *mut FILE) -> Option<size_t> {
    // Asked first: most calls are smaller than a buffer.
    if size.saturating_mul(n) < FIRST_BUFFER {
        return None;
    }
    fwrite_large(p, size, n, f)
}

#[inline(never)]
fn fwrite_large(p: *const c_void, size: size_t, n: size_t, f: *mut FILE) -> Option<size_t> {
    let len = size.checked_mul(n)?;
    if p.is_null() || f.is_null() || !parking() || !own_thread_pointers() {
        return None;
    }
    let head = f as *mut FileHead;
    // SAFETY: a FILE the caller passed, read as glibc's public layout; a
    // stale value only sends the call to glibc.
    let h = unsafe { &*head };
    if h.flags & (IO_NO_WRITES | IO_LINE_BUF) != 0 || file_lock(f).is_none() {
        return None;
    }
    // A stream that was read from last (`r+` on a socket) is switched to
    // writing by glibc, with its read buffer: left to glibc.
    if h.flags & IO_CURRENTLY_PUTTING == 0 && !h.buf_base.is_null() {
        return None;
    }
    // glibc writes data straight to the fd (no copy into the buffer) when
    // it is a buffer's size or more: below that, the call fills or
    // flushes the buffer, which `stdio_write::wait_output` covers. A
    // stream's first write makes its buffer, of the fd's st_blksize (a
    // page for a pipe or socket).
    let block = match span(h.buf_base, h.buf_end) {
        0 => FIRST_BUFFER,
        b => b,
    };
    if len < block.max(FIRST_BUFFER) {
        return None;
    }
    // SAFETY: as above.
    let fd = unsafe { libc::fileno(f) };
    let e = (fd >= 0).then(|| fdtable::get(fd)).flatten()?;
    if fd_kind(fd, e) == KIND_FILE || user_nonblocking(fd, e) || lock_held_here(f) {
        return None;
    }
    wait_lock_free(f);
    HELD_ACROSS_PARKS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: the caller's FILE; the hook counts the lock (no preemption).
    if unsafe { super::filelock::ftrylockfile(f) } != 0 {
        // Taken by a thread of another worker meanwhile: glibc's call
        // waits for it there, as natively.
        HELD_ACROSS_PARKS.fetch_sub(1, Ordering::Relaxed);
        return None;
    }
    // glibc unlocks the FILE when a cancellation unwinds its fwrite; this
    // one is not unwound: cancellation waits for the end of the call.
    let mut cancel_state = 0;
    // SAFETY: a valid out-pointer; the hook keeps the state per thread.
    unsafe {
        super::cancel::pthread_setcancelstate(
            super::cancel::PTHREAD_CANCEL_DISABLE,
            &mut cancel_state,
        )
    };
    let r = write_locked(p as *const u8, len, block, f, fd);
    // What a failed write left, kept past the unlock.
    let err = crate::sys::errno();
    // SAFETY: locked above by this thread.
    unsafe { super::filelock::funlockfile(f) };
    // SAFETY: restores the state saved above.
    unsafe { super::cancel::pthread_setcancelstate(cancel_state, std::ptr::null_mut()) };
    HELD_ACROSS_PARKS.fetch_sub(1, Ordering::Relaxed);
    crate::sys::set_errno(err);
    Some(r.map_or_else(|done| done / size, |()| n))
}

/// Steps 2 to 4 with `f` locked. Err: the bytes of the data written
/// before a write failed (the FILE's error flag is set).
fn write_locked(
    p: *const u8,
    len: usize,
    block: usize,
    f: *mut FILE,
    fd: c_int,
) -> Result<(), usize> {
    // SAFETY: the caller's FILE, locked by this thread: glibc's fwrite
    // makes a byte stream of an undecided one too.
    if unsafe { real::fwide(f, -1) } > 0 {
        // Wide-oriented: glibc's fwrite writes nothing and says so.
        // SAFETY: the caller's arguments.
        let w = unsafe { real::fwrite_unlocked(p as *const c_void, 1, len, f) };
        return if w == len { Ok(()) } else { Err(w) };
    }
    let head = f as *mut FileHead;
    // SAFETY (reads of `*head` below): the FILE is locked by this thread.
    let pending = unsafe { (*head).flags & IO_CURRENTLY_PUTTING != 0 }
        && unsafe { span((*head).write_base, (*head).write_ptr) } > 0;
    if pending {
        if !super::stdio_write::wait_flush_room(f) {
            return Err(0); // interrupted: glibc's error state is set
        }
        // SAFETY: the caller's FILE, locked by this thread.
        if unsafe { real::fflush_unlocked(f) } != 0 {
            return Err(0);
        }
    }
    // An unbuffered stream writes everything; a buffered one whole
    // blocks, then buffers the rest.
    let unbuffered = unsafe { (*head).flags & IO_UNBUFFERED != 0 };
    let direct = if unbuffered { len } else { len - len % block };
    // As glibc's `_IO_new_file_write`: after a short write (a reader that
    // left, a handler), write the rest, until a write fails.
    let mut done = 0;
    while done < direct {
        // SAFETY: `p` holds `len` >= `direct` readable bytes (the caller's
        // contract); the write hook parks until all is written or it fails.
        let w = unsafe { super::rw::write(fd, p.add(done) as *const c_void, direct - done) };
        if w <= 0 {
            // SAFETY: locked by this thread; glibc sets the flag so.
            unsafe { (*head).flags |= IO_ERR_SEEN };
            return Err(done);
        }
        done += w as usize;
    }
    if direct < len {
        // SAFETY: the rest of the caller's data; it fits in the buffer
        // emptied above, so glibc copies it without writing.
        let w =
            unsafe { real::fwrite_unlocked(p.add(direct) as *const c_void, 1, len - direct, f) };
        if w < len - direct {
            return Err(direct + w);
        }
    }
    Ok(())
}

/// Bytes between two of the FILE's pointers (0 if either is unset).
fn span(from: *mut c_char, to: *mut c_char) -> usize {
    if from.is_null() || to.is_null() || to <= from {
        0
    } else {
        to as usize - from as usize
    }
}
