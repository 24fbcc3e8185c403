//! `__libc_start_main`: the runtime starts and `main` becomes a coroutine.
//!
//! The dynamic linker resolves the program's call to `__libc_start_main` to
//! this function (libcorun.so is preloaded). It hands glibc our own
//! `corun_main` in place of the program's `main`; glibc runs the program's
//! constructors as usual, then calls `corun_main`, which reads the
//! configuration, starts the workers, spawns the real `main` as the first
//! task of worker 0 (this thread) and drives worker 0 until that task ends.
//! When `main` returns, its coroutine calls `exit` with the value, as
//! glibc's start code does on the main thread: the atexit handlers and
//! destructors run in a coroutine, so one that wakes and joins a thread
//! (libuv's thread pool in Node.js, C++ static destructors) parks while
//! that thread runs, on worker 0 too. Run by glibc after `corun_main`
//! returned, they ran on worker 0's kernel thread with no coroutine, and a
//! thread whose home is worker 0 never ran again. The process ends as it
//! would natively, with other coroutines still running, as threads would
//! be.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::config::Config;
use crate::sched::{self, Entry};
use crate::sys::{raw_stderr, real};

type MainFn = extern "C" fn(c_int, *mut *mut c_char, *mut *mut c_char) -> c_int;

static REAL_MAIN: AtomicUsize = AtomicUsize::new(0);
static MAIN_TASK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The id of `main`'s coroutine (0 before it exists).
pub fn main_task_id() -> u64 {
    MAIN_TASK.load(Ordering::Relaxed)
}

/// Stack for `main`: a program that ran with an 8 MiB main stack must not
/// overflow under corun; untouched pages cost only address space.
fn main_stack_size(cfg: &Config) -> usize {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut rl) };
    let native = if rl.rlim_cur == libc::RLIM_INFINITY || rl.rlim_cur == 0 {
        8 << 20
    } else {
        (rl.rlim_cur as usize).min(1 << 30)
    };
    native.max(cfg.stack_size)
}

/// Whether the parent process has corun loaded (so it has already said what
/// is wrong with the environment it passed on).
fn parent_runs_corun() -> bool {
    // SAFETY: getppid has no preconditions.
    let ppid = unsafe { libc::getppid() };
    std::fs::read_to_string(format!("/proc/{ppid}/maps"))
        .map(|m| m.contains("libcorun"))
        .unwrap_or(false)
}

extern "C" {
    static environ: *const *const c_char;
}

/// The names of the environment's `CORUN_*` variables. Read from
/// `environ` in place: `std::env::vars_os` copied every variable, name and
/// value, to look at the names (78 allocations, 31,000 instructions of a
/// process's start with a desktop's environment, under valgrind).
fn corun_names() -> Vec<std::ffi::OsString> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    // SAFETY: glibc's environment array, NULL-terminated, read before
    // `main` runs (no other thread of the program changes it yet).
    let mut p = unsafe { environ };
    if p.is_null() {
        return out;
    }
    loop {
        // SAFETY: `p` points into the array, at most at its NULL end.
        let e = unsafe { *p };
        if e.is_null() {
            return out;
        }
        // SAFETY: each entry is a NUL-terminated string.
        let s = unsafe { std::ffi::CStr::from_ptr(e) }.to_bytes();
        if s.starts_with(b"CORUN_") {
            let name = s.split(|&b| b == b'=').next().unwrap_or(s);
            out.push(std::ffi::OsStr::from_bytes(name).to_os_string());
        }
        // SAFETY: not past the NULL end (checked above).
        p = unsafe { p.add(1) };
    }
}

extern "C" fn corun_main(argc: c_int, argv: *mut *mut c_char, envp: *mut *mut c_char) -> c_int {
    let main: MainFn = {
        let p = REAL_MAIN.load(Ordering::Acquire);
        // SAFETY: stored from the program's main pointer before glibc could
        // call us.
        unsafe { std::mem::transmute::<usize, MainFn>(p) }
    };
    #[cfg(target_arch = "x86_64")]
    super::syscall::init();
    let cfg = match Config::from_env() {
        Ok(c) => c,
        Err(msg) => {
            raw_stderr(format!("corun: {msg}\n").as_bytes());
            // SAFETY: ending the process before main, as promised.
            unsafe { libc::_exit(2) }
        }
    };
    let unknown = crate::config::unknown_names(corun_names().into_iter());
    // Said once per process tree: a child that inherited the environment
    // from a parent running under corun (make's compilers, a shell's
    // commands) would repeat the parent's warning in every process.
    if !unknown.is_empty() && !parent_runs_corun() {
        for w in unknown {
            raw_stderr(format!("corun: {w}\n").as_bytes());
        }
    }
    let stack = main_stack_size(&cfg);
    let dump_signal = cfg.dump_signal;
    super::cancel::init();
    // Preemption's signal is set up before any worker computes its mask.
    let slice_ms = if dump_signal == sched::preempt::SIGNAL {
        raw_stderr(
            b"corun: CORUN_DUMP_SIGNAL is SIGURG, the signal preemption uses: preemption off\n",
        );
        0
    } else {
        cfg.preempt_ms
    };
    sched::preempt::configure(slice_ms);
    super::sigpreempt::install();
    if let Err(e) = sched::start(cfg) {
        raw_stderr(format!("corun: cannot start the runtime: {e}\n").as_bytes());
        // SAFETY: as above.
        unsafe { libc::_exit(2) }
    }
    sched::watchdog::set_foreign_code(super::pthread::foreign::is_foreign_code);
    crate::hooks::sigdeliver::install();
    crate::hooks::pthread_sync::warm_up();
    if dump_signal != 0 {
        if let Err(e) = sched::dump::install(dump_signal, super::pthread::name_of) {
            raw_stderr(format!("corun: CORUN_DUMP_SIGNAL: cannot set up dumps: {e}\n").as_bytes());
        }
    }
    let (a, v, en) = (argc, argv as usize, envp as usize);
    let task = sched::spawn_main(
        Entry::Rust(Box::new(move || {
            let r = main(a, v as *mut *mut c_char, en as *mut *mut c_char);
            // SAFETY: what glibc's start code does with main's value; the
            // handlers run in this coroutine and may park.
            unsafe { libc::exit(r) }
        })),
        stack,
    );
    let task = match task {
        Ok(t) => t,
        Err(e) => {
            raw_stderr(format!("corun: cannot create the main coroutine (errno {e})\n").as_bytes());
            // SAFETY: as above.
            unsafe { libc::_exit(2) }
        }
    };
    MAIN_TASK.store(task.id, Ordering::Relaxed);
    sched::run_until_done(&task);
    let r = task.join.lock().result;
    r as isize as c_int
}

#[no_mangle]
pub unsafe extern "C" fn __libc_start_main(
    main: MainFn,
    argc: c_int,
    argv: *mut *mut c_char,
    init: *mut c_void,
    fini: *mut c_void,
    rtld_fini: *mut c_void,
    stack_end: *mut c_void,
) -> c_int {
    REAL_MAIN.store(main as usize, Ordering::Release);
    // SAFETY: forwarding glibc's own arguments, with our main in place of
    // the program's.
    unsafe { real::__libc_start_main(corun_main, argc, argv, init, fini, rtld_fini, stack_end) }
}
