//! The watchdog: notices a worker that does not come back to its scheduler.
//!
//! A worker is stalled when two samples see the same task running with the
//! same switch count: it has not been back to its scheduler in between.
//!
//! Cooperative scheduling has one failure mode threads do not: a coroutine
//! that computes for a long time, or blocks in something corun cannot see
//! (an unhooked syscall, stdio on a socket, a disk read made inline), holds
//! its whole worker, and every other coroutine there waits. The worker
//! publishes which task it runs and since when (`running_id`,
//! `running_since`, written around each resume); this thread samples them
//! every quarter of `CORUN_STALL_MS` and, when one task has held a worker
//! longer than that, prints once per stall:
//!
//! ```text
//! corun: worker 1 stalled for 512 ms in coroutine 7 (started at spin_forever); other coroutines there wait
//! ```
//!
//! It also hands the stalled worker's never-run tasks to the least loaded
//! other worker (moving a task that has no frames is safe, docs/ARCHITECTURE.md §5.2),
//! so new connections are not stuck behind it. Tasks that have run stay:
//! they are pinned to their thread for life.
//!
//! The thread starts with the first spawned coroutine (a program that never
//! spawns pays nothing) and never touches worker-local state. While the
//! process has one live coroutine, it blocks in the program's own calls
//! (`sched::parking`) with nobody waiting behind it: no report then.

use std::sync::atomic::{AtomicBool, Ordering};

use super::worker::{Runtime, Worker};
use crate::sys::{now_ns, raw_stderr};

static STARTED: AtomicBool = AtomicBool::new(false);

/// Starts the watchdog thread once, unless CORUN_STALL_MS=0.
pub fn ensure_started(rt: &'static Runtime) {
    if rt.config.stall_ms == 0 || STARTED.load(Ordering::Relaxed) {
        return;
    }
    if STARTED.swap(true, Ordering::AcqRel) {
        return;
    }
    let started = super::confined::spawn_helper(Box::new(move || {
        crate::sys::block_all_signals();
        run(rt);
    }));
    if started.is_err() {
        STARTED.store(false, Ordering::Release);
    }
}

/// The word the watchdog sleeps on between samples.
static WAKE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Cuts the watchdog's sleep short (it then looks whether the process is
/// confined: `confined.rs`).
pub fn wake() {
    WAKE.store(1, Ordering::SeqCst);
    // SAFETY: FUTEX_WAKE on a word of ours.
    unsafe {
        crate::sys::real::syscall!(
            libc::SYS_futex,
            WAKE.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX
        )
    };
}

/// In a forked child the watchdog thread does not exist: let the next spawn
/// start one.
pub fn reset_after_fork() {
    if STARTED.load(Ordering::Relaxed) {
        STARTED.store(false, Ordering::Relaxed);
    }
}

/// Where the function at `addr` is: its name if the dynamic symbol table
/// has it, else `object+offset` (for `addr2line -e object offset`).
fn describe(addr: usize) -> String {
    // SAFETY: a zeroed Dl_info is a valid out-buffer; dladdr only reads
    // the loader's tables.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    if unsafe { libc::dladdr(addr as *const libc::c_void, &mut info) } == 0 {
        return format!("{addr:#x}");
    }
    let cstr = |p: *const libc::c_char| {
        // SAFETY: dladdr's strings are NUL-terminated and owned by the loader.
        (!p.is_null()).then(|| {
            unsafe { std::ffi::CStr::from_ptr(p) }
                .to_string_lossy()
                .into_owned()
        })
    };
    if let Some(name) = cstr(info.dli_sname) {
        return name;
    }
    let object = cstr(info.dli_fname).unwrap_or_default();
    format!("{object}+{:#x}", addr - info.dli_fbase as usize)
}

fn run(rt: &'static Runtime) {
    let stall_ns = rt.config.stall_ms * 1_000_000;
    let period = (stall_ns / 4).clamp(5_000_000, 250_000_000);
    // Per worker: the (task, switch count) last seen, and since when.
    let mut seen: Vec<(u64, u64, u64)> = vec![(0, 0, 0); rt.workers.len()];
    let mut reported: Vec<(u64, u64)> = vec![(0, 0); rt.workers.len()];
    loop {
        if super::confined::is() {
            // No thread of corun's outlives a confined program's own
            // (`confined.rs`); no coroutine stalls there any more.
            return;
        }
        let ts = crate::sys::ns_timespec(period);
        // A sleep `wake` can cut short: FUTEX_WAIT on a word that is 0
        // until then (set before the wake, so a wake cannot be missed).
        // SAFETY: a private futex word of ours and a valid relative timeout.
        unsafe {
            crate::sys::real::syscall!(
                libc::SYS_futex,
                WAKE.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                0,
                &ts as *const libc::timespec
            )
        };
        let now = now_ns();
        for (i, w) in rt.workers.iter().enumerate() {
            let id = w.running_id.load(Ordering::Relaxed);
            let sw = w.switches.load(Ordering::Relaxed);
            if id == 0 || (seen[i].0, seen[i].1) != (id, sw) {
                // Moving (or idle): a stall, if any, starts now at the latest.
                let since = w.running_since.load(Ordering::Relaxed).max(now - period);
                seen[i] = (id, sw, since.min(now));
                continue;
            }
            let held = now.saturating_sub(seen[i].2);
            // The process's only coroutine may block its worker: it makes
            // its calls as natively (`sched::parking`) and nothing waits.
            if held < stall_ns || super::alone() {
                continue;
            }
            if reported[i] != (id, sw) {
                reported[i] = (id, sw);
                report(w, id, held);
            }
            hand_off(rt, w);
        }
    }
}

fn report(w: &Worker, id: u64, held_ns: u64) {
    let addr = w.running_start_addr.load(Ordering::Relaxed);
    let func = if addr == 0 {
        "main".to_string()
    } else {
        describe(addr)
    };
    raw_stderr(
        format!(
            "corun: worker {} stalled for {} ms in coroutine {} (started at {}); other coroutines there wait\n",
            w.index,
            held_ns / 1_000_000,
            id,
            func
        )
        .as_bytes(),
    );
}

/// Moves the never-run tasks of a stalled worker to the others.
fn hand_off(rt: &'static Runtime, stalled: &'static Worker) {
    let others: Vec<&'static Worker> = rt
        .workers
        .iter()
        .copied()
        .filter(|w| w.index != stalled.index)
        .collect();
    if others.is_empty() {
        return;
    }
    while let Some(t) = stalled.take_never_run() {
        let target = others
            .iter()
            .min_by_key(|w| w.load.load(Ordering::Relaxed))
            .expect("not empty");
        if !target.started.load(Ordering::Acquire) && super::worker::ensure_started(target).is_err()
        {
            stalled.place_remote(t);
            return;
        }
        target.place_remote(t);
    }
}
