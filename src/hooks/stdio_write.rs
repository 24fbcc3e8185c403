//! stdio output on a pipe, socket or terminal: when a call is going to
//! write to the fd, the thread first waits, parked, until the fd is
//! writable; then glibc writes.
//!
//! glibc's stdio writes through its internal `__write`, which no hook
//! sees: a thread whose `printf`, `fputs`, `fwrite`, `putc` or `fflush`
//! met a full pipe (its reader slower, or stopped) blocked its worker, and
//! every other thread there with it, until the reader made room.
//!
//! Whether a call writes is read from the FILE (glibc's public `struct
//! _IO_FILE` layout: flags and write pointers), so a call that only fills
//! the buffer costs a few loads:
//!
//! - unbuffered streams (stderr) write at every call;
//! - line-buffered ones (terminals) when the data holds a newline or
//!   overflows the buffer;
//! - fully buffered ones (pipes, sockets) when the data overflows what is
//!   left of the buffer; for the `printf` family, whose length is not known
//!   before formatting, when less than `PRINTF_ROOM` bytes are left;
//! - `fflush`, `fclose`, `__overflow(f, EOF)` when bytes are pending.
//!
//! Then, if the fd is a pipe, socket or terminal the program left
//! blocking and the process has another coroutine, the thread waits until
//! `poll` says POLLOUT (or an error: glibc's write then reports it, EPIPE
//! with SIGPIPE). POLLOUT on a pipe means a free page, room for the whole
//! buffer glibc flushes (a pipe's is 4 KiB). A handler without SA_RESTART
//! that runs meanwhile ends the call as glibc's failed write would: the
//! FILE's error flag, errno EINTR, the call's error value, the bytes
//! pending in the buffer dropped.
//!
//! An `fwrite` of a buffer's size or more (1 MiB on a full pipe) is
//! written by `stdio_bulk.rs`, in parked pieces under the FILE's lock.
//! Not covered: other calls with data larger than what the reader leaves
//! room for (an `fputs` or `printf` of 1 MiB waits inside glibc, with its
//! worker, for the reader to take most of it), another thread filling the
//! pipe between the wait and glibc's write. Wide-character output is
//! `stdio_wide.rs`, which waits here (`wait_room`).
//! The FILE's lock is not held during the wait (it is taken by glibc's
//! call, after). A thread that holds it already (`flockfile`) does not
//! park: another thread of its worker that wanted the lock would wait for
//! it in the kernel, holding the worker (`stdio::lock_held_here`); it
//! waits inside glibc as before.

use std::ffi::{c_char, c_int, c_void, CStr};

use libc::{size_t, FILE};

use super::{fd_kind, ready_now, user_nonblocking};
use crate::sched::fdtable::{self, Dir, KIND_FILE};
use crate::sched::signals::Interruptible;
use crate::sched::{current, park_until_any_ready, parking};

#[allow(non_snake_case)] // _IO_putc is glibc's name
mod real {
    use libc::{c_char, c_int, c_void, size_t, FILE};
    crate::sys::real::real_fns! {
        fn fwrite(p: *const c_void, size: size_t, n: size_t, f: *mut FILE) -> size_t;
        fn fwrite_unlocked(p: *const c_void, size: size_t, n: size_t, f: *mut FILE) -> size_t;
        fn fputs(s: *const c_char, f: *mut FILE) -> c_int;
        fn fputs_unlocked(s: *const c_char, f: *mut FILE) -> c_int;
        fn puts(s: *const c_char) -> c_int;
        fn fputc(c: c_int, f: *mut FILE) -> c_int;
        fn putc(c: c_int, f: *mut FILE) -> c_int;
        fn _IO_putc(c: c_int, f: *mut FILE) -> c_int;
        fn fputc_unlocked(c: c_int, f: *mut FILE) -> c_int;
        fn putc_unlocked(c: c_int, f: *mut FILE) -> c_int;
        fn putchar(c: c_int) -> c_int;
        fn putchar_unlocked(c: c_int) -> c_int;
        fn __overflow(f: *mut FILE, c: c_int) -> c_int;
        fn fflush(f: *mut FILE) -> c_int;
        fn fflush_unlocked(f: *mut FILE) -> c_int;
        fn vprintf(fmt: *const c_char, ap: *mut c_void) -> c_int;
        fn vfprintf(f: *mut FILE, fmt: *const c_char, ap: *mut c_void) -> c_int;
        fn __vprintf_chk(flag: c_int, fmt: *const c_char, ap: *mut c_void) -> c_int;
        fn __vfprintf_chk(f: *mut FILE, flag: c_int, fmt: *const c_char, ap: *mut c_void) -> c_int;
        fn vdprintf(fd: c_int, fmt: *const c_char, ap: *mut c_void) -> c_int;
        fn __vdprintf_chk(fd: c_int, flag: c_int, fmt: *const c_char, ap: *mut c_void) -> c_int;
    }
}

extern "C" {
    static mut stdout: *mut FILE;
}

/// glibc's `stdout` as it is now (a program may assign it).
pub(super) fn stdout_file() -> *mut FILE {
    // SAFETY: reading glibc's exported pointer, as the program's own
    // `printf` does.
    unsafe { stdout }
}

/// The head of glibc's `struct _IO_FILE` (bits/types/struct_FILE.h);
/// `stdio_bulk.rs` reads it too.
#[repr(C)]
pub(super) struct FileHead {
    pub(super) flags: c_int,
    pub(super) read_ptr: *mut c_char,
    pub(super) read_end: *mut c_char,
    pub(super) read_base: *mut c_char,
    pub(super) write_base: *mut c_char,
    pub(super) write_ptr: *mut c_char,
    pub(super) write_end: *mut c_char,
    pub(super) buf_base: *mut c_char,
    pub(super) buf_end: *mut c_char,
}

pub(super) const IO_UNBUFFERED: c_int = 0x0002;
pub(super) const IO_NO_WRITES: c_int = 0x0008;
pub(super) const IO_ERR_SEEN: c_int = 0x0020;
pub(super) const IO_LINE_BUF: c_int = 0x0200;
pub(super) const IO_CURRENTLY_PUTTING: c_int = 0x0800;

/// The smallest buffer glibc gives a pipe or socket stream (its
/// `st_blksize`, a page), for a stream whose buffer is not made yet.
pub(super) const FIRST_BUFFER: usize = 4096;

/// Room left below which a `printf` of unknown length counts as writing.
const PRINTF_ROOM: usize = 256;

/// What a call puts into the FILE.
#[derive(Clone, Copy)]
enum Out<'a> {
    /// These bytes, then a newline if the flag says so (`puts`).
    Bytes(&'a [u8], bool),
    /// One byte (`putc`).
    Byte(u8),
    /// Formatted output of unknown length.
    Formatted,
    /// Nothing: it writes what is pending (`fflush`).
    Flush,
}

/// Bytes between two of the FILE's pointers (0 if either is unset).
fn span(from: *mut c_char, to: *mut c_char) -> usize {
    if from.is_null() || to.is_null() || to <= from {
        0
    } else {
        to as usize - from as usize
    }
}

/// Whether the call will make glibc write to the fd (see the top).
#[inline(always)]
fn will_write(h: &FileHead, out: Out) -> bool {
    if h.flags & IO_NO_WRITES != 0 {
        return false; // it fails without writing
    }
    let putting = h.flags & IO_CURRENTLY_PUTTING != 0;
    if let Out::Flush = out {
        return putting && span(h.write_base, h.write_ptr) > 0;
    }
    if h.flags & IO_UNBUFFERED != 0 {
        return true;
    }
    // Its length, and whether it ends a line (the bytes are searched only
    // for a line-buffered stream, below).
    let (len, newline) = match out {
        Out::Bytes(b, nl) => (Some(b.len() + nl as usize), nl),
        Out::Byte(c) => (Some(1), c == b'\n'),
        Out::Formatted | Out::Flush => (None, true),
    };
    // A stream not yet written to gets its buffer at the first write and
    // fills it without writing.
    let unused = if h.buf_base.is_null() {
        FIRST_BUFFER
    } else {
        span(h.buf_base, h.buf_end)
    };
    if h.flags & IO_LINE_BUF != 0 {
        // glibc keeps write_end at write_ptr on such streams: the room is
        // what the buffer has left.
        let room = if putting {
            span(h.write_ptr, h.buf_end)
        } else {
            unused
        };
        let holds_newline = matches!(out, Out::Bytes(b, _) if b.contains(&b'\n'));
        return newline || holds_newline || len.is_none_or(|n| n >= room);
    }
    let room = if putting {
        span(h.write_ptr, h.write_end)
    } else {
        unused
    };
    match len {
        Some(n) => n > room,
        None => room < PRINTF_ROOM,
    }
}

/// Waits, parked, until `fd` is writable, when it is a pipe, socket or
/// terminal left blocking. false: a handler without SA_RESTART ran
/// meanwhile (errno EINTR set).
fn wait_writable(fd: c_int) -> bool {
    let Some(e) = (fd >= 0).then(|| fdtable::get(fd)).flatten() else {
        return true;
    };
    if fd_kind(fd, e) == KIND_FILE || user_nonblocking(fd, e) {
        return true;
    }
    let mut intr = Interruptible::begin();
    loop {
        let seen = e.snapshot(Dir::Write);
        if ready_now(fd, libc::POLLOUT) {
            return true;
        }
        if let Some(restart) = intr.check() {
            if !restart {
                crate::sys::set_errno(libc::EINTR);
                return false;
            }
            intr = Interruptible::begin();
        }
        park_until_any_ready(&[(fd, Dir::Write, seen)], None);
        if let Some(t) = current() {
            crate::sched::identity::cancel_point(&t.ident);
        }
    }
}

/// Before a stdio output call on `f`: waits until its fd takes data if
/// the call is going to write. false: interrupted (the FILE's error flag
/// and errno set as glibc sets them when its write fails with EINTR).
fn wait_output(f: *mut FILE, out: Out) -> bool {
    if f.is_null() {
        return true;
    }
    // Another thread may hold the FILE's lock parked (`stdio_bulk.rs`).
    super::stdio_bulk::wait_lock_free(f);
    let head = f as *mut FileHead;
    // SAFETY: a FILE the caller passed (its contract), read as glibc's
    // public layout; a stale value only makes a needless or missed wait.
    // Asked first: a call that only fills the buffer costs a few loads.
    let writes = will_write(unsafe { &*head }, out)
        || (matches!(out, Out::Flush) && super::stdio_wide::pending(f));
    if !writes || !parking() || super::stdio::lock_held_here(f) {
        return true;
    }
    wait_room(f)
}

/// Before `fflush_unlocked(f)` by a thread that holds `f`'s lock and may
/// park with it (`stdio_bulk.rs`): as `wait_output(f, Out::Flush)`.
pub(super) fn wait_flush_room(f: *mut FILE) -> bool {
    // SAFETY: a FILE the caller locked, read as glibc's public layout.
    if !will_write(unsafe { &*(f as *mut FileHead) }, Out::Flush) {
        return true;
    }
    wait_room(f)
}

/// Waits until `f`'s fd takes data; false: interrupted (see wait_output).
#[inline(never)]
pub(super) fn wait_room(f: *mut FILE) -> bool {
    let head = f as *mut FileHead;
    // SAFETY: as above.
    if wait_writable(unsafe { libc::fileno(f) }) {
        return true;
    }
    // SAFETY: as above. glibc's failed write sets the flag and empties
    // the buffer (new_do_write resets the write pointers whatever was
    // written): the bytes pending are dropped, here as natively.
    unsafe {
        (*head).flags |= IO_ERR_SEEN;
        if (*head).flags & IO_CURRENTLY_PUTTING != 0 && !(*head).write_base.is_null() {
            (*head).write_ptr = (*head).write_base;
        }
    }
    false
}

/// `n` bytes at `p` (none when NULL or empty).
fn bytes<'a>(p: *const c_void, n: usize) -> &'a [u8] {
    if p.is_null() || n == 0 {
        return &[];
    }
    // SAFETY: the caller of the stdio function passed `n` readable bytes.
    unsafe { std::slice::from_raw_parts(p as *const u8, n) }
}

/// The bytes of a C string (none when NULL).
fn cstr<'a>(s: *const c_char) -> &'a [u8] {
    if s.is_null() {
        return &[];
    }
    // SAFETY: the caller of the stdio function passed a C string.
    unsafe { CStr::from_ptr(s) }.to_bytes()
}

macro_rules! output_hook {
    ($name:ident ($($arg:ident : $ty:ty),*) -> $ret:ty, $file:expr, $out:expr, $failed:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            if !wait_output($file, $out) {
                return $failed;
            }
            // SAFETY: the caller's contract.
            unsafe { real::$name($($arg),*) }
        }
    };
}

/// `fwrite`: data of a buffer's size or more is written by corun, in
/// parked pieces under the FILE's lock (`stdio_bulk.rs`); the rest as the
/// other output calls.
#[no_mangle]
pub unsafe extern "C" fn fwrite(p: *const c_void, size: size_t, n: size_t, f: *mut FILE) -> size_t {
    if let Some(r) = super::stdio_bulk::fwrite(p, size, n, f) {
        return r;
    }
    if !wait_output(f, Out::Bytes(bytes(p, size.saturating_mul(n)), false)) {
        return 0;
    }
    // SAFETY: the caller's contract.
    unsafe { real::fwrite(p, size, n, f) }
}
output_hook!(fwrite_unlocked(p: *const c_void, size: size_t, n: size_t, f: *mut FILE) -> size_t,
    f, Out::Bytes(bytes(p, size.saturating_mul(n)), false), 0);
output_hook!(fputs(s: *const c_char, f: *mut FILE) -> c_int, f, Out::Bytes(cstr(s), false), libc::EOF);
output_hook!(fputs_unlocked(s: *const c_char, f: *mut FILE) -> c_int,
    f, Out::Bytes(cstr(s), false), libc::EOF);
output_hook!(puts(s: *const c_char) -> c_int, stdout_file(), Out::Bytes(cstr(s), true), libc::EOF);
output_hook!(fputc(c: c_int, f: *mut FILE) -> c_int, f, Out::Byte(c as u8), libc::EOF);
output_hook!(putc(c: c_int, f: *mut FILE) -> c_int, f, Out::Byte(c as u8), libc::EOF);
#[allow(non_snake_case)]
mod io_putc {
    use super::*;
    output_hook!(_IO_putc(c: c_int, f: *mut FILE) -> c_int, f, Out::Byte(c as u8), libc::EOF);
}
output_hook!(fputc_unlocked(c: c_int, f: *mut FILE) -> c_int,
    f, Out::Byte(c as u8), libc::EOF);
output_hook!(putc_unlocked(c: c_int, f: *mut FILE) -> c_int,
    f, Out::Byte(c as u8), libc::EOF);
output_hook!(putchar(c: c_int) -> c_int, stdout_file(), Out::Byte(c as u8), libc::EOF);
output_hook!(putchar_unlocked(c: c_int) -> c_int,
    stdout_file(), Out::Byte(c as u8), libc::EOF);
output_hook!(__overflow(f: *mut FILE, c: c_int) -> c_int, f,
    if c == libc::EOF { Out::Flush } else { Out::Byte(c as u8) }, libc::EOF);
output_hook!(fflush(f: *mut FILE) -> c_int, f, Out::Flush, libc::EOF);
output_hook!(fflush_unlocked(f: *mut FILE) -> c_int, f, Out::Flush, libc::EOF);
output_hook!(vprintf(fmt: *const c_char, ap: *mut c_void) -> c_int, stdout_file(), Out::Formatted, -1);
output_hook!(vfprintf(f: *mut FILE, fmt: *const c_char, ap: *mut c_void) -> c_int, f, Out::Formatted, -1);
output_hook!(__vprintf_chk(flag: c_int, fmt: *const c_char, ap: *mut c_void) -> c_int,
    stdout_file(), Out::Formatted, -1);
output_hook!(__vfprintf_chk(f: *mut FILE, flag: c_int, fmt: *const c_char, ap: *mut c_void) -> c_int,
    f, Out::Formatted, -1);

/// `fclose` (fdctl.rs) writes what is pending first.
pub(crate) fn before_fclose(f: *mut FILE) {
    // An interrupted wait is not an error here: glibc's own flush then
    // meets the full pipe as natively.
    let _ = wait_output(f, Out::Flush);
}

/// The `dprintf` family writes straight to an fd.
fn wait_fd(fd: c_int) -> bool {
    !parking() || wait_writable(fd)
}

#[no_mangle]
pub unsafe extern "C" fn vdprintf(fd: c_int, fmt: *const c_char, ap: *mut c_void) -> c_int {
    if !wait_fd(fd) {
        return -1;
    }
    // SAFETY: the caller's contract.
    unsafe { real::vdprintf(fd, fmt, ap) }
}

#[no_mangle]
pub unsafe extern "C" fn __vdprintf_chk(
    fd: c_int,
    flag: c_int,
    fmt: *const c_char,
    ap: *mut c_void,
) -> c_int {
    if !wait_fd(fd) {
        return -1;
    }
    // SAFETY: the caller's contract.
    unsafe { real::__vdprintf_chk(fd, flag, fmt, ap) }
}

/// The variadic forms: trampolines (`variadic.rs`) whose gate waits.
mod variadic_forms {
    use super::*;
    use crate::hooks::variadic::gated_variadic;

    gated_variadic!(printf, gate_printf, |_fmt, _a| wait_output(
        stdout_file(),
        Out::Formatted
    ));
    gated_variadic!(__printf_chk, gate_printf_chk, |_flag, _fmt| wait_output(
        stdout_file(),
        Out::Formatted
    ));
    gated_variadic!(fprintf, gate_fprintf, |f, _fmt| wait_output(
        f as *mut FILE,
        Out::Formatted
    ));
    gated_variadic!(__fprintf_chk, gate_fprintf_chk, |f, _flag| wait_output(
        f as *mut FILE,
        Out::Formatted
    ));
    gated_variadic!(dprintf, gate_dprintf, |fd, _fmt| wait_fd(fd as c_int));
    gated_variadic!(__dprintf_chk, gate_dprintf_chk, |fd, _flag| wait_fd(
        fd as c_int
    ));
}
