//! What the kernel's /proc says about the process: whether a worker's
//! thread runs or sleeps in a system call (`/proc/self/task/TID/stat`),
//! which call it sleeps in (`.../syscall`), and the process's mappings
//! (`/proc/self/maps`). The preemption monitor and the watchdog ask, in
//! normal context on their own threads, never a signal handler.
//!
//! They ask every few milliseconds while the program runs, so the files
//! are kept open (`sys::procfs`: an `open` there would take the lowest
//! free fd for a moment, the one a program that just closed its fds
//! expects from its next `pipe`). Each file is opened where no thread of
//! the program can be making fds: the maps and the running workers'
//! files at the first spawn (the program has one thread until it returns:
//! in a forked child, the child's first spawn, its files describing the
//! parent until then), a worker's own when its thread starts, inside the
//! spawn that starts it (`worker_started`). A file not open yet answers
//! "unknown", and the asker does nothing it would have done on a yes.

use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};

use super::worker::Worker;
use crate::config::MAX_WORKERS;
use crate::sys::procfs::ProcFile;

static STAT: [ProcFile; MAX_WORKERS] = [const { ProcFile::new() }; MAX_WORKERS];
static SYSCALL: [ProcFile; MAX_WORKERS] = [const { ProcFile::new() }; MAX_WORKERS];
static MAPS: ProcFile = ProcFile::new();

/// The first spawn (of this process: a forked child starts over) opened
/// the files.
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
static OPENED: AtomicBool = AtomicBool::new(false);

/// Whether anything reads the files: the monitor (preemption on) or the
/// watchdog (CORUN_STALL_MS not 0).
fn wanted(rt: &super::runtime::Runtime) -> bool {
    super::preempt::enabled() || rt.config.stall_ms != 0
}

/// At every spawn; the first opens the maps and the files of the workers
/// whose threads run (worker 0, or a forked child's one worker).
pub fn at_spawn(rt: &'static super::runtime::Runtime) {
    if OPENED.load(Ordering::Relaxed) || OPENED.swap(true, Ordering::AcqRel) || !wanted(rt) {
        return;
    }
    if super::preempt::enabled() {
        keep(MAPS.open(c"/proc/self/maps"));
    }
    for w in &rt.workers {
        if !w.dead.load(Ordering::Relaxed) && w.tid.load(Ordering::Acquire) > 0 {
            open_for(w);
        }
    }
}

/// The thread of worker `w` was just started, by a spawn (or by the
/// watchdog's hand-off) that has not returned: waits until it has its tid,
/// then opens its files.
pub fn worker_started(w: &'static Worker) {
    let Some(rt) = super::runtime::runtime() else {
        return;
    };
    if !wanted(rt) {
        return;
    }
    // The thread sets its tid first thing (`Worker::attach`), needing no
    // lock; the wait is bounded all the same (a thread that never came:
    // its files stay unopened, and the monitor never preempts there).
    let until = crate::sys::now_ns() + 2_000_000_000;
    while w.tid.load(Ordering::Acquire) <= 0 {
        if crate::sys::now_ns() > until {
            return;
        }
        // SAFETY: sched_yield takes no arguments.
        unsafe { crate::sys::real::syscall!(libc::SYS_sched_yield) };
    }
    open_for(w);
}

fn open_for(w: &Worker) {
    let tid = w.tid.load(Ordering::Acquire);
    for (files, name) in [(&STAT, "stat"), (&SYSCALL, "syscall")] {
        if let Ok(path) = CString::new(format!("/proc/self/task/{tid}/{name}")) {
            keep(files[w.index].open(&path));
        }
    }
}

/// A kept file is corun's: the program cannot close it nor see it listed.
fn keep(fd: Option<i32>) {
    if let Some(fd) = fd {
        super::worker::mark_runtime_fds(&[fd]);
    }
}

/// In a forked child: the kept files describe the parent until the child's
/// first spawn reopens them.
pub fn after_fork_child() {
    crate::sys::ForkReset::reset_to(&OPENED, false);
}

/// What a worker's thread is doing, by its state in /proc.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ThreadState {
    /// Running or waiting for a CPU (R).
    Runs,
    /// Asleep in the kernel (S or D).
    Sleeps,
    /// Anything else, or no answer (file not open, thread gone).
    Unknown,
}

/// The state of worker `w`'s thread.
pub fn thread_state(w: &Worker) -> ThreadState {
    let mut buf = [0u8; 512];
    match STAT[w.index].read(&mut buf) {
        Some(stat) => state_of(stat),
        None => ThreadState::Unknown,
    }
}

/// "tid (comm) S ...": the state follows the last ')' (comm may hold
/// spaces and parentheses).
fn state_of(stat: &[u8]) -> ThreadState {
    let Some(close) = stat.iter().rposition(|&c| c == b')') else {
        return ThreadState::Unknown;
    };
    match stat.get(close + 2) {
        Some(b'R') => ThreadState::Runs,
        Some(b'S' | b'D') => ThreadState::Sleeps,
        _ => ThreadState::Unknown,
    }
}

/// The pc of the system call worker `w`'s thread sleeps in; None while it
/// runs (the kernel then writes "running") or when there is no answer.
pub fn syscall_pc(w: &Worker) -> Option<usize> {
    let mut buf = [0u8; 256];
    pc_of(SYSCALL[w.index].read(&mut buf)?)
}

/// "nr arg1 .. arg6 sp pc" while in a system call.
fn pc_of(line: &[u8]) -> Option<usize> {
    let line = std::str::from_utf8(line).ok()?;
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.len() != 9 {
        return None;
    }
    usize::from_str_radix(fields[8].trim_start_matches("0x"), 16).ok()
}

/// The text of /proc/self/maps (None before the first spawn or with
/// preemption off).
pub fn maps() -> Option<Vec<u8>> {
    MAPS.read_all()
}

#[cfg(test)]
mod tests {
    use super::{pc_of, state_of, ThreadState};

    #[test]
    fn reads_the_state_after_the_last_paren() {
        assert_eq!(state_of(b"12 (a) b) R 1 2"), ThreadState::Runs);
        assert_eq!(state_of(b"12 (x y) S 1 2"), ThreadState::Sleeps);
        assert_eq!(state_of(b"12 (x) D 1"), ThreadState::Sleeps);
        assert_eq!(state_of(b"12 (x) Z 1"), ThreadState::Unknown);
        assert_eq!(state_of(b"12 (x"), ThreadState::Unknown);
    }

    #[test]
    fn reads_the_pc_of_a_sleeping_call() {
        assert_eq!(
            pc_of(b"232 0x3 0x7ffd 0x80 0xffffffff 0x0 0x0 0x7ffc10 0x7f12ab\n"),
            Some(0x7f12ab)
        );
        assert_eq!(pc_of(b"running\n"), None);
    }
}
