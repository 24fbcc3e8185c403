//! A read of a terminal in non-canonical mode with VMIN = 0: it returns
//! when a byte is there or when VTIME (tenths of a second, counted from the
//! call) has passed, with 0 then (termios(3), case "MIN == 0, TIME > 0");
//! with VTIME = 0 too it returns at once (a polling read). corun's
//! "readiness, then the call" for devices (`hooks/mod.rs`) waited for a
//! byte for ever instead: Ruby's `IO#getch(min: 0, time: 0.1)` (its own
//! `TestIO_Console#test_raw_timeout`) hung, and so would any editor,
//! readline or ssh client reading keys with a timeout.
//!
//! The hooks ask the terminal's mode only when a read is about to wait
//! (the fast path with data there makes no extra call): the wait then ends
//! at the VTIME deadline, and a read that still finds nothing returns 0,
//! as the kernel's does. VMIN > 0 needs nothing: poll reports the terminal
//! readable when the read would return (n_tty counts VMIN bytes when VTIME
//! is 0, one byte otherwise; with both > 0 the kernel then times the gaps
//! between bytes inside the read itself).

/// The time a read of `fd` waits at most for its first byte, in ns, when
/// `fd` is a terminal in non-canonical mode with VMIN = 0 (0: it does not
/// wait); None when the read waits for data however long it takes (not a
/// terminal, canonical mode, or VMIN > 0).
pub(crate) fn vmin0_wait_ns(fd: i32) -> Option<u64> {
    // SAFETY: a zeroed termios is a valid out-buffer for TCGETS; a raw
    // system call because `ioctl` is interposed.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    let r = unsafe { crate::sys::real::syscall!(libc::SYS_ioctl, fd, libc::TCGETS, &mut t) };
    if r < 0 || t.c_lflag & libc::ICANON != 0 || t.c_cc[libc::VMIN] != 0 {
        return None;
    }
    Some(u64::from(t.c_cc[libc::VTIME]) * 100_000_000)
}
