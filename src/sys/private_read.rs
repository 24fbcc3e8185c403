//! Reading a whole file from a helper thread without taking one of the
//! program's fd numbers, even for a moment.
//!
//! An `open` takes the lowest free number of the process's fd table: the
//! watchdog reading an object's symbol table (`sched/symbols.rs`) while
//! the program ran gave a program that had just closed its fds 4 and 5
//! from its next `pipe` instead of 3 and 4 (`c-tests/fd_numbers_busy.c`).
//! So the read happens on a short-lived thread of corun's that first
//! takes a private copy of the fd table (`unshare(CLONE_FILES)`) and
//! empties it (`close_range`): its `open` lands in a table the program
//! never sees, and the copy holds none of the program's files once
//! emptied (a socket the program closes in between is released a few
//! microseconds later; POSIX record locks belong to the table that took
//! them, so closing the copy's fds releases none of the program's).
//!
//! Raw system calls only: the fd hooks would record the private fd in
//! corun's table of the program's fds, under the number of one of them.
//! For cold reads (once per object file); hot ones keep a file (`procfs`).
//! The dump thread takes such a table for good (`take_private_fd_table`,
//! keeping its eventfd) and writes its file there.

use std::ffi::{CStr, CString};

use super::real::syscall;

/// A way to start a kernel thread running a job (`spawn_native_thread`,
/// or the scheduler's helper start, which a confined process waits for).
pub type Spawn = fn(Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()>;

/// The whole content of the file at `path`, read on a thread (started by
/// `spawn`) with a fd table of its own; None if it cannot be read there
/// (or the kernel refuses `unshare`, as a seccomp filter may).
pub fn read_file(path: &CStr, spawn: Spawn) -> Option<Vec<u8>> {
    let path: CString = path.to_owned();
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    spawn(Box::new(move || {
        let _ = tx.send(read_in_own_table(&path));
    }))
    .ok()?;
    rx.recv().ok().flatten()
}

/// Gives the calling thread (one of corun's) a private copy of the fd
/// table and closes every fd of the copy but `keep`: from then on its
/// `open`s take no number of the program's. False if the kernel refused
/// (the thread then still shares the program's table).
pub fn take_private_fd_table(keep: Option<i32>) -> bool {
    // SAFETY: unshare with CLONE_FILES only gives this thread its own
    // copy of the fd table.
    if unsafe { syscall!(libc::SYS_unshare, libc::CLONE_FILES) } != 0 {
        return false;
    }
    let keep = keep.filter(|&k| k >= 0).map(|k| k as u32);
    let (below, above) = match keep {
        Some(k) => (k.checked_sub(1).map(|hi| (0, hi)), k.checked_add(1)),
        None => (Some((0, u32::MAX)), None),
    };
    let mut ok = true;
    for (lo, hi) in below.into_iter().chain(above.map(|lo| (lo, u32::MAX))) {
        // SAFETY: closes fds of this thread's private table only (none of
        // the program's numbers).
        ok &= unsafe { syscall!(libc::SYS_close_range, lo, hi, 0) } == 0;
    }
    ok
}

fn read_in_own_table(path: &CStr) -> Option<Vec<u8>> {
    if !take_private_fd_table(None) {
        return None;
    }
    let fd = super::procfs::open_read_only(path);
    if fd < 0 {
        return None;
    }
    let mut out = vec![0u8; 64 << 10];
    let mut len = 0;
    let done = loop {
        if len == out.len() {
            out.resize(out.len() * 2, 0);
        }
        // SAFETY: a raw read into the live tail of `out`.
        let n = unsafe { syscall!(libc::SYS_read, fd, out[len..].as_mut_ptr(), out.len() - len) };
        match n {
            0 => break true,
            n if n > 0 => len += n as usize,
            _ if super::errno() == libc::EINTR => {}
            _ => break false,
        }
    };
    // SAFETY: raw close of the fd opened above, in the private table.
    unsafe { syscall!(libc::SYS_close, fd) };
    out.truncate(len);
    done.then_some(out)
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    #[test]
    fn reads_in_a_private_empty_fd_table() {
        let spawn = crate::sys::spawn_native_thread;
        let text = super::read_file(c"/proc/self/status", spawn).expect("read");
        assert!(String::from_utf8(text).unwrap().starts_with("Name:"));
        assert!(super::read_file(c"/nonexistent/x", spawn).is_none());
        // An fd of the process, readable through its /proc link here, is
        // not in the reader's table.
        let path = std::env::temp_dir().join(format!("corun-pr-{}", std::process::id()));
        std::fs::write(&path, b"kept").unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let link = format!("/proc/thread-self/fd/{}", f.as_raw_fd());
        assert_eq!(std::fs::read(&link).unwrap(), b"kept");
        let c = std::ffi::CString::new(link).unwrap();
        assert!(
            super::read_file(&c, spawn).is_none(),
            "the reader saw the process's fd"
        );
        std::fs::remove_file(&path).unwrap();
    }
}
