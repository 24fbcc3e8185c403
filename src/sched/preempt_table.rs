//! The loaded objects as the preemption handler sees them
//! (`preempt_safe.rs`): each object's segments and `.eh_frame_hdr`, and
//! its executable ranges sorted, each with its kind (a runtime library
//! whose locks a preempted coroutine must not hold, corun itself, or any
//! other code).
//!
//! Written by the monitor thread when the loader's set of objects changed
//! (never in the handler: `dl_iterate_phdr` takes the loader's lock), read
//! by the handler without a lock. The handler follows what it reads into
//! the objects' own bytes (their unwind tables), so it must never see a
//! table half written: a torn entry could name an address no object maps.
//! Hence two tables: the monitor writes the one not in use, once no
//! handler reads it (a count of readers per table, each reader counts
//! itself in and checks the table is still the current one), then makes
//! it current. A reader never waits; the writer waits for the readers of
//! an old table, which read for microseconds.
//!
//! Every field is an atomic, read and written Relaxed: the current index
//! (SeqCst) orders them. Capacity is fixed (no allocation in the handler):
//! objects or ranges beyond it are left out, and code in them is unknown,
//! which makes the handler refuse or scan, never accept wrongly.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::unwind::{Object, MAX_SEGMENTS};

/// Objects kept at most (a JVM or a Python with many extension modules
/// loads one or two hundred).
pub(super) const MAX_OBJECTS: usize = 384;
/// Executable ranges kept at most.
const MAX_CODE: usize = 2 * MAX_OBJECTS;

/// What an executable range's code is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    /// The program's, or a library's that holds none of the runtime's locks.
    Other = 0,
    /// glibc, ld.so, libgcc_s, libstdc++, libgomp (`preempt_safe.rs`).
    Runtime = 1,
    /// corun's own.
    Own = 2,
}

/// One object as found by the monitor.
pub(super) struct Found {
    pub(super) object: Object,
    pub(super) kind: Kind,
}

struct Table {
    objects: AtomicUsize,
    hdr: [AtomicUsize; MAX_OBJECTS],
    nseg: [AtomicUsize; MAX_OBJECTS],
    /// Bit i: segment i is executable.
    exec: [AtomicUsize; MAX_OBJECTS],
    seg_lo: [[AtomicUsize; MAX_SEGMENTS]; MAX_OBJECTS],
    seg_hi: [[AtomicUsize; MAX_SEGMENTS]; MAX_OBJECTS],
    /// Executable ranges sorted by start: [lo, hi), object index | kind << 32.
    code: AtomicUsize,
    code_lo: [AtomicUsize; MAX_CODE],
    code_hi: [AtomicUsize; MAX_CODE],
    code_of: [AtomicUsize; MAX_CODE],
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicUsize = AtomicUsize::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const ZEROS: [AtomicUsize; MAX_SEGMENTS] = [ZERO; MAX_SEGMENTS];
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Table = Table {
    objects: ZERO,
    hdr: [ZERO; MAX_OBJECTS],
    nseg: [ZERO; MAX_OBJECTS],
    exec: [ZERO; MAX_OBJECTS],
    seg_lo: [ZEROS; MAX_OBJECTS],
    seg_hi: [ZEROS; MAX_OBJECTS],
    code: ZERO,
    code_lo: [ZERO; MAX_CODE],
    code_hi: [ZERO; MAX_CODE],
    code_of: [ZERO; MAX_CODE],
};

static TABLES: [Table; 2] = [EMPTY, EMPTY];
/// The current table's index, + 2 once one was published (0: none yet).
static CURRENT: AtomicUsize = AtomicUsize::new(0);
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
static READERS: [AtomicUsize; 2] = [ZERO, ZERO];

/// A table a handler reads; counted out when dropped.
pub(super) struct Reader {
    i: usize,
}

impl Reader {
    /// The current table, if one was published. Async-signal-safe, never
    /// waits.
    pub(super) fn current() -> Option<Reader> {
        let c = CURRENT.load(Ordering::SeqCst);
        if c < 2 {
            return None;
        }
        let i = c & 1;
        READERS[i].fetch_add(1, Ordering::SeqCst);
        // The writer rewrites table i only once it saw no reader of it
        // while the other table was current: a reader that counts itself
        // in after that finds table i no longer current, and leaves; one
        // that finds it current reads it whole, and keeps it from being
        // rewritten until it leaves.
        if CURRENT.load(Ordering::SeqCst) != c {
            READERS[i].fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(Reader { i })
    }

    fn t(&self) -> &'static Table {
        &TABLES[self.i]
    }

    /// The executable range holding `a`: ([lo, hi), kind, object index).
    pub(super) fn code_at(&self, a: usize) -> Option<((usize, usize), Kind, usize)> {
        let t = self.t();
        let n = t.code.load(Ordering::Relaxed).min(MAX_CODE);
        // The last range starting at or below `a`.
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if t.code_lo[mid].load(Ordering::Relaxed) <= a {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let i = lo.checked_sub(1)?;
        let (start, end) = (
            t.code_lo[i].load(Ordering::Relaxed),
            t.code_hi[i].load(Ordering::Relaxed),
        );
        if a >= end {
            return None;
        }
        let of = t.code_of[i].load(Ordering::Relaxed);
        let kind = match of >> 32 {
            1 => Kind::Runtime,
            2 => Kind::Own,
            _ => Kind::Other,
        };
        Some(((start, end), kind, of & 0xffff_ffff))
    }

    /// Object `i` of the table, as the unwinder reads it.
    pub(super) fn object(&self, i: usize) -> Option<Object> {
        let t = self.t();
        if i >= t.objects.load(Ordering::Relaxed).min(MAX_OBJECTS) {
            return None;
        }
        let mut o = Object {
            segments: [(0, 0, false); MAX_SEGMENTS],
            nseg: t.nseg[i].load(Ordering::Relaxed).min(MAX_SEGMENTS),
            hdr: t.hdr[i].load(Ordering::Relaxed),
        };
        let exec = t.exec[i].load(Ordering::Relaxed);
        for (k, s) in o.segments.iter_mut().take(o.nseg).enumerate() {
            *s = (
                t.seg_lo[i][k].load(Ordering::Relaxed),
                t.seg_hi[i][k].load(Ordering::Relaxed),
                exec & (1 << k) != 0,
            );
        }
        Some(o)
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        READERS[self.i].fetch_sub(1, Ordering::SeqCst);
    }
}

/// Publishes `found` as the current table. Normal context, one writer (the
/// monitor thread).
pub(super) fn publish(found: &[Found]) {
    let c = CURRENT.load(Ordering::SeqCst);
    let i = if c < 2 { 0 } else { (c & 1) ^ 1 };
    // Handlers that took table `i` when it was current read for a few
    // microseconds at most.
    while READERS[i].load(Ordering::SeqCst) != 0 {
        std::thread::yield_now();
    }
    let t = &TABLES[i];
    let n = found.len().min(MAX_OBJECTS);
    let mut code: Vec<(usize, usize, usize)> = Vec::with_capacity(MAX_CODE);
    for (k, f) in found.iter().take(n).enumerate() {
        let o = &f.object;
        t.hdr[k].store(o.hdr, Ordering::Relaxed);
        let segs = o.segments();
        t.nseg[k].store(segs.len(), Ordering::Relaxed);
        let mut exec = 0usize;
        for (j, &(lo, hi, x)) in segs.iter().enumerate() {
            t.seg_lo[k][j].store(lo, Ordering::Relaxed);
            t.seg_hi[k][j].store(hi, Ordering::Relaxed);
            if x {
                exec |= 1 << j;
                code.push((lo, hi, k | (f.kind as usize) << 32));
            }
        }
        t.exec[k].store(exec, Ordering::Relaxed);
    }
    t.objects.store(n, Ordering::Relaxed);
    code.sort_unstable();
    code.truncate(MAX_CODE);
    for (j, &(lo, hi, of)) in code.iter().enumerate() {
        t.code_lo[j].store(lo, Ordering::Relaxed);
        t.code_hi[j].store(hi, Ordering::Relaxed);
        t.code_of[j].store(of, Ordering::Relaxed);
    }
    t.code.store(code.len(), Ordering::Relaxed);
    CURRENT.store(2 + i, Ordering::SeqCst);
}

/// In a forked child: handlers that read when the parent forked were on
/// threads the child does not have.
pub(super) fn reset_after_fork() {
    for r in &READERS {
        // A look first: a store would copy the page (`sys::ForkReset`).
        crate::sys::ForkReset::reset_to(r, 0);
    }
}
