//! Wide-character stdio on a pipe, socket or terminal (`fgetwc`,
//! `fgetws`, `fwscanf`, `fputwc`, `fputws`, `fwprintf` and their kin): the
//! thread waits, parked, for input or for room first, then glibc reads or
//! writes, as `stdio.rs` and `stdio_write.rs` do for the narrow calls.
//!
//! glibc converts between a wide buffer (`struct _IO_wide_data`, reached
//! from the FILE's `_wide_data`) and the FILE's byte buffer, and reads and
//! writes the bytes through its internal `__read`/`__write`, which no hook
//! sees: four threads in `fgetws` on empty pipes blocked both workers, and
//! the thread that would have written to the pipes never ran (a deadlock
//! natively unknown).
//!
//! - Input: the call reads only when both buffers are empty (characters
//!   decoded and waiting, or bytes not yet decoded, are served without a
//!   read); then the thread waits as `stdio::wait_input_beyond` does. A
//!   `wscanf` whose format skips white space first counts a wide buffer
//!   of only white space as empty.
//! - Output: the call writes when the stream is unbuffered, when a
//!   line-buffered one gets a newline or more than its room, when a fully
//!   buffered one gets more characters than its wide buffer has room for
//!   (a `wprintf` of unknown length: when fewer than `PRINTF_ROOM`
//!   characters are left), and at `fflush`/`fclose` with characters
//!   pending (`pending`, asked by `stdio_write.rs`). Then the thread waits
//!   until the fd takes data (`stdio_write::wait_room`).
//!
//! Not covered, as for the narrow calls: input a call needs beyond what
//! arrived at once, output larger than the room the reader leaves.

use std::ffi::{c_int, c_void};

use libc::{wchar_t, FILE};

use super::scanf_format::skips_blanks_first_wide;
use super::stdio::{stdin_file, wait_input_beyond};
use super::stdio_write::{
    stdout_file, wait_room, FileHead, IO_CURRENTLY_PUTTING, IO_LINE_BUF, IO_NO_WRITES,
    IO_UNBUFFERED,
};
use super::variadic::gated_variadic;
use crate::sched::parking;

/// glibc's `wint_t`.
#[allow(non_camel_case_types)]
type wint_t = libc::c_uint;
const WEOF: wint_t = 0xffff_ffff;

#[allow(non_snake_case)]
mod real {
    use super::{wchar_t, wint_t};
    use libc::{c_int, c_void, FILE};
    crate::sys::real::real_fns! {
        fn fgetwc(f: *mut FILE) -> wint_t;
        fn getwc(f: *mut FILE) -> wint_t;
        fn fgetwc_unlocked(f: *mut FILE) -> wint_t;
        fn getwc_unlocked(f: *mut FILE) -> wint_t;
        fn getwchar() -> wint_t;
        fn getwchar_unlocked() -> wint_t;
        fn fgetws(s: *mut wchar_t, n: c_int, f: *mut FILE) -> *mut wchar_t;
        fn fgetws_unlocked(s: *mut wchar_t, n: c_int, f: *mut FILE) -> *mut wchar_t;
        fn vfwscanf(f: *mut FILE, fmt: *const wchar_t, ap: *mut c_void) -> c_int;
        fn vwscanf(fmt: *const wchar_t, ap: *mut c_void) -> c_int;
        fn __isoc99_vfwscanf(f: *mut FILE, fmt: *const wchar_t, ap: *mut c_void) -> c_int;
        fn __isoc99_vwscanf(fmt: *const wchar_t, ap: *mut c_void) -> c_int;
        fn fputwc(c: wchar_t, f: *mut FILE) -> wint_t;
        fn putwc(c: wchar_t, f: *mut FILE) -> wint_t;
        fn fputwc_unlocked(c: wchar_t, f: *mut FILE) -> wint_t;
        fn putwc_unlocked(c: wchar_t, f: *mut FILE) -> wint_t;
        fn putwchar(c: wchar_t) -> wint_t;
        fn putwchar_unlocked(c: wchar_t) -> wint_t;
        fn fputws(s: *const wchar_t, f: *mut FILE) -> c_int;
        fn fputws_unlocked(s: *const wchar_t, f: *mut FILE) -> c_int;
        fn vfwprintf(f: *mut FILE, fmt: *const wchar_t, ap: *mut c_void) -> c_int;
        fn vwprintf(fmt: *const wchar_t, ap: *mut c_void) -> c_int;
        fn __vfwprintf_chk(f: *mut FILE, flag: c_int, fmt: *const wchar_t, ap: *mut c_void) -> c_int;
        fn __vwprintf_chk(flag: c_int, fmt: *const wchar_t, ap: *mut c_void) -> c_int;
    }
}

/// Where `struct _IO_FILE` keeps `_wide_data` and `_mode` (x86_64 glibc,
/// bits/types/struct_FILE.h).
const WIDE_DATA_OFFSET: usize = 160;
const MODE_OFFSET: usize = 192;

/// The head of glibc's `struct _IO_wide_data` (libio/libio.h).
#[repr(C)]
struct WideHead {
    read_ptr: *mut wchar_t,
    read_end: *mut wchar_t,
    read_base: *mut wchar_t,
    write_base: *mut wchar_t,
    write_ptr: *mut wchar_t,
    write_end: *mut wchar_t,
    buf_base: *mut wchar_t,
    buf_end: *mut wchar_t,
}

/// Room below which a `wprintf` of unknown length counts as writing.
const PRINTF_ROOM: usize = 256;

/// `f`'s wide buffers, if the stream is wide-oriented and has them.
fn wide(f: *mut FILE) -> Option<&'static WideHead> {
    // SAFETY: a FILE the caller passed (its contract), read as glibc's
    // layout: its orientation, then the wide data pointer glibc set when
    // it made the FILE; a stale value only makes a needless or missed wait.
    unsafe {
        if *((f as *const u8).add(MODE_OFFSET) as *const c_int) <= 0 {
            return None;
        }
        let w = *((f as *const u8).add(WIDE_DATA_OFFSET) as *const *const WideHead);
        w.as_ref()
    }
}

/// Characters in [from, to) (0 if either is unset).
fn chars(from: *mut wchar_t, to: *mut wchar_t) -> usize {
    if from.is_null() || to.is_null() || to <= from {
        0
    } else {
        (to as usize - from as usize) / std::mem::size_of::<wchar_t>()
    }
}

/// Whether wide characters wait in `f`'s buffer to be written (`fflush`
/// and `fclose` then write: `stdio_write.rs`).
pub(super) fn pending(f: *mut FILE) -> bool {
    // SAFETY: as in `wide`.
    let putting = unsafe { (*(f as *const FileHead)).flags } & IO_CURRENTLY_PUTTING != 0;
    putting && wide(f).is_some_and(|w| chars(w.write_base, w.write_ptr) > 0)
}

/// Waits, parked, until `f` has input for a wide read. false: interrupted
/// or a terminal's VTIME passed (see `stdio::wait_input`).
fn wait_wide_input(f: *mut FILE, blanks_are_empty: bool) -> bool {
    if f.is_null() || !parking() {
        return true;
    }
    if let Some(w) = wide(f) {
        let n = chars(w.read_ptr, w.read_end);
        // SAFETY: [read_ptr, read_end) is the FILE's decoded input.
        let buffered = unsafe { std::slice::from_raw_parts(w.read_ptr as *const wchar_t, n) };
        let blank = |c: &wchar_t| matches!(*c, 0x20 | 0x09..=0x0d);
        if n > 0 && !(blanks_are_empty && buffered.iter().all(blank)) {
            return true;
        }
    }
    wait_input_beyond(f, blanks_are_empty)
}

/// What a wide output call puts into the FILE.
#[derive(Clone, Copy)]
enum WideOut {
    /// This many characters, and whether a newline is among them.
    Chars(usize, bool),
    /// Formatted output of unknown length.
    Formatted,
}

/// Whether the call will make glibc write to the fd (see the top).
fn will_write(f: *mut FILE, out: WideOut) -> bool {
    // SAFETY: as in `wide`.
    let flags = unsafe { (*(f as *const FileHead)).flags };
    if flags & IO_NO_WRITES != 0 {
        return false;
    }
    if flags & IO_UNBUFFERED != 0 {
        return true;
    }
    let (len, newline) = match out {
        WideOut::Chars(n, nl) => (Some(n), nl),
        WideOut::Formatted => (None, true),
    };
    // No wide buffer yet: the first call makes it and fills it.
    let Some(w) = wide(f).filter(|w| !w.buf_base.is_null()) else {
        return flags & IO_LINE_BUF != 0 && newline;
    };
    let putting = flags & IO_CURRENTLY_PUTTING != 0;
    let room = if putting {
        chars(w.write_ptr, w.buf_end)
    } else {
        chars(w.buf_base, w.buf_end)
    };
    if flags & IO_LINE_BUF != 0 {
        return newline || len.is_none_or(|n| n >= room);
    }
    match len {
        Some(n) => n > room,
        None => room < PRINTF_ROOM,
    }
}

/// Before a wide output call on `f`: waits until its fd takes data if the
/// call is going to write. false: interrupted (the FILE's error flag and
/// errno set as glibc sets them when its write fails with EINTR).
fn wait_wide_output(f: *mut FILE, out: WideOut) -> bool {
    if f.is_null() || !parking() {
        return true;
    }
    super::stdio_bulk::wait_lock_free(f);
    if !will_write(f, out) || super::stdio::lock_held_here(f) {
        return true;
    }
    wait_room(f)
}

/// A wide string's length and whether it holds a newline.
fn wide_str(s: *const wchar_t) -> WideOut {
    if s.is_null() {
        return WideOut::Chars(0, false);
    }
    let (mut n, mut nl) = (0usize, false);
    // SAFETY: the caller of the stdio function passed a wide C string.
    unsafe {
        while *s.add(n) != 0 {
            nl |= *s.add(n) == '\n' as wchar_t;
            n += 1;
        }
    }
    WideOut::Chars(n, nl)
}

fn wide_char(c: wchar_t) -> WideOut {
    WideOut::Chars(1, c == '\n' as wchar_t)
}

macro_rules! wide_hook {
    ($name:ident ($($arg:ident : $ty:ty),*) -> $ret:ty, $wait:expr, $failed:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            if !$wait {
                return $failed;
            }
            // SAFETY: the caller's contract.
            unsafe { real::$name($($arg),*) }
        }
    };
}

wide_hook!(fgetwc(f: *mut FILE) -> wint_t, wait_wide_input(f, false), WEOF);
wide_hook!(getwc(f: *mut FILE) -> wint_t, wait_wide_input(f, false), WEOF);
wide_hook!(fgetwc_unlocked(f: *mut FILE) -> wint_t, wait_wide_input(f, false), WEOF);
wide_hook!(getwc_unlocked(f: *mut FILE) -> wint_t, wait_wide_input(f, false), WEOF);
wide_hook!(getwchar() -> wint_t, wait_wide_input(stdin_file(), false), WEOF);
wide_hook!(getwchar_unlocked() -> wint_t, wait_wide_input(stdin_file(), false), WEOF);
wide_hook!(fgetws(s: *mut wchar_t, n: c_int, f: *mut FILE) -> *mut wchar_t,
    wait_wide_input(f, false), std::ptr::null_mut());
wide_hook!(fgetws_unlocked(s: *mut wchar_t, n: c_int, f: *mut FILE) -> *mut wchar_t,
    wait_wide_input(f, false), std::ptr::null_mut());
wide_hook!(vfwscanf(f: *mut FILE, fmt: *const wchar_t, ap: *mut c_void) -> c_int,
    wait_wide_input(f, skips_blanks_first_wide(fmt)), libc::EOF);
wide_hook!(vwscanf(fmt: *const wchar_t, ap: *mut c_void) -> c_int,
    wait_wide_input(stdin_file(), skips_blanks_first_wide(fmt)), libc::EOF);
wide_hook!(__isoc99_vfwscanf(f: *mut FILE, fmt: *const wchar_t, ap: *mut c_void) -> c_int,
    wait_wide_input(f, skips_blanks_first_wide(fmt)), libc::EOF);
wide_hook!(__isoc99_vwscanf(fmt: *const wchar_t, ap: *mut c_void) -> c_int,
    wait_wide_input(stdin_file(), skips_blanks_first_wide(fmt)), libc::EOF);

wide_hook!(fputwc(c: wchar_t, f: *mut FILE) -> wint_t, wait_wide_output(f, wide_char(c)), WEOF);
wide_hook!(putwc(c: wchar_t, f: *mut FILE) -> wint_t, wait_wide_output(f, wide_char(c)), WEOF);
wide_hook!(fputwc_unlocked(c: wchar_t, f: *mut FILE) -> wint_t,
    wait_wide_output(f, wide_char(c)), WEOF);
wide_hook!(putwc_unlocked(c: wchar_t, f: *mut FILE) -> wint_t,
    wait_wide_output(f, wide_char(c)), WEOF);
wide_hook!(putwchar(c: wchar_t) -> wint_t, wait_wide_output(stdout_file(), wide_char(c)), WEOF);
wide_hook!(putwchar_unlocked(c: wchar_t) -> wint_t,
    wait_wide_output(stdout_file(), wide_char(c)), WEOF);
wide_hook!(fputws(s: *const wchar_t, f: *mut FILE) -> c_int, wait_wide_output(f, wide_str(s)), -1);
wide_hook!(fputws_unlocked(s: *const wchar_t, f: *mut FILE) -> c_int,
    wait_wide_output(f, wide_str(s)), -1);
wide_hook!(vfwprintf(f: *mut FILE, fmt: *const wchar_t, ap: *mut c_void) -> c_int,
    wait_wide_output(f, WideOut::Formatted), -1);
wide_hook!(vwprintf(fmt: *const wchar_t, ap: *mut c_void) -> c_int,
    wait_wide_output(stdout_file(), WideOut::Formatted), -1);
wide_hook!(__vfwprintf_chk(f: *mut FILE, flag: c_int, fmt: *const wchar_t, ap: *mut c_void) -> c_int,
    wait_wide_output(f, WideOut::Formatted), -1);
wide_hook!(__vwprintf_chk(flag: c_int, fmt: *const wchar_t, ap: *mut c_void) -> c_int,
    wait_wide_output(stdout_file(), WideOut::Formatted), -1);

/// The variadic forms: trampolines (`variadic.rs`) whose gate waits.
mod variadic_forms {
    use super::*;

    gated_variadic!(fwscanf, gate_fwscanf, |f, fmt| wait_wide_input(
        f as *mut FILE,
        skips_blanks_first_wide(fmt as *const wchar_t)
    ));
    gated_variadic!(__isoc99_fwscanf, gate_isoc99_fwscanf, |f, fmt| {
        wait_wide_input(
            f as *mut FILE,
            skips_blanks_first_wide(fmt as *const wchar_t),
        )
    });
    gated_variadic!(wscanf, gate_wscanf, |fmt, _a| wait_wide_input(
        stdin_file(),
        skips_blanks_first_wide(fmt as *const wchar_t)
    ));
    gated_variadic!(__isoc99_wscanf, gate_isoc99_wscanf, |fmt, _a| {
        wait_wide_input(stdin_file(), skips_blanks_first_wide(fmt as *const wchar_t))
    });
    gated_variadic!(fwprintf, gate_fwprintf, |f, _fmt| wait_wide_output(
        f as *mut FILE,
        WideOut::Formatted
    ));
    gated_variadic!(__fwprintf_chk, gate_fwprintf_chk, |f, _flag| {
        wait_wide_output(f as *mut FILE, WideOut::Formatted)
    });
    gated_variadic!(wprintf, gate_wprintf, |_fmt, _a| wait_wide_output(
        stdout_file(),
        WideOut::Formatted
    ));
    gated_variadic!(__wprintf_chk, gate_wprintf_chk, |_flag, _fmt| {
        wait_wide_output(stdout_file(), WideOut::Formatted)
    });
}
