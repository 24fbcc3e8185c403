//! `corun dump PID`: what every coroutine is doing, on request
//! (docs/ARCHITECTURE.md §11).
//!
//! With `CORUN_DUMP_SIGNAL` set, `install` puts a handler on that signal
//! and starts one native thread, the dump thread. The handler only writes
//! an eventfd (no lock, no allocation: it may interrupt anything, a
//! `malloc` included); the dump thread, blocked on the eventfd, then
//! writes the dump to `/tmp/corun-PID.dump`: created as
//! `/tmp/corun-PID.dump.tmp` with O_EXCL|O_NOFOLLOW and mode 0600 (only
//! the process's owner reads it; a planted file or link makes the dump
//! fail, not write elsewhere), then renamed, so a reader never sees half a
//! dump. `corun dump PID` sends the signal, waits for the file, prints and
//! removes it.
//!
//! The dump: for each worker its thread, the coroutine it runs, how many of
//! its coroutines are runnable and parked; for each live coroutine its id,
//! thread name (if the program gave one) and start (`startname.rs`), state,
//! home worker, and what it waits on and for how long (`waitdesc.rs`);
//! then the statistics (`stats.rs`). Counts come from the registry of live
//! tasks and from atomics each worker publishes: the dump thread never
//! touches a worker's own queues, so it is a snapshot, each line true when
//! read. Each parked coroutine's backtrace follows its line: walked from
//! the registers it saved when it suspended (`debugreg.rs`) with the
//! `.eh_frame` tables (`unwind.rs`: frame pointers cannot be relied on),
//! every read bounded to its own stack, symbolized by `symbols.rs`; the
//! runtime's frames are cut down to the hook the program called.
//!
//! In a forked child the handler stays but the dump thread does not exist,
//! and the eventfd is the parent's: the handler ignores a signal whose
//! process is not the one that installed it, and the child starts its own
//! eventfd and dump thread (`after_fork_child`: only with dumps asked for),
//! so a forked server's workers (uWSGI's, a preforking server's) answer
//! `corun dump` too.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicI32, Ordering::Relaxed};
use std::sync::OnceLock;

use super::runtime::runtime;
use super::symbols;
use super::task::{Task, DONE, NEW, NOTIFIED, PARKED, RUNNABLE, RUNNING};
use super::unwind::Objects;
use super::waitdesc::{coarse_now_ns, Cause};

/// The eventfd the handler writes, and the process that installed it.
static EVENTFD: AtomicI32 = AtomicI32::new(-1);
static OWNER: AtomicI32 = AtomicI32::new(0);
/// The dump signal (0: dumps not installed).
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// The thread name of a coroutine, from the hooks layer (`pthread` keeps
/// names); None when it has none of its own.
static NAME_OF: OnceLock<fn(u64) -> Option<String>> = OnceLock::new();

/// Where a dump of process `pid` is written.
pub fn path(pid: i32) -> String {
    format!("/tmp/corun-{pid}.dump")
}

/// Installs the handler of `sig` and starts the dump thread. `name_of`
/// names a coroutine's thread.
pub fn install(sig: i32, name_of: fn(u64) -> Option<String>) -> std::io::Result<()> {
    let _ = NAME_OF.set(name_of);
    start_thread(sig)?;
    SIGNAL.store(sig, Relaxed);
    // glibc installs its SIGSETXID handler at its first pthread_create.
    crate::ctx::setxid::wrap_glibc_handler();
    // SAFETY: a zeroed sigaction is valid; the handler has the plain
    // signature and only makes async-signal-safe calls.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        if crate::sys::real::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// In a forked child of a process with dumps: its own eventfd and dump
/// thread (the parent's thread did not survive the fork). The handler
/// stays as the program left it.
pub fn after_fork_child() {
    let sig = SIGNAL.load(Relaxed);
    if sig != 0 && start_thread(sig).is_err() {
        crate::sys::raw_stderr(b"corun: CORUN_DUMP_SIGNAL: no dumps in this forked child\n");
    }
}

/// Makes the eventfd and the dump thread of this process.
fn start_thread(sig: i32) -> std::io::Result<()> {
    // SAFETY: eventfd with valid flags.
    let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if efd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // High, as the workers' fds: left at the lowest free number (3) it was
    // the program's fd 3, which dup2 and close refuse to touch (a spawn
    // redirecting fd 3 failed with EBADF in Ruby's tests).
    let efd = crate::sys::move_fd_high(efd);
    if let Some(e) = super::fdtable::get(efd) {
        super::fdtable::mark_runtime(efd, e);
    }
    EVENTFD.store(efd, Relaxed);
    // SAFETY: getpid has no preconditions.
    OWNER.store(unsafe { libc::getpid() }, Relaxed);
    crate::sys::spawn_native_thread(Box::new(move || {
        crate::sys::block_all_signals();
        unblock(sig);
        // The dump file is opened in a fd table of this thread's own: in
        // the program's, its `open` took the lowest free number for a
        // moment, one the program's next `open` or `pipe` expects.
        crate::sys::private_read::take_private_fd_table(Some(efd));
        serve(efd);
    }))?;
    Ok(())
}

/// Lets `sig` reach the calling thread, so the kernel always has a thread
/// to deliver it to (coroutines may all block it).
fn unblock(sig: i32) {
    let bits: u64 = 1 << (sig - 1);
    // SAFETY: an 8-byte kernel sigset from a live local; this thread only.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_UNBLOCK,
            &bits as *const u64,
            std::ptr::null_mut::<u64>(),
            8usize,
        )
    };
}

extern "C" fn on_signal(_sig: i32) {
    let saved = crate::sys::errno();
    // SAFETY: getpid and write are async-signal-safe; the buffer is a
    // live local.
    unsafe {
        if libc::getpid() == OWNER.load(Relaxed) {
            let one: u64 = 1;
            crate::sys::real::write(EVENTFD.load(Relaxed), (&one as *const u64).cast(), 8);
        }
    }
    crate::sys::set_errno(saved);
}

fn serve(efd: i32) {
    loop {
        let mut n: u64 = 0;
        // SAFETY: reads 8 bytes into a live local (a native thread: the
        // real read blocks it).
        let r = unsafe { crate::sys::real::read(efd, (&mut n as *mut u64).cast(), 8) };
        if r != 8 {
            if crate::sys::errno() == libc::EINTR {
                continue;
            }
            return;
        }
        if let Err(e) = write_file(&render()) {
            crate::sys::raw_stderr(format!("corun: cannot write the dump: {e}\n").as_bytes());
        }
    }
}

/// Writes the dump under a temporary name, then renames it. Raw calls for
/// the file: the fd hooks would record this thread's private fd in corun's
/// table of the program's fds, under the number of one of them.
fn write_file(text: &str) -> std::io::Result<()> {
    use crate::sys::real::syscall;
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let path = path(pid);
    let tmp = format!("{path}.tmp");
    let _ = std::fs::remove_file(&tmp);
    let ctmp = std::ffi::CString::new(tmp.clone())?;
    // SAFETY: a raw openat of a NUL-terminated path.
    let fd = unsafe {
        syscall!(
            libc::SYS_openat,
            libc::AT_FDCWD,
            ctmp.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut rest = text.as_bytes();
    let mut result = Ok(());
    while !rest.is_empty() {
        // SAFETY: a raw write from a live slice.
        let n = unsafe { syscall!(libc::SYS_write, fd, rest.as_ptr(), rest.len()) };
        if n > 0 {
            rest = &rest[n as usize..];
        } else if n < 0 && crate::sys::errno() == libc::EINTR {
            continue;
        } else {
            result = Err(std::io::Error::last_os_error());
            break;
        }
    }
    // SAFETY: raw close of the fd opened above.
    unsafe { syscall!(libc::SYS_close, fd) };
    result?;
    std::fs::rename(&tmp, &path)
}

fn state_name(s: u64) -> &'static str {
    match s {
        NEW => "new (never ran)",
        RUNNABLE => "runnable",
        RUNNING => "running",
        PARKED => "parked",
        NOTIFIED => "woken",
        DONE => "done",
        _ => "?",
    }
}

/// What a wait is on, in words.
fn wait_text(cause: Cause, obj: u64) -> String {
    match cause {
        Cause::FdRead => format!("fd {obj} (read)"),
        Cause::FdWrite => format!("fd {obj} (write)"),
        Cause::Poll => format!("poll of fd {obj} and others"),
        Cause::Timer => {
            let now = crate::sys::now_ns();
            format!("timer, due in {} ms", obj.saturating_sub(now) / 1_000_000)
        }
        Cause::Join if obj == 0 => "join of every thread".to_string(),
        Cause::Join => format!("join of coroutine {obj}"),
        Cause::Mutex
        | Cause::Cond
        | Cause::RwLock
        | Cause::Sem
        | Cause::Barrier
        | Cause::Once
        | Cause::Futex => format!("{} {obj:#x}", cause.name()),
        Cause::Pool => "blocking-pool job".to_string(),
        c => c.name().to_string(),
    }
}

/// The frames of parked task `t`, one line each (`unwind.rs`): the
/// runtime's own frames are left out but the hook the program called.
/// Nothing if the task woke during the walk (its words may have changed
/// under it).
fn backtrace(out: &mut String, t: &Task, objs: &Objects) {
    let before = t.state_word();
    let Some(s) = t.debug.saved() else {
        return;
    };
    let pcs = super::unwind::walk(objs, s.pc, s.sp, s.fp, s.stack);
    if t.state_word() != before {
        out.push_str("    (woke during the walk: no backtrace)\n");
        return;
    }
    let corun = symbols::object_of(backtrace as fn(&mut String, &Task, &Objects) as usize);
    // The first pc is where the coroutine stopped; the others return
    // addresses, named by their call instruction (the byte before).
    let frames: Vec<(usize, Option<(String, usize)>)> = pcs
        .iter()
        .enumerate()
        .map(|(i, &pc)| {
            let at = if i == 0 { pc } else { pc - 1 };
            (at, symbols::object_of(at))
        })
        .collect();
    let ours = |f: &(usize, Option<(String, usize)>)| {
        f.1.as_ref().map(|o| &o.0) == corun.as_ref().map(|o| &o.0)
    };
    // From the hook the program called to the program's outermost frame
    // (the coroutine's start, in the runtime, is left out).
    let (first, last) = match (
        frames.iter().position(|f| !ours(f)),
        frames.iter().rposition(|f| !ours(f)),
    ) {
        (Some(a), Some(b)) => (a.saturating_sub(1), b),
        _ => (0, frames.len().saturating_sub(1)),
    };
    for (n, f @ (at, obj)) in frames.iter().take(last + 1).skip(first).enumerate() {
        let object = obj.as_ref().map_or("?", |o| symbols::short(&o.0));
        let mut name = symbols::describe(*at);
        if n == 0 && ours(f) {
            name = hook_name(name);
        }
        let _ = writeln!(out, "    #{n} {name} ({object})");
    }
}

/// The libc name of the hook the program called, for the runtime frame it
/// entered by: a hook whose common path is a tail jump to libc (`read`,
/// src/hooks/rw.rs) leaves only its out-of-line rest, `read_hooked`, on
/// the stack.
fn hook_name(name: String) -> String {
    match name.rsplit_once("::") {
        Some((path, f)) if path.starts_with("corun::hooks") => f
            .strip_suffix("_hooked")
            .map_or(name.clone(), str::to_owned),
        _ => name,
    }
}

/// The dump's text.
pub fn render() -> String {
    let mut out = String::new();
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let Some(rt) = runtime() else {
        return format!("corun dump of pid {pid}: the runtime is not started\n");
    };
    let mut tasks = super::sigdispatch::live_tasks();
    tasks.sort_by_key(|t| t.id);
    let now = coarse_now_ns();
    let _ = writeln!(
        out,
        "corun dump of pid {pid}: {} coroutines, {} workers, {} blocking-pool threads",
        tasks.len(),
        rt.workers.len(),
        super::blocking::threads()
    );
    for w in &rt.workers {
        let mine = || tasks.iter().filter(|t| t.home() == w.index);
        let runnable = mine()
            .filter(|t| matches!(t.state(), RUNNABLE | NEW | NOTIFIED))
            .count();
        let parked = mine().filter(|t| t.state() == PARKED).count();
        let running = w.running_id.load(Relaxed);
        let _ =
            writeln!(
            out,
            "worker {}: {}, tid {}, running {}, {runnable} runnable, {parked} parked, {} switches",
            w.index,
            if w.started.load(Relaxed) { "started" } else { "not started" },
            w.tid.load(Relaxed),
            if running == 0 {
                "nothing".to_string()
            } else {
                format!("coroutine {running}")
            },
            w.switches.load(Relaxed)
        );
    }
    let name_of = NAME_OF.get();
    let objs = Objects::load();
    for t in &tasks {
        let start = super::startname::start_name(t.start_addr, t.start_arg.load(Relaxed));
        let name = name_of.and_then(|f| f(t.id));
        let state = t.state();
        let mut line = format!("coroutine {}", t.id);
        match name {
            Some(n) => {
                let _ = write!(line, " \"{n}\" (started at {start})");
            }
            None => {
                let _ = write!(line, " (started at {start})");
            }
        }
        let home = t.home();
        if home != super::task::NO_HOME {
            let _ = write!(line, ", worker {home}");
        }
        let _ = write!(line, ": {}", state_name(state));
        let (cause, obj, since) = t.wait.get();
        if state == PARKED && cause != Cause::None {
            let ms = now.saturating_sub(since) / 1_000_000;
            let _ = write!(
                line,
                " on {} for {}.{:03} s",
                wait_text(cause, obj),
                ms / 1000,
                ms % 1000
            );
        }
        let _ = writeln!(out, "{line}");
        if state == PARKED {
            backtrace(&mut out, t, &objs);
        }
    }
    out.push_str("stats:\n");
    out.push_str(&super::stats::report());
    out
}
