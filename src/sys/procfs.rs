//! Files of `/proc` that corun's helper threads read while the program
//! runs (a worker thread's `stat` and `syscall`, the process's `maps`),
//! each opened once and kept at a high fd, then re-read in place.
//!
//! Opening a file takes the lowest free fd number, if only for a moment.
//! A program that closes fds 3 and up and then makes a pipe expects fds 3
//! and 4 (hooks_fd does, as does any daemon that counts on its first
//! socket being fd 3); the preemption monitor and the watchdog read these
//! files every few milliseconds, so an `open` of theirs, landing at 3 just
//! then, gave the program 4 instead. A kept file is read with
//! `pread(fd, .., 0)`: the kernel's seq_file restarts the text at offset 0,
//! so each read is a fresh answer, and no fd is made.
//!
//! Files are opened only where the program cannot be making fds of its own
//! in another thread: before its first thread exists, or inside the call
//! that makes a thread (`open` says so to its callers). A file is opened
//! onto the number it already holds (`dup3` replaces it in one step), so
//! a reader never sees the number closed; a forked child reopens its files
//! (an inherited one still describes the parent's threads).

use std::ffi::CStr;
use std::sync::atomic::{AtomicI32, Ordering};

use super::real::syscall;

/// One kept file of /proc (-1: none yet).
pub struct ProcFile(AtomicI32);

impl Default for ProcFile {
    fn default() -> Self {
        Self::new()
    }
}

impl ProcFile {
    pub const fn new() -> Self {
        Self(AtomicI32::new(-1))
    }

    /// Opens `path` and keeps it at this file's high fd (a new one the
    /// first time). Only where no thread of the program can be making fds
    /// (see the top of this file): the open takes a low number for a
    /// moment. Returns the kept fd, for the caller to mark as corun's.
    pub fn open(&self, path: &CStr) -> Option<i32> {
        let low = open_read_only(path);
        if low < 0 {
            return None;
        }
        let mut kept = self.0.load(Ordering::Acquire);
        if kept < 0 {
            let high = super::dup_high(low, low + 1);
            kept = match self
                .0
                .compare_exchange(-1, high, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => high,
                Err(other) => {
                    // Another opener kept one first: use its number.
                    close(high);
                    other
                }
            };
        }
        let ok = kept >= 0
            // SAFETY: raw dup3 of an fd this function owns onto the kept
            // number, replacing it in one step.
            && unsafe { syscall!(libc::SYS_dup3, low, kept, libc::O_CLOEXEC) } >= 0;
        close(low);
        ok.then_some(kept)
    }

    /// The file's text from its start, as much as fits in `buf`; None if
    /// it is not open or the read failed (a thread that ended: ESRCH).
    pub fn read<'a>(&self, buf: &'a mut [u8]) -> Option<&'a [u8]> {
        let n = self.read_at(buf, 0)?;
        Some(&buf[..n])
    }

    /// The whole text, however long (for `maps`).
    pub fn read_all(&self) -> Option<Vec<u8>> {
        let mut out = vec![0u8; 16 << 10];
        let mut len = 0;
        loop {
            if len == out.len() {
                out.resize(out.len() * 2, 0);
            }
            let n = self.read_at(&mut out[len..], len as i64)?;
            if n == 0 {
                out.truncate(len);
                return Some(out);
            }
            len += n;
        }
    }

    fn read_at(&self, buf: &mut [u8], offset: i64) -> Option<usize> {
        let fd = self.0.load(Ordering::Acquire);
        if fd < 0 {
            return None;
        }
        // SAFETY: a raw pread into a live buffer of `buf.len()` bytes.
        let n = unsafe { syscall!(libc::SYS_pread64, fd, buf.as_mut_ptr(), buf.len(), offset) };
        (n >= 0).then_some(n as usize)
    }
}

/// A raw close-on-exec, read-only open of `path` (the hook for the name
/// must not see corun's own files); -1 on failure.
pub fn open_read_only(path: &CStr) -> i32 {
    // SAFETY: a raw openat of a NUL-terminated path.
    let fd = unsafe {
        syscall!(
            libc::SYS_openat,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC
        )
    };
    fd.max(-1) as i32
}

fn close(fd: i32) {
    if fd >= 0 {
        // SAFETY: raw close of an fd the caller owns.
        unsafe { syscall!(libc::SYS_close, fd) };
    }
}

#[cfg(test)]
mod tests {
    use super::ProcFile;

    #[test]
    fn rereads_in_place_at_one_number() {
        let f = ProcFile::new();
        assert!(f.read(&mut [0u8; 64]).is_none(), "not open yet");
        let fd = f.open(c"/proc/self/stat").expect("open");
        assert!(fd > 2);
        let mut buf = [0u8; 512];
        let first = f.read(&mut buf).expect("read").to_vec();
        let pid = std::process::id().to_string();
        assert!(first.starts_with(pid.as_bytes()), "{first:?}");
        // A second read starts from the top again.
        let again = f.read(&mut buf).expect("read again");
        assert!(again.starts_with(pid.as_bytes()));
        // Reopened onto the same number.
        assert_eq!(f.open(c"/proc/self/maps"), Some(fd));
        let maps = f.read_all().expect("maps");
        assert!(maps.len() > 100 && maps.ends_with(b"\n"));
        let text = String::from_utf8(maps).expect("text");
        assert!(text.contains("[stack]"), "maps read to its end");
    }
}
