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
//!   extension run under the loader's or a FILE's lock).
//!
//! # Finding the frames
//!
//! The frames are followed from the interrupted registers with the
//! objects' DWARF call frame information (`unwind::step`, the tables
//! compilers emit for every instruction on x86_64, which C++ exceptions
//! rely on): each return address read where the rules say is a real
//! frame's, and checked. Where the walk cannot go on (code with no unwind
//! table: JIT-compiled code, hand-written assembly; a rule not modelled; a
//! return address that does not follow a call instruction, so doubtful
//! rules; the base of the stack), the rest of the stack, from that frame's
//! sp to the top, is scanned word by word for values that point just
//! after a call instruction into those libraries. A word the scan finds
//! may be stale (left by a call that returned, in a frame's unused slots):
//! it makes the test refuse where it could have accepted (the next tick
//! tries again), never the reverse.
//!
//! Code with no unwind table that keeps frame pointers (a JIT's: V8's
//! frames all link rbp, its own stack walker follows them) is followed by
//! its rbp chain instead (`frame_pointer_step`): each such frame's words,
//! from its sp to its return address, are scanned as above, and the walk
//! goes on from the return address, with the CFI again once it returns
//! into an object with unwind tables after a call instruction. A chain
//! that leaves the stack or goes down ends it: the rest is scanned. So a
//! wrong rbp only makes the scan longer; no word is skipped, but those of
//! the C frames above the JIT ones, which the CFI follows exactly. Before,
//! the whole stack above a JIT frame was scanned: Node's worker threads,
//! computing in JavaScript (`while (true);`), were never preempted, for
//! stale glibc words in V8's C++ frames (test-worker-terminate-timers hung).
//!
//! Scanning the whole stack, as this did first, refused for good a thread
//! whose live frames hold such stale words: Ruby 3.1's interpreter loop
//! keeps words from earlier `malloc` calls in the frames of
//! `rb_vrescue2` and `rb_rescue2` just above its sp, and its thread start
//! reserves a 1 MiB frame (deeper than the scan's bound), so a thread
//! that computes was never preempted, and the main thread waiting for the
//! interpreter lock never ran on its worker again.
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
//! The objects are found with `dl_iterate_phdr` by the monitor thread
//! (never in the handler: it takes the loader's lock), again whenever the
//! loader's add/remove counts moved, just before each request, and
//! published for the handler (`preempt_table.rs`). The handler reads only
//! the stack between the interrupted sp and its top, and the bytes of
//! objects the table lists. An object unloaded, and another loaded at its
//! address and called, between the monitor's look and the handler is the
//! one case not guarded against (as in `unwind.rs`).

use std::sync::atomic::{AtomicU64, Ordering};

use super::cfi::{find_fde, NREGS};
use super::preempt_refusals::Refusal;
use super::preempt_table::{self, Found, Kind, Reader};
use super::unwind::{self, Object, Regs, MAX_SEGMENTS};

/// Stack words scanned at most (512 KiB), past the frames the walk
/// followed: a deeper rest is refused.
const MAX_SCAN_WORDS: usize = 64 * 1024;
/// Frames followed at most; the rest of a deeper stack is scanned.
const MAX_WALK_FRAMES: usize = 256;
/// DWARF register numbers (x86_64 psABI): rbp, rsp, return address.
const RBP: usize = 6;
const RSP: usize = 7;
const RA: usize = 16;

/// Libraries whose code and callers-back are not safe points (by the
/// start of their file name).
const RUNTIME_LIBS: [&[u8]; 9] = [
    b"libc.so",
    b"ld-linux",
    b"ld64.so",
    b"libpthread.so",
    b"libdl.so",
    b"librt.so",
    b"libgcc_s.so",
    b"libstdc++.so",
    b"libgomp.so",
];

/// The loader's adds and removes when the table was made (+1; 0: never).
static LOADS: AtomicU64 = AtomicU64::new(0);

struct Listing {
    objects: Vec<Found>,
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
    // call, and `data` is the `Listing` that `refresh` lent.
    let (info, found) = unsafe { (&*info, &mut *(data as *mut Listing)) };
    found.loads = info.dlpi_adds.wrapping_add(info.dlpi_subs);
    if found.objects.len() >= preempt_table::MAX_OBJECTS {
        return 0;
    }
    let name = if info.dlpi_name.is_null() {
        &b""[..]
    } else {
        // SAFETY: a NUL-terminated name owned by the loader.
        unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) }.to_bytes()
    };
    let base = basename(name);
    let own_fn = yield_marker as *const () as usize;
    let mut object = Object {
        segments: [(0, 0, false); MAX_SEGMENTS],
        nseg: 0,
        hdr: 0,
    };
    for i in 0..info.dlpi_phnum as usize {
        // SAFETY: dlpi_phdr holds dlpi_phnum headers.
        let ph = unsafe { &*info.dlpi_phdr.add(i) };
        let lo = (info.dlpi_addr as usize).wrapping_add(ph.p_vaddr as usize);
        match ph.p_type {
            libc::PT_LOAD if object.nseg < MAX_SEGMENTS => {
                let x = ph.p_flags & libc::PF_X != 0;
                object.segments[object.nseg] = (lo, lo + ph.p_memsz as usize, x);
                object.nseg += 1;
            }
            libc::PT_GNU_EH_FRAME => object.hdr = lo,
            _ => {}
        }
    }
    let kind = if object.holds_code(own_fn) {
        Kind::Own
    } else if RUNTIME_LIBS.iter().any(|p| base.starts_with(p)) {
        Kind::Runtime
    } else {
        Kind::Other
    };
    found.objects.push(Found { object, kind });
    0
}

/// A function of corun's own, to find corun's object.
#[inline(never)]
fn yield_marker() {}

/// Re-reads the objects if the loader's set of objects changed. Normal
/// context only (the monitor thread).
pub fn refresh() {
    let mut found = Listing {
        objects: Vec::with_capacity(64),
        loads: 0,
    };
    // SAFETY: a callback of the right type and a `Listing` that outlives
    // the call.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut found as *mut Listing as *mut libc::c_void) };
    let loads = found.loads.wrapping_add(1);
    if LOADS.load(Ordering::Relaxed) == loads {
        return;
    }
    preempt_table::publish(&found.objects);
    LOADS.store(loads, Ordering::Relaxed);
}

/// In a forked child (its only thread runs no handler).
pub fn reset_after_fork() {
    preempt_table::reset_after_fork();
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

/// What a value found on the stack is, as a return address.
enum Return {
    /// Not one: no code there, or no call instruction before it.
    No,
    /// Into a runtime library: a frame that may hold its lock.
    Runtime,
    /// Into other code (corun's included).
    Other,
}

/// How far into a thread's start routine a return address may lie and be
/// its call of the thread's body (see `is_safe_point`).
const START_ROUTINE_BYTES: usize = 512;

fn classify(t: &Reader, v: usize, start: usize) -> Return {
    if v < 8 {
        return Return::No;
    }
    let Some(((lo, hi), kind, _)) = t.code_at(v - 1) else {
        return Return::No;
    };
    // SAFETY: `v - 7 .. v` lies in an executable segment of a loaded
    // object (checked just before).
    if v - 7 < lo || v > hi || !unsafe { after_call(v) } {
        return Return::No;
    }
    match kind {
        Kind::Runtime if !(start != 0 && v > start && v - start < START_ROUTINE_BYTES) => {
            Return::Runtime
        }
        _ => Return::Other,
    }
}

/// Where the frame walk ended.
enum Walk {
    /// At a frame returning into a runtime library.
    Held,
    /// A word of a frame followed by its frame pointer points into one.
    Word,
    /// Unable to go on from the frame whose sp this is: the rest of the
    /// stack is to be scanned.
    From(usize),
}

/// One frame up by the frame pointer, for code with no unwind table.
enum FpStep {
    /// A word of the frame returns into a runtime library.
    Held,
    /// The caller's sp, rbp and pc (its other registers are not known).
    Next { sp: usize, fp: usize, ra: usize },
    /// No usable frame pointer.
    Stuck,
}

/// The frame at `sp` whose code has no unwind table, if it keeps a frame
/// pointer: `rbp` in `[sp, top)` holds the caller's rbp, then the return
/// address. Every word of `[sp, rbp + 16)` is checked as the scan checks
/// (a frame that kept no frame pointer, or its callee's return address
/// still at `sp`, is covered so).
fn frame_pointer_step(
    t: &Reader,
    regs: &Regs,
    sp: usize,
    top: usize,
    start: usize,
    read: impl Fn(usize) -> Option<usize>,
) -> FpStep {
    let Some(fp) = regs[RBP] else {
        return FpStep::Stuck;
    };
    if !fp.is_multiple_of(8) || fp < sp || fp >= top - 16 || (fp + 16 - sp) / 8 > MAX_SCAN_WORDS {
        return FpStep::Stuck;
    }
    let mut p = sp;
    while p < fp + 16 {
        let Some(v) = read(p) else {
            return FpStep::Stuck;
        };
        if let Return::Runtime = classify(t, v, start) {
            return FpStep::Held;
        }
        p += 8;
    }
    let (Some(saved), Some(ra)) = (read(fp), read(fp + 8)) else {
        return FpStep::Stuck;
    };
    FpStep::Next {
        sp: fp + 16,
        fp: saved,
        ra,
    }
}

/// Follows the frames from `regs` (the interrupted ones, by DWARF number)
/// up the stack `[regs[RSP], top)` (see the top of this file).
fn walk(t: &Reader, regs: &Regs, top: usize, start: usize) -> Walk {
    let Some(low) = regs[RSP] else {
        return Walk::From(top);
    };
    let read = |a: usize| -> Option<usize> {
        if !a.is_multiple_of(8) || a < low || a.checked_add(8)? > top {
            return None;
        }
        // SAFETY: an aligned word of the interrupted coroutine's live
        // stack, mapped and readable.
        Some(unsafe { std::ptr::read_volatile(a as *const usize) })
    };
    let mut regs = *regs;
    let mut sp = low;
    // The interrupted pc is exact; return addresses are looked up at the
    // call instruction, just before.
    let mut look = regs[RA].unwrap_or(0);
    for _ in 0..MAX_WALK_FRAMES {
        let object = t.code_at(look).and_then(|(_, _, index)| t.object(index));
        let cfi = object.and_then(|o| unwind::step(&o, &regs, look, top, read));
        let Some((next, signal)) = cfi else {
            // Code with no unwind table (JIT code, a JIT's builtins linked
            // into the program, assembly) may keep frame pointers; where
            // the table has rules this walk does not model, rbp may be any
            // register: the rest is scanned.
            if object.is_some_and(|o| find_fde(&o, look).is_some()) {
                return Walk::From(sp);
            }
            match frame_pointer_step(t, &regs, sp, top, start, read) {
                FpStep::Held => return Walk::Word,
                FpStep::Stuck => return Walk::From(sp),
                FpStep::Next { sp: cfa, fp, ra } => {
                    // Into an object: only after a call (else a doubtful
                    // chain); into no object (JIT code): its own frame
                    // pointer is followed next.
                    if t.code_at(ra.wrapping_sub(1)).is_some()
                        && matches!(classify(t, ra, start), Return::No)
                    {
                        return Walk::From(cfa);
                    }
                    regs = [None; NREGS];
                    regs[RSP] = Some(cfa);
                    regs[RBP] = Some(fp);
                    regs[RA] = Some(ra);
                    sp = cfa;
                    look = ra.wrapping_sub(1);
                    continue;
                }
            }
        };
        let (Some(ra), Some(cfa)) = (next[RA], next[RSP]) else {
            return Walk::From(sp);
        };
        // A signal frame's pc is no return address: not expected on a
        // coroutine's stack outside a handler, left to the scan.
        if signal {
            return Walk::From(sp);
        }
        match classify(t, ra, start) {
            Return::Runtime => return Walk::Held,
            Return::No => return Walk::From(sp),
            Return::Other => {}
        }
        regs = next;
        sp = cfa;
        look = ra - 1;
    }
    Walk::From(sp)
}

/// Whether a coroutine interrupted with registers `regs` (by DWARF number,
/// `cfi::NREGS` of them: the pc as the return address column) and stack
/// `regs[RSP] .. top` may be preempted there (see the top of this file).
/// `start` is the thread's start routine: when it lives in one of the
/// libraries (a C++ `std::thread` starts in libstdc++'s
/// `execute_native_thread_routine`, which only calls the thread's callable
/// and holds no lock), the return address into its first
/// `START_ROUTINE_BYTES` is not held against the thread; without that, no
/// `std::thread` was ever preempted. Async-signal-safe: reads the
/// published table, the objects it lists and the stack only.
pub fn is_safe_point(
    regs: &[Option<usize>; NREGS],
    top: usize,
    start: usize,
) -> Result<(), Refusal> {
    let (Some(pc), Some(sp)) = (regs[RA], regs[RSP]) else {
        return Err(Refusal::StackRoom);
    };
    if sp & 7 != 0 || top <= sp {
        return Err(Refusal::StackRoom);
    }
    let t = Reader::current().ok_or(Refusal::NoTable)?;
    if t.code_at(pc)
        .is_some_and(|(_, kind, _)| kind != Kind::Other)
    {
        return Err(Refusal::PcInRuntime);
    }
    let from = match walk(&t, regs, top, start) {
        Walk::Held => return Err(Refusal::FrameInRuntime),
        Walk::Word => return Err(Refusal::WordInRuntime),
        Walk::From(from) => from,
    };
    let from = (from & !7).max(sp);
    if (top - from) / 8 > MAX_SCAN_WORDS {
        return Err(Refusal::TooDeep);
    }
    let mut p = from;
    while p < top {
        // SAFETY: `sp .. top` is the interrupted coroutine's live stack,
        // mapped and readable, and `from` lies in it.
        let v = unsafe { *(p as *const usize) };
        p += 8;
        if let Return::Runtime = classify(&t, v, start) {
            return Err(Refusal::WordInRuntime);
        }
    }
    Ok(())
}
