//! Walking a suspended coroutine's stack, for `corun dump`
//! (docs/ARCHITECTURE.md §11).
//!
//! A parked coroutine saved its pc, sp and rbp just before it suspended
//! (`debugreg::save_registers`); its frames are on its own stack, which no
//! one runs while it is parked. Frame pointers cannot be followed: corun
//! and most C programs are built without them. `_Unwind_Backtrace` only
//! walks the calling thread's own stack. So this is a small DWARF call
//! frame information (CFI) interpreter (`cfi.rs`): the `.eh_frame` tables every
//! x86_64 object carries (the ABI requires them, `-fomit-frame-pointer` or
//! not), found through each loaded object's `PT_GNU_EH_FRAME` header and
//! its sorted search table. For each frame: find the FDE of the pc, run
//! the CIE's and the FDE's rules up to the pc, compute the CFA, read the
//! return address and rbp where the rules say they are saved.
//!
//! Chosen over a conservative scan of the stack for return addresses
//! because a scan also finds stale ones (left by calls that returned) and
//! prints frames that do not exist; a CFI walk prints only real frames, and
//! stops where it cannot go on (a rule it does not model: a DWARF
//! expression, a CFA on a register it does not track).
//!
//! It must never crash the program being dumped, so every read is bounded:
//! stack words only inside the coroutine's own stack `[low, high)` (the
//! task may wake and run meanwhile: the words may then be nonsense, never
//! out of range); table bytes only inside a `PT_LOAD` segment of the object
//! they belong to; at most `MAX_FRAMES` frames, each with a CFA above the
//! one before. Objects are listed once per dump (`Objects::load`); an
//! object unloaded by `dlclose` during the walk is the one case not
//! guarded against.

use std::ffi::c_void;

use super::cfi::{execute, find_fde, Row, Rule, NREGS};

/// Frames printed at most.
pub const MAX_FRAMES: usize = 48;
/// DWARF register numbers (x86_64 psABI): rbp, rsp, return address.
const RBP: usize = 6;
const RSP: usize = 7;
const RA: usize = 16;

/// `PT_LOAD` segments kept per object (ld.so objects have 4 or 5; more
/// are left out: their bytes are not read, their code not found).
pub(super) const MAX_SEGMENTS: usize = 6;

/// One loaded object: its `PT_LOAD` ranges (with whether each is
/// executable), and the address of its `.eh_frame_hdr` (0: none). Plain
/// data: the preemption handler makes one from its published table
/// (`preempt_walk.rs`).
#[derive(Clone, Copy)]
pub(super) struct Object {
    pub(super) segments: [(usize, usize, bool); MAX_SEGMENTS],
    pub(super) nseg: usize,
    pub(super) hdr: usize,
}

/// The objects loaded in the process.
pub struct Objects(Vec<Object>);

impl Objects {
    /// Lists the process's objects and their segments.
    pub fn load() -> Objects {
        let mut v: Vec<Object> = Vec::new();
        // SAFETY: the callback only reads the loader's records it is given
        // and pushes to the Vec behind `data`.
        unsafe { libc::dl_iterate_phdr(Some(collect), (&mut v as *mut Vec<Object>).cast()) };
        Objects(v)
    }

    fn holding(&self, pc: usize) -> Option<&Object> {
        self.0.iter().find(|o| o.holds_code(pc))
    }
}

unsafe extern "C" fn collect(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut c_void,
) -> libc::c_int {
    // SAFETY: the loader passes a valid record; `data` is our Vec.
    let (info, v) = unsafe { (&*info, &mut *(data as *mut Vec<Object>)) };
    let base = info.dlpi_addr as usize;
    let mut o = Object {
        segments: [(0, 0, false); MAX_SEGMENTS],
        nseg: 0,
        hdr: 0,
    };
    for i in 0..info.dlpi_phnum as usize {
        // SAFETY: `dlpi_phdr` has `dlpi_phnum` entries.
        let ph = unsafe { &*info.dlpi_phdr.add(i) };
        let lo = base.wrapping_add(ph.p_vaddr as usize);
        match ph.p_type {
            libc::PT_LOAD if o.nseg < MAX_SEGMENTS => {
                o.segments[o.nseg] = (
                    lo,
                    lo.wrapping_add(ph.p_memsz as usize),
                    ph.p_flags & libc::PF_X != 0,
                );
                o.nseg += 1;
            }
            libc::PT_GNU_EH_FRAME => o.hdr = lo,
            _ => {}
        }
    }
    v.push(o);
    0
}

impl Object {
    /// The segments in use.
    pub(super) fn segments(&self) -> &[(usize, usize, bool)] {
        &self.segments[..self.nseg.min(MAX_SEGMENTS)]
    }

    /// Whether `pc` lies in one of its executable segments.
    pub(super) fn holds_code(&self, pc: usize) -> bool {
        self.segments()
            .iter()
            .any(|&(lo, hi, x)| x && lo <= pc && pc < hi)
    }

    /// `N` bytes at `addr`, if they lie inside one of the object's segments.
    pub(super) fn read<const N: usize>(&self, addr: usize) -> Option<[u8; N]> {
        let end = addr.checked_add(N)?;
        self.segments()
            .iter()
            .any(|&(lo, hi, _)| lo <= addr && end <= hi)
            .then(|| {
                let mut b = [0u8; N];
                // SAFETY: the range lies inside a mapped PT_LOAD segment of
                // a loaded object.
                unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, b.as_mut_ptr(), N) };
                b
            })
    }
}

/// Registers of a frame by DWARF number (None: not known); `RA` is its pc.
pub(super) type Regs = [Option<usize>; NREGS];

/// One frame up: the caller's registers (its pc in `RA`, its sp the CFA)
/// from those of a frame of object `o` whose code is at `look` (its pc, or
/// its return address - 1), and whether the caller's frame is a signal
/// frame (its pc is then exact). `read` reads a stack word. None where the
/// walk cannot go on: no FDE, a rule not modelled, a return address the
/// rules do not save (the end of the stack), a CFA not above the frame's
/// sp or above `high`. Allocates nothing (`preempt_walk.rs` calls it in a
/// signal handler).
pub(super) fn step(
    o: &Object,
    regs: &Regs,
    look: usize,
    high: usize,
    read: impl Fn(usize) -> Option<usize>,
) -> Option<(Regs, bool)> {
    let (cie, instr, start) = find_fde(o, look)?;
    if cie.ra as usize != RA {
        return None;
    }
    let mut row = Row {
        cfa_reg: RSP as u16,
        cfa_off: 8,
        cfa_expr: false,
        rules: [Rule::Same; NREGS],
    };
    let blank = row;
    execute(o, &cie, cie.instr, 0, usize::MAX, &mut row, &blank)?;
    let initial = row;
    execute(o, &cie, instr, start, look, &mut row, &initial)?;
    if row.cfa_expr {
        return None;
    }
    let base = regs.get(row.cfa_reg as usize).copied().flatten()?;
    let cfa = base.wrapping_add(row.cfa_off as usize);
    let mut next = *regs;
    for (r, slot) in next.iter_mut().enumerate() {
        *slot = match row.rules[r] {
            Rule::Same => regs[r],
            Rule::Undefined | Rule::Expr => None,
            Rule::Offset(n) => read(cfa.wrapping_add(n as usize)),
            Rule::ValOffset(n) => Some(cfa.wrapping_add(n as usize)),
            Rule::Register(o) => regs.get(o as usize).copied().flatten(),
        };
    }
    // A return address the rules do not save: the end of the stack.
    if matches!(row.rules[RA], Rule::Same) {
        return None;
    }
    // Each caller's frame is above its callee's, inside the stack.
    if cfa <= regs[RSP].unwrap_or(usize::MAX) || cfa > high {
        return None;
    }
    next[RSP] = Some(cfa);
    Some((next, cie.signal))
}

/// The return addresses of the stack that `pc`, `sp`, `fp` describe, `pc`
/// first, reading stack words only inside `stack` (`[low, high)`).
pub fn walk(objs: &Objects, pc: usize, sp: usize, fp: usize, stack: (usize, usize)) -> Vec<usize> {
    let read = |addr: usize| -> Option<usize> {
        if !addr.is_multiple_of(8) || addr < stack.0 || addr.checked_add(8)? > stack.1 {
            return None;
        }
        // SAFETY: an aligned word inside the coroutine's stack, which stays
        // mapped (stacks are never unmapped, only released to zero pages).
        Some(unsafe { std::ptr::read_volatile(addr as *const usize) })
    };
    let mut regs: Regs = [None; NREGS];
    regs[RSP] = Some(sp);
    regs[RBP] = Some(fp);
    regs[RA] = Some(pc);
    let mut out = Vec::new();
    // The first pc is where the coroutine stopped; the others are return
    // addresses, whose call is the instruction before (unless the frame
    // below is a signal frame).
    let mut exact = true;
    while out.len() < MAX_FRAMES {
        let Some(pc) = regs[RA].filter(|&p| p != 0) else {
            break;
        };
        out.push(pc);
        let look = if exact { pc } else { pc - 1 };
        let Some(o) = objs.holding(look) else { break };
        let Some((next, signal)) = step(o, &regs, look, stack.1, read) else {
            break;
        };
        exact = signal;
        regs = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This thread's stack: [low, high).
    fn my_stack() -> (usize, usize) {
        // SAFETY: a zeroed attr is filled by pthread_getattr_np, then read
        // and destroyed.
        unsafe {
            let mut a: libc::pthread_attr_t = std::mem::zeroed();
            assert_eq!(libc::pthread_getattr_np(libc::pthread_self(), &mut a), 0);
            let (mut p, mut n) = (std::ptr::null_mut(), 0usize);
            libc::pthread_attr_getstack(&a, &mut p, &mut n);
            libc::pthread_attr_destroy(&mut a);
            (p as usize, p as usize + n)
        }
    }

    #[inline(never)]
    fn innermost(out: &mut Vec<String>) {
        let r = crate::sched::debugreg::DebugRecord::new(0, 0);
        r.save_registers();
        let s = r.saved_unchecked();
        let objs = Objects::load();
        let pcs = walk(&objs, s.pc, s.sp, s.fp, my_stack());
        out.extend(
            pcs.iter()
                .enumerate()
                .map(|(i, &pc)| crate::sched::symbols::describe(if i == 0 { pc } else { pc - 1 })),
        );
    }

    #[inline(never)]
    fn middle(out: &mut Vec<String>) {
        innermost(out);
        std::hint::black_box(out);
    }

    #[test]
    fn walks_this_threads_stack_through_its_callers() {
        let mut names = Vec::new();
        middle(&mut names);
        std::hint::black_box(&names);
        let at = |f: &str| names.iter().position(|n| n.contains(f));
        // The test function itself may be inlined into the harness; the
        // walk goes on through std's thread start to libc's.
        let (i, m, t) = (at("innermost"), at("middle"), at("thread_start"));
        assert!(i == Some(0) && m == Some(1) && m < t, "{names:?}");
    }
}
