//! Where a coroutine may be preempted: the code ranges of the libraries
//! whose locks a preempted coroutine must never hold, and the test of an
//! interrupted pc and stack against them.
//!
//! # Why a pc is not enough
//!
//! A coroutine preempted while it holds a lock is harmless when the others
//! wait for that lock the corun way (a hooked `pthread_mutex_lock`, a
//! `futex` made through `syscall()`): they park, and the holder runs again
//! at its turn. It is a deadlock when a waiter blocks its worker's thread
//! in the kernel: the holder is pinned to that same worker and never runs
//! again. glibc takes its internal locks so (inline `futex` system calls:
//! malloc's arenas, stdio's FILE locks, the dynamic loader's lock, the
//! `atexit` list), libgcc's unwinder and libstdc++ take theirs through
//! glibc's internal paths too, and libgomp waits with inline futexes. So a
//! coroutine is preempted only where it holds none of them:
//!
//! - its pc is not in those libraries (nor in ld.so, nor in corun, which
//!   has its own locks and hooks that are half way through a call);
//! - no frame of its stack returns into them: the program's code may run
//!   called back from inside them with their lock held (a `qsort`
//!   comparator is harmless, but a constructor run by `dlopen`, a
//!   `dl_iterate_phdr` callback, a `fopencookie` function or a printf
//!   extension run under the loader's or a FILE's lock). The stack is
//!   scanned word by word from the interrupted sp to its top for values
//!   that point just after a call instruction into those libraries: a
//!   stale word left in a frame makes the test refuse where it could have
//!   accepted (the next tick tries again), never the reverse.
//!
//! corun's own frames are not looked for on the stack: corun calls the
//! program's code (start routines, handlers, destructors) holding none of
//! its locks, and its own frames sit at the base of every coroutine stack.
//! A lock the program takes and keeps across its own code with a glibc
//! call is the other case: `flockfile` is counted (`hooks/filelock.rs`)
//! and the handler refuses while the count is not zero.
//!
//! # Tables
//!
//! The ranges are found with `dl_iterate_phdr` by the monitor thread
//! (never in the handler: it takes the loader's lock), again whenever the
//! loader's add/remove counts moved, and published under a sequence
//! number: the handler reads them without a lock and refuses when a
//! rewrite was under way.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Ranges kept at most (each library has one or two executable segments).
const MAX_RANGES: usize = 48;
/// Stack words scanned at most (512 KiB): a deeper stack is refused.
const MAX_SCAN_WORDS: usize = 64 * 1024;

/// Libraries whose code and callers-back are not safe points (by the
/// start of their file name).
const RUNTIME_LIBS: [&[u8]; 10] = [
    b"libc.so",
    b"ld-linux",
    b"ld64.so",
    b"libpthread.so",
    b"libdl.so",
    b"librt.so",
    b"libgcc_s.so",
    b"libstdc++.so",
    b"libgomp.so",
    b"libcorun",
];

/// Odd while the table is rewritten.
static SEQ: AtomicU64 = AtomicU64::new(0);
static COUNT: AtomicUsize = AtomicUsize::new(0);
static LO: [AtomicUsize; MAX_RANGES] = [const { AtomicUsize::new(0) }; MAX_RANGES];
static HI: [AtomicUsize; MAX_RANGES] = [const { AtomicUsize::new(0) }; MAX_RANGES];
/// corun's own executable range (pc only).
static OWN_LO: AtomicUsize = AtomicUsize::new(0);
static OWN_HI: AtomicUsize = AtomicUsize::new(0);
/// The loader's adds and removes when the table was made (+1; 0: never).
static LOADS: AtomicU64 = AtomicU64::new(0);

struct Found {
    ranges: Vec<(usize, usize)>,
    own: (usize, usize),
    loads: u64,
}

fn basename(path: &[u8]) -> &[u8] {
    match path.iter().rposition(|&c| c == b'/') {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

unsafe extern "C" fn each(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut libc::c_void,
) -> i32 {
    // SAFETY: dl_iterate_phdr passes a valid info for the duration of the
    // call, and `data` is the `Found` that `refresh` lent.
    let (info, found) = unsafe { (&*info, &mut *(data as *mut Found)) };
    found.loads = info.dlpi_adds.wrapping_add(info.dlpi_subs);
    let name = if info.dlpi_name.is_null() {
        &b""[..]
    } else {
        // SAFETY: a NUL-terminated name owned by the loader.
        unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) }.to_bytes()
    };
    let base = basename(name);
    let own_fn = yield_marker as *const () as usize;
    let runtime = RUNTIME_LIBS.iter().any(|p| base.starts_with(p));
    for i in 0..info.dlpi_phnum as usize {
        // SAFETY: dlpi_phdr holds dlpi_phnum headers.
        let ph = unsafe { &*info.dlpi_phdr.add(i) };
        if ph.p_type != libc::PT_LOAD || ph.p_flags & libc::PF_X == 0 {
            continue;
        }
        let lo = info.dlpi_addr as usize + ph.p_vaddr as usize;
        let hi = lo + ph.p_memsz as usize;
        if (lo..hi).contains(&own_fn) {
            found.own = (lo, hi);
            found.ranges.push((lo, hi));
        } else if runtime {
            found.ranges.push((lo, hi));
        }
    }
    0
}

/// A function of corun's own, to find corun's segment.
#[inline(never)]
fn yield_marker() {}

/// Re-reads the ranges if the loader's set of objects changed. Normal
/// context only (the monitor thread).
pub fn refresh() {
    let mut found = Found {
        ranges: Vec::with_capacity(MAX_RANGES),
        own: (0, 0),
        loads: 0,
    };
    // SAFETY: a callback of the right type and a `Found` that outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut found as *mut Found as *mut libc::c_void) };
    let loads = found.loads.wrapping_add(1);
    if LOADS.load(Ordering::Relaxed) == loads {
        return;
    }
    SEQ.fetch_add(1, Ordering::SeqCst);
    let n = found.ranges.len().min(MAX_RANGES);
    for (i, (lo, hi)) in found.ranges.iter().take(n).enumerate() {
        LO[i].store(*lo, Ordering::Relaxed);
        HI[i].store(*hi, Ordering::Relaxed);
    }
    COUNT.store(n, Ordering::Relaxed);
    OWN_LO.store(found.own.0, Ordering::Relaxed);
    OWN_HI.store(found.own.1, Ordering::Relaxed);
    SEQ.fetch_add(1, Ordering::SeqCst);
    LOADS.store(loads, Ordering::Relaxed);
}

/// Whether `a` is in one of the runtime ranges (corun's included).
#[inline]
fn in_runtime(a: usize, n: usize) -> bool {
    (0..n).any(|i| a >= LO[i].load(Ordering::Relaxed) && a < HI[i].load(Ordering::Relaxed))
}

/// Whether the bytes before `ra` end with a call instruction (a return
/// address, not just a pointer into the code): `call rel32` (E8), or an
/// indirect `call` (FF /2) of 2, 3, 4, 6 or 7 bytes.
///
/// # Safety
/// `ra - 7 .. ra` lies in a mapped executable range.
unsafe fn after_call(ra: usize) -> bool {
    // SAFETY: per the contract.
    let b = |k: usize| unsafe { *((ra - k) as *const u8) };
    if b(5) == 0xe8 {
        return true;
    }
    [2usize, 3, 4, 6, 7]
        .iter()
        .any(|&k| b(k) == 0xff && (b(k - 1) >> 3) & 7 == 2)
}

/// How far into a thread's start routine a return address may lie and be
/// its call of the thread's body (see `is_safe_point`).
const START_ROUTINE_BYTES: usize = 512;

/// Whether a coroutine interrupted at `pc` with stack `sp .. top` may be
/// preempted there (see the top of this file). `start` is the thread's
/// start routine: when it lives in one of the libraries (a C++
/// `std::thread` starts in libstdc++'s `execute_native_thread_routine`,
/// which only calls the thread's callable and holds no lock), the return
/// address into its first `START_ROUTINE_BYTES` is not held against the
/// thread; without that, no `std::thread` was ever preempted.
/// Async-signal-safe: reads the published table and the stack only.
pub fn is_safe_point(pc: usize, sp: usize, top: usize, start: usize) -> bool {
    let seq = SEQ.load(Ordering::SeqCst);
    if seq & 1 == 1 || LOADS.load(Ordering::Relaxed) == 0 {
        return false;
    }
    let n = COUNT.load(Ordering::Relaxed);
    if in_runtime(pc, n) {
        return false;
    }
    let (own_lo, own_hi) = (
        OWN_LO.load(Ordering::Relaxed),
        OWN_HI.load(Ordering::Relaxed),
    );
    if sp & 7 != 0 || top <= sp || (top - sp) / 8 > MAX_SCAN_WORDS {
        return false;
    }
    let mut p = sp;
    while p < top {
        // SAFETY: `sp .. top` is the interrupted coroutine's live stack,
        // mapped and readable.
        let v = unsafe { *(p as *const usize) };
        p += 8;
        if v < 8
            || (v >= own_lo && v < own_hi)
            || (start != 0 && v > start && v - start < START_ROUTINE_BYTES)
            || !in_runtime(v, n)
        {
            continue;
        }
        let start_ok = (0..n)
            .any(|i| v - 7 >= LO[i].load(Ordering::Relaxed) && v <= HI[i].load(Ordering::Relaxed));
        // SAFETY: `v - 7 .. v` lies in an executable mapping (checked).
        if !start_ok || unsafe { after_call(v) } {
            return false;
        }
    }
    SEQ.load(Ordering::SeqCst) == seq
}
