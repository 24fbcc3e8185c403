//! stdio input on a pipe, socket or terminal: the thread waits for data
//! first, parked, then glibc reads.
//!
//! glibc's stdio reads through its internal `__read`, not through the PLT,
//! so the `read` hook never sees it: a thread in `fgets(stdin)` on an
//! empty pipe blocked its whole worker, and every other thread there
//! waited for the next line.
//!
//! Before a stdio input call on a FILE whose buffer is empty (glibc's
//! `_IO_read_ptr == _IO_read_end`, the public layout of `struct _IO_FILE`)
//! and whose fd is a pipe, socket or terminal the program left blocking,
//! the coroutine parks until the fd is readable; glibc's own read then
//! finds data. A handler without SA_RESTART that runs meanwhile ends the
//! call as a failed `read` would inside glibc: the FILE's error flag set,
//! errno EINTR, the call's error value. These are cancellation points, as
//! natively.
//!
//! Not covered: a line longer than what arrived at once (glibc reads again
//! for the rest and may wait inside, the worker with it). The `scanf`
//! family is `stdio_scanf.rs`, wide-character input `stdio_wide.rs`. The
//! process's only coroutine makes the calls as natively.

use std::ffi::{c_char, c_int};

use libc::{size_t, ssize_t, FILE};

use super::{fd_kind, ready_now, user_nonblocking};
use crate::sched::fdtable::{self, Dir, KIND_FILE, KIND_OTHER};
use crate::sched::signals::Interruptible;
use crate::sched::{current, park_until_any_ready, parking};

#[allow(non_snake_case)] // _IO_getc is glibc's name
mod real {
    use libc::{c_char, c_int, size_t, ssize_t, FILE};
    crate::sys::real::real_fns! {
        fn fgets(s: *mut c_char, n: c_int, f: *mut FILE) -> *mut c_char;
        fn fgets_unlocked(s: *mut c_char, n: c_int, f: *mut FILE) -> *mut c_char;
        fn fgetc(f: *mut FILE) -> c_int;
        fn getc(f: *mut FILE) -> c_int;
        fn _IO_getc(f: *mut FILE) -> c_int;
        fn fgetc_unlocked(f: *mut FILE) -> c_int;
        fn getc_unlocked(f: *mut FILE) -> c_int;
        fn fread(p: *mut libc::c_void, size: size_t, n: size_t, f: *mut FILE) -> size_t;
        fn fread_unlocked(p: *mut libc::c_void, size: size_t, n: size_t, f: *mut FILE) -> size_t;
        fn getline(line: *mut *mut c_char, n: *mut size_t, f: *mut FILE) -> ssize_t;
        fn getdelim(line: *mut *mut c_char, n: *mut size_t, delim: c_int, f: *mut FILE) -> ssize_t;
        fn __getdelim(line: *mut *mut c_char, n: *mut size_t, delim: c_int, f: *mut FILE) -> ssize_t;
        fn __uflow(f: *mut FILE) -> c_int;
        fn __underflow(f: *mut FILE) -> c_int;
    }
}

extern "C" {
    static mut stdin: *mut FILE;
}

/// glibc's `stdin` as it is now (a program may assign it).
pub(super) fn stdin_file() -> *mut FILE {
    // SAFETY: reading glibc's exported pointer, as the program's own
    // `getchar` does.
    unsafe { stdin }
}

/// The head of glibc's `struct _IO_FILE` (bits/types/struct_FILE.h).
#[repr(C)]
struct FileHead {
    flags: c_int,
    read_ptr: *mut c_char,
    read_end: *mut c_char,
}

/// Whether the buffered bytes [ptr, end) are all white space (C locale).
fn only_blanks(ptr: *mut c_char, end: *mut c_char) -> bool {
    // SAFETY: [ptr, end) is the FILE's filled buffer (glibc's read
    // pointers, ptr < end checked by the caller).
    let buf =
        unsafe { std::slice::from_raw_parts(ptr as *const u8, end.offset_from(ptr) as usize) };
    buf.iter()
        .all(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r'))
}

/// `_IO_EOF_SEEN`: what `feof` reports.
const IO_EOF_SEEN: c_int = 0x10;
/// `_IO_ERR_SEEN`: what `ferror` reports.
const IO_ERR_SEEN: c_int = 0x20;

/// `_IO_USER_LOCK`: the FILE has no lock (`__fsetlocking`).
const IO_USER_LOCK: c_int = 0x8000;
/// Where `struct _IO_FILE` keeps its `_lock` pointer (x86_64 glibc).
const LOCK_OFFSET: usize = 136;

/// glibc's `_IO_lock_t`: a lowlevellock, a recursion count, the owner's
/// thread pointer.
#[repr(C)]
pub(super) struct FileLock {
    lock: c_int,
    pub(super) cnt: c_int,
    pub(super) owner: *mut libc::c_void,
}

/// Whether the calling thread holds `f`'s lock already (`flockfile`, or
/// a call that holds it and reads on): then it must not park in a stdio
/// wait. Another thread of its worker that wanted the lock would wait for
/// it in the kernel (glibc's lock, an inline futex), holding the worker
/// this thread needs to resume: both would wait for ever. It waits inside
/// glibc instead, as before (its worker with it, until the fd is ready).
pub(super) fn lock_held_here(f: *mut FILE) -> bool {
    let Some(lock) = file_lock(f) else {
        return false;
    };
    // SAFETY: the lock glibc made with the FILE.
    unsafe { (*lock).cnt > 0 && (*lock).owner as usize == crate::ctx::tls::thread_pointer() }
}

/// `f`'s lock, None for a FILE without one (`__fsetlocking`).
pub(super) fn file_lock(f: *mut FILE) -> Option<*const FileLock> {
    // SAFETY: a FILE the caller passed, read as glibc's layout: the flags,
    // then the lock pointer glibc set when it made the FILE.
    unsafe {
        if (*(f as *const c_int)) & IO_USER_LOCK != 0 {
            return None;
        }
        let lock = *((f as *const u8).add(LOCK_OFFSET) as *const *const FileLock);
        (!lock.is_null()).then_some(lock)
    }
}

/// Waits, parked, until `f` has something to read. false: a handler
/// without SA_RESTART ran meanwhile (the FILE's error flag and errno are
/// set as glibc sets them when its read fails with EINTR), or a terminal
/// with VMIN = 0 had nothing when its VTIME passed (the FILE's end-of-file
/// flag set, as glibc sets it when its read returns 0).
pub(super) fn wait_input(f: *mut FILE) -> bool {
    wait_input_beyond(f, false)
}

/// As `wait_input`; with `blanks_are_empty`, a buffer holding only white
/// space counts as empty (a `scanf` conversion skips it and reads on: the
/// newline a previous `scanf("%d")` left).
pub(super) fn wait_input_beyond(f: *mut FILE, blanks_are_empty: bool) -> bool {
    if f.is_null() {
        return true;
    }
    // Another thread may hold the FILE's lock parked (`stdio_bulk.rs`).
    super::stdio_bulk::wait_lock_free(f);
    let head = f as *mut FileHead;
    // SAFETY: a FILE the caller passed (its contract), read as glibc's
    // public layout; only our own thread reads its buffer pointers here.
    // Asked first: a getc of a buffered character costs two loads.
    let (ptr, end) = unsafe { ((*head).read_ptr, (*head).read_end) };
    if (ptr < end && !(blanks_are_empty && only_blanks(ptr, end))) || !parking() {
        return true; // buffered (the call will not read), or not ours
    }
    // SAFETY: as above.
    let fd = unsafe { libc::fileno(f) };
    let Some(e) = (fd >= 0).then(|| fdtable::get(fd)).flatten() else {
        return true;
    };
    if fd_kind(fd, e) == KIND_FILE || user_nonblocking(fd, e) || lock_held_here(f) {
        return true;
    }
    let mut intr = Interruptible::begin();
    // A terminal read with VMIN = 0 ends at VTIME (`tty_read.rs`): asked
    // the first time the fd is found empty.
    let mut vtime: Option<Option<u64>> = None;
    loop {
        let seen = e.snapshot(Dir::Read);
        if ready_now(fd, libc::POLLIN) {
            return true;
        }
        let deadline = *vtime.get_or_insert_with(|| {
            (fd_kind(fd, e) == KIND_OTHER)
                .then(|| super::tty_read::vmin0_wait_ns(fd))
                .flatten()
                .map(|t| crate::sys::now_ns().saturating_add(t))
        });
        if deadline.is_some_and(|d| crate::sys::now_ns() >= d) {
            // glibc's read would return 0: end of file for this call.
            // SAFETY: as above; glibc sets this flag the same way.
            unsafe { (*head).flags |= IO_EOF_SEEN };
            return false;
        }
        if let Some(restart) = intr.check() {
            if !restart {
                // SAFETY: as above; glibc sets this flag the same way.
                unsafe { (*head).flags |= IO_ERR_SEEN };
                crate::sys::set_errno(libc::EINTR);
                return false;
            }
            intr = Interruptible::begin();
        }
        park_until_any_ready(&[(fd, Dir::Read, seen)], deadline);
        if let Some(t) = current() {
            crate::sched::identity::cancel_point(&t.ident);
        }
    }
}

macro_rules! input_hook {
    ($name:ident ($($arg:ident : $ty:ty),*) -> $ret:ty, $file:expr, $failed:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            if !wait_input($file) {
                return $failed;
            }
            // SAFETY: the caller's contract.
            unsafe { real::$name($($arg),*) }
        }
    };
}

input_hook!(fgets(s: *mut c_char, n: c_int, f: *mut FILE) -> *mut c_char, f, std::ptr::null_mut());
input_hook!(fgets_unlocked(s: *mut c_char, n: c_int, f: *mut FILE) -> *mut c_char, f, std::ptr::null_mut());
input_hook!(fgetc(f: *mut FILE) -> c_int, f, libc::EOF);
input_hook!(getc(f: *mut FILE) -> c_int, f, libc::EOF);
#[allow(non_snake_case)]
mod io_getc {
    use super::*;
    input_hook!(_IO_getc(f: *mut FILE) -> c_int, f, libc::EOF);
}
input_hook!(fgetc_unlocked(f: *mut FILE) -> c_int, f, libc::EOF);
input_hook!(getc_unlocked(f: *mut FILE) -> c_int, f, libc::EOF);
input_hook!(fread(p: *mut libc::c_void, size: size_t, n: size_t, f: *mut FILE) -> size_t, f, 0);
input_hook!(fread_unlocked(p: *mut libc::c_void, size: size_t, n: size_t, f: *mut FILE) -> size_t, f, 0);
input_hook!(getline(line: *mut *mut c_char, n: *mut size_t, f: *mut FILE) -> ssize_t, f, -1);
input_hook!(getdelim(line: *mut *mut c_char, n: *mut size_t, delim: c_int, f: *mut FILE) -> ssize_t, f, -1);
input_hook!(__getdelim(line: *mut *mut c_char, n: *mut size_t, delim: c_int, f: *mut FILE) -> ssize_t, f, -1);
input_hook!(__uflow(f: *mut FILE) -> c_int, f, libc::EOF);
input_hook!(__underflow(f: *mut FILE) -> c_int, f, libc::EOF);

#[no_mangle]
pub unsafe extern "C" fn getchar() -> c_int {
    // SAFETY: glibc's stdin, read as the program's getchar reads it.
    unsafe { fgetc(stdin_file()) }
}

#[no_mangle]
pub unsafe extern "C" fn getchar_unlocked() -> c_int {
    // SAFETY: as getchar.
    unsafe { getc_unlocked(stdin_file()) }
}
