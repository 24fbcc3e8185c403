//! `pread`, `pwrite` (and their `64` names, `__pread_chk`,
//! `__pread64_chk`): reads and writes at an offset; and `preadv2`,
//! `pwritev2` (`preadv64v2`, `pwritev64v2`), which at offset -1 without
//! flags are `readv`/`writev` (`hooks/rw.rs`) and otherwise pass through.
//!
//! They only make sense on seekable files (a pipe or socket gives ESPIPE),
//! which never report EAGAIN: they pass straight through, and are
//! interposed so that the blocking pool can take over a regular file's
//! call that must go to the disk. `__pread_chk` checks the buffer size as
//! glibc's does (`hooks/rw.rs`, `__read_chk`).

use std::ffi::c_int;

use libc::{c_void, iovec, size_t, ssize_t};

use super::fd_kind;
use super::rw::{__chk_fail, read_iov, write_iov};
use crate::sched::fdtable;
use crate::sched::parking;
use crate::sys::real;

// On 64-bit Linux `off_t` is `off64_t` and glibc's `pread` is an alias of
// `pread64`: both names go to the real `pread64`. In a coroutine, on a
// regular file, the read (or write) is served inline from the page cache
// when it can be and on the blocking pool when it must go to the disk.

/// pread/pwrite on a regular file from a coroutine: Some(result).
fn positioned_file_io(
    fd: c_int,
    buf: *const c_void,
    n: size_t,
    off: i64,
    write: bool,
) -> Option<isize> {
    if !parking() || off < 0 {
        return None;
    }
    let e = fdtable::get(fd)?;
    if fd_kind(fd, e) != fdtable::KIND_FILE {
        return None;
    }
    let iov = iovec {
        iov_base: buf as *mut c_void,
        iov_len: n,
    };
    Some(if write {
        super::file::pwrite_file(fd, &iov, 1, off, &e.policy)
    } else {
        super::file::pread_file(fd, &iov, 1, off, &e.policy)
    })
}

#[no_mangle]
pub unsafe extern "C" fn pread(fd: c_int, buf: *mut c_void, n: size_t, off: i64) -> ssize_t {
    // SAFETY: the caller's pread contract.
    unsafe { pread64(fd, buf, n, off) }
}

#[no_mangle]
pub unsafe extern "C" fn pread64(fd: c_int, buf: *mut c_void, n: size_t, off: i64) -> ssize_t {
    if crate::sched::lone::nothing_parks() {
        // A lone entry (hooks/mod.rs): what the rest does when nothing parks.
        // SAFETY: the caller's pread64 contract.
        return unsafe { real::pread64(fd, buf, n, off) };
    }
    super::rw_entry();
    // SAFETY: as above.
    unsafe { pread64_hooked(fd, buf, n, off) }
}

#[inline(never)]
unsafe fn pread64_hooked(fd: c_int, buf: *mut c_void, n: size_t, off: i64) -> ssize_t {
    if let Some(r) = positioned_file_io(fd, buf, n, off, false) {
        return r;
    }
    // SAFETY: the caller's pread contract.
    unsafe { real::pread64(fd, buf, n, off) }
}

#[no_mangle]
pub unsafe extern "C" fn pwrite(fd: c_int, buf: *const c_void, n: size_t, off: i64) -> ssize_t {
    // SAFETY: the caller's pwrite contract.
    unsafe { pwrite64(fd, buf, n, off) }
}

#[no_mangle]
pub unsafe extern "C" fn pwrite64(fd: c_int, buf: *const c_void, n: size_t, off: i64) -> ssize_t {
    if crate::sched::lone::nothing_parks() {
        // A lone entry (hooks/mod.rs): what the rest does when nothing parks.
        // SAFETY: the caller's pwrite64 contract.
        return unsafe { real::pwrite64(fd, buf, n, off) };
    }
    super::rw_entry();
    // SAFETY: as above.
    unsafe { pwrite64_hooked(fd, buf, n, off) }
}

#[inline(never)]
unsafe fn pwrite64_hooked(fd: c_int, buf: *const c_void, n: size_t, off: i64) -> ssize_t {
    if let Some(r) = positioned_file_io(fd, buf, n, off, true) {
        return r;
    }
    // SAFETY: the caller's pwrite contract.
    unsafe { real::pwrite64(fd, buf, n, off) }
}

#[no_mangle]
pub unsafe extern "C" fn __pread_chk(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    off: i64,
    buflen: size_t,
) -> ssize_t {
    if n > buflen {
        // SAFETY: as in __read_chk.
        unsafe { __chk_fail() }
    }
    // SAFETY: the caller's pread contract.
    unsafe { pread64(fd, buf, n, off) }
}

#[no_mangle]
pub unsafe extern "C" fn __pread64_chk(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    off: i64,
    buflen: size_t,
) -> ssize_t {
    // SAFETY: same contract.
    unsafe { __pread_chk(fd, buf, n, off, buflen) }
}

/// `preadv2`/`pwritev2` at offset -1 without flags are `readv`/`writev`
/// (the current position; on a pipe or socket they wait like them). Any
/// other call (an offset, or flags such as RWF_NOWAIT the program asked
/// for) passes through.
fn as_plain_rw(off: i64, flags: c_int, cnt: c_int) -> bool {
    parking() && off == -1 && flags == 0 && cnt > 0 && cnt <= libc::UIO_MAXIOV
}

#[no_mangle]
pub unsafe extern "C" fn preadv2(
    fd: c_int,
    iov: *const iovec,
    cnt: c_int,
    off: i64,
    flags: c_int,
) -> ssize_t {
    if as_plain_rw(off, flags, cnt) {
        if let Some(r) = read_iov(fd, iov, cnt) {
            return r;
        }
    }
    // SAFETY: the caller's preadv2 contract.
    unsafe { real::preadv2(fd, iov, cnt, off, flags) }
}

#[no_mangle]
pub unsafe extern "C" fn preadv64v2(
    fd: c_int,
    iov: *const iovec,
    cnt: c_int,
    off: i64,
    flags: c_int,
) -> ssize_t {
    // On 64-bit Linux `off_t` is 64 bits: glibc's preadv64v2 is preadv2.
    // SAFETY: the caller's preadv2 contract.
    unsafe { preadv2(fd, iov, cnt, off, flags) }
}

#[no_mangle]
pub unsafe extern "C" fn pwritev2(
    fd: c_int,
    iov: *const iovec,
    cnt: c_int,
    off: i64,
    flags: c_int,
) -> ssize_t {
    if as_plain_rw(off, flags, cnt) {
        if let Some(r) = write_iov(fd, iov, cnt) {
            return r;
        }
    }
    // SAFETY: the caller's pwritev2 contract.
    unsafe { real::pwritev2(fd, iov, cnt, off, flags) }
}

#[no_mangle]
pub unsafe extern "C" fn pwritev64v2(
    fd: c_int,
    iov: *const iovec,
    cnt: c_int,
    off: i64,
    flags: c_int,
) -> ssize_t {
    // As preadv64v2: pwritev64v2 is pwritev2.
    // SAFETY: the caller's pwritev2 contract.
    unsafe { pwritev2(fd, iov, cnt, off, flags) }
}
