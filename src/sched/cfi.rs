//! DWARF call frame information (CFI): finding the FDE of a pc through an
//! object's `.eh_frame_hdr` search table, and running the CIE's and the
//! FDE's rules up to that pc, for `unwind.rs` (which owns the objects and
//! the walk; docs/ARCHITECTURE.md §11).
//!
//! What is modelled is what x86_64 compilers emit for ordinary code: CFA
//! as a register plus offset, registers saved at CFA + n, in another
//! register, or undefined; remember/restore state. A DWARF expression
//! (PLT stubs, some signal trampolines) is recognised and reported, not
//! evaluated: the walk stops there. Every byte is read through `Cur`,
//! bounded by its record's end and by the object's segments. Nothing here
//! allocates or locks: the preemption handler walks a stack with it
//! (`preempt_walk.rs`).

use super::unwind::Object;

/// DWARF register numbers (x86_64 psABI) kept: 0..=16, the last the
/// return address.
pub(super) const NREGS: usize = 17;
/// Nested DW_CFA_remember_state at most.
const MAX_REMEMBERED: usize = 8;

/// A cursor over an object's bytes, bounded by `end`.
pub(super) struct Cur<'a> {
    o: &'a Object,
    pos: usize,
    end: usize,
}

impl Cur<'_> {
    fn bytes<const N: usize>(&mut self) -> Option<[u8; N]> {
        if self.pos.checked_add(N)? > self.end {
            return None;
        }
        let b = self.o.read::<N>(self.pos)?;
        self.pos += N;
        Some(b)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.bytes::<1>()?[0])
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.bytes()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.bytes()?))
    }
    fn uleb(&mut self) -> Option<u64> {
        let (mut v, mut shift) = (0u64, 0u32);
        loop {
            let b = self.u8()?;
            if shift < 64 {
                v |= u64::from(b & 0x7f) << shift;
            }
            shift += 7;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
    }
    fn sleb(&mut self) -> Option<i64> {
        let (mut v, mut shift) = (0i64, 0u32);
        loop {
            let b = self.u8()?;
            if shift < 64 {
                v |= i64::from(b & 0x7f) << shift;
            }
            shift += 7;
            if b & 0x80 == 0 {
                if shift < 64 && b & 0x40 != 0 {
                    v |= -1i64 << shift;
                }
                return Some(v);
            }
        }
    }

    /// A pointer in encoding `enc` (DW_EH_PE_*): pc-relative and
    /// data-relative (to `datarel`) applications, no indirection.
    fn pointer(&mut self, enc: u8, datarel: usize) -> Option<usize> {
        if enc == 0xff {
            return None;
        }
        let at = self.pos;
        let v = match enc & 0x0f {
            0x00 => self.u64()? as usize,
            0x01 => self.uleb()? as usize,
            0x02 => self.u16()? as usize,
            0x03 => self.u32()? as usize,
            0x04 => self.u64()? as usize,
            0x09 => self.sleb()? as usize,
            0x0a => self.u16()? as i16 as isize as usize,
            0x0b => self.u32()? as i32 as isize as usize,
            0x0c => self.u64()? as usize,
            _ => return None,
        };
        match enc & 0x70 {
            0x00 => Some(v),
            0x10 => Some(at.wrapping_add(v)),
            0x30 => Some(datarel.wrapping_add(v)),
            _ => None,
        }
    }
}

/// Where a register's caller value is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Rule {
    /// Not said: the same value (callee-saved) for our purposes.
    Same,
    Undefined,
    /// Saved at CFA + n.
    Offset(i64),
    /// Is CFA + n.
    ValOffset(i64),
    /// In another register.
    Register(u16),
    /// A DWARF expression: not modelled.
    Expr,
}

#[derive(Clone, Copy)]
pub(super) struct Row {
    pub(super) cfa_reg: u16,
    pub(super) cfa_off: i64,
    pub(super) cfa_expr: bool,
    pub(super) rules: [Rule; NREGS],
}

/// A CIE's parameters.
pub(super) struct Cie {
    code_align: u64,
    data_align: i64,
    pub(super) ra: u64,
    fde_enc: u8,
    has_aug: bool,
    pub(super) signal: bool,
    pub(super) instr: (usize, usize),
}

/// The FDE covering `pc` in `o`, through the `.eh_frame_hdr` search
/// table: (CIE, instructions, first pc).
pub(super) fn find_fde(o: &Object, pc: usize) -> Option<(Cie, (usize, usize), usize)> {
    let hdr = o.hdr;
    if hdr == 0 {
        return None;
    }
    let mut c = Cur {
        o,
        pos: hdr,
        end: usize::MAX,
    };
    let (version, frame_enc, count_enc, table_enc) = (c.u8()?, c.u8()?, c.u8()?, c.u8()?);
    // Only the table every linker writes: 4-byte entries relative to the
    // header (DW_EH_PE_datarel | DW_EH_PE_sdata4).
    if version != 1 || table_enc != 0x3b {
        return None;
    }
    c.pointer(frame_enc, hdr)?;
    let count = c.pointer(count_enc, hdr)?;
    let table = c.pos;
    let entry = |i: usize| -> Option<(usize, usize)> {
        let mut e = Cur {
            o,
            pos: table.checked_add(i.checked_mul(8)?)?,
            end: usize::MAX,
        };
        let loc = hdr.wrapping_add(e.u32()? as i32 as isize as usize);
        let fde = hdr.wrapping_add(e.u32()? as i32 as isize as usize);
        Some((loc, fde))
    };
    // The last entry whose start is at or below pc.
    let (mut lo, mut hi) = (0usize, count);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if entry(mid)?.0 <= pc {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let (_, fde) = entry(lo.checked_sub(1)?)?;
    let (cie_at, body, fde_end) = record(o, fde)?;
    let cie = parse_cie(o, cie_at)?;
    let mut f = Cur {
        o,
        pos: body,
        end: fde_end,
    };
    let start = f.pointer(cie.fde_enc, hdr)?;
    let range = f.pointer(cie.fde_enc & 0x0f, hdr)?;
    if pc < start || pc >= start.wrapping_add(range) {
        return None;
    }
    if cie.has_aug {
        let n = f.uleb()? as usize;
        f.pos = f.pos.checked_add(n)?;
    }
    Some((cie, (f.pos, fde_end), start))
}

/// A CIE or FDE at `at`: (the CIE it points to, or 0 for a CIE; where its
/// body starts, after the id; its end).
fn record(o: &Object, at: usize) -> Option<(usize, usize, usize)> {
    let mut c = Cur {
        o,
        pos: at,
        end: usize::MAX,
    };
    let mut len = c.u32()? as usize;
    if len == 0xffff_ffff {
        len = c.u64()? as usize;
    }
    let id_at = c.pos;
    let end = id_at.checked_add(len)?;
    let id = c.u32()? as usize;
    let cie = if id == 0 { 0 } else { id_at.wrapping_sub(id) };
    Some((cie, c.pos, end))
}

fn parse_cie(o: &Object, at: usize) -> Option<Cie> {
    let (is_fde, body, end) = record(o, at)?;
    if is_fde != 0 {
        return None;
    }
    let mut c = Cur { o, pos: body, end };
    let version = c.u8()?;
    // The augmentation string, at most 8 bytes (no allocation: this runs
    // in the preemption signal handler too, `preempt_walk.rs`).
    let (mut aug, mut naug) = ([0u8; 8], 0usize);
    loop {
        match c.u8()? {
            0 => break,
            b if naug < aug.len() => {
                aug[naug] = b;
                naug += 1;
            }
            _ => return None,
        }
    }
    let aug = &aug[..naug];
    if version == 4 {
        c.u8()?;
        c.u8()?;
    }
    let code_align = c.uleb()?;
    let data_align = c.sleb()?;
    let ra = if version == 1 {
        u64::from(c.u8()?)
    } else {
        c.uleb()?
    };
    let mut cie = Cie {
        code_align,
        data_align,
        ra,
        fde_enc: 0,
        has_aug: aug.first() == Some(&b'z'),
        signal: false,
        instr: (0, end),
    };
    if cie.has_aug {
        let n = c.uleb()? as usize;
        let after = c.pos.checked_add(n)?;
        for &a in &aug[1..] {
            match a {
                b'R' => cie.fde_enc = c.u8()?,
                b'L' => {
                    c.u8()?;
                }
                b'P' => {
                    let enc = c.u8()?;
                    c.pointer(enc & 0x7f, 0)?;
                }
                b'S' => cie.signal = true,
                _ => break,
            }
        }
        c.pos = after;
    } else if !aug.is_empty() {
        return None;
    }
    cie.instr.0 = c.pos;
    Some(cie)
}

/// Runs CFA instructions `instr` from location `loc` up to `pc`, on `row`
/// (`initial`: the CIE's row, for DW_CFA_restore). None: an instruction
/// it does not know.
pub(super) fn execute(
    o: &Object,
    cie: &Cie,
    instr: (usize, usize),
    mut loc: usize,
    pc: usize,
    row: &mut Row,
    initial: &Row,
) -> Option<()> {
    let mut c = Cur {
        o,
        pos: instr.0,
        end: instr.1,
    };
    // DW_CFA_remember_state's stack, in place (no allocation: see
    // `parse_cie`).
    let mut saved = [*initial; MAX_REMEMBERED];
    let mut nsaved = 0usize;
    let da = cie.data_align;
    let set = |row: &mut Row, reg: u64, rule: Rule| {
        if let Some(r) = row.rules.get_mut(reg as usize) {
            *r = rule;
        }
    };
    let restore = |row: &mut Row, reg: u64| {
        if let (Some(r), Some(i)) = (
            row.rules.get_mut(reg as usize),
            initial.rules.get(reg as usize),
        ) {
            *r = *i;
        }
    };
    while c.pos < c.end {
        let op = c.u8()?;
        let advance = match (op >> 6, op & 0x3f) {
            (1, d) => Some(u64::from(d)),
            (2, reg) => {
                let off = (c.uleb()? as i64).wrapping_mul(da);
                set(row, u64::from(reg), Rule::Offset(off));
                None
            }
            (3, reg) => {
                restore(row, u64::from(reg));
                None
            }
            _ => match op {
                0x00 => None,
                0x01 => {
                    loc = c.pointer(cie.fde_enc, 0)?;
                    if loc > pc {
                        return Some(());
                    }
                    None
                }
                0x02 => Some(u64::from(c.u8()?)),
                0x03 => Some(u64::from(c.u16()?)),
                0x04 => Some(u64::from(c.u32()?)),
                0x05 => {
                    let reg = c.uleb()?;
                    let off = (c.uleb()? as i64).wrapping_mul(da);
                    set(row, reg, Rule::Offset(off));
                    None
                }
                0x06 => {
                    restore(row, c.uleb()?);
                    None
                }
                0x07 => {
                    set(row, c.uleb()?, Rule::Undefined);
                    None
                }
                0x08 => {
                    set(row, c.uleb()?, Rule::Same);
                    None
                }
                0x09 => {
                    let reg = c.uleb()?;
                    let other = c.uleb()?;
                    set(row, reg, Rule::Register(other as u16));
                    None
                }
                0x0a => {
                    *saved.get_mut(nsaved)? = *row;
                    nsaved += 1;
                    None
                }
                0x0b => {
                    nsaved = nsaved.checked_sub(1)?;
                    *row = saved[nsaved];
                    None
                }
                0x0c => {
                    row.cfa_reg = c.uleb()? as u16;
                    row.cfa_off = c.uleb()? as i64;
                    row.cfa_expr = false;
                    None
                }
                0x0d => {
                    row.cfa_reg = c.uleb()? as u16;
                    row.cfa_expr = false;
                    None
                }
                0x0e => {
                    row.cfa_off = c.uleb()? as i64;
                    None
                }
                0x0f => {
                    let n = c.uleb()? as usize;
                    c.pos = c.pos.checked_add(n)?;
                    row.cfa_expr = true;
                    None
                }
                0x10 | 0x16 => {
                    let reg = c.uleb()?;
                    let n = c.uleb()? as usize;
                    c.pos = c.pos.checked_add(n)?;
                    set(row, reg, Rule::Expr);
                    None
                }
                0x11 => {
                    let reg = c.uleb()?;
                    let off = c.sleb()?.wrapping_mul(da);
                    set(row, reg, Rule::Offset(off));
                    None
                }
                0x12 => {
                    row.cfa_reg = c.uleb()? as u16;
                    row.cfa_off = c.sleb()?.wrapping_mul(da);
                    row.cfa_expr = false;
                    None
                }
                0x13 => {
                    row.cfa_off = c.sleb()?.wrapping_mul(da);
                    None
                }
                0x14 => {
                    let reg = c.uleb()?;
                    let off = (c.uleb()? as i64).wrapping_mul(da);
                    set(row, reg, Rule::ValOffset(off));
                    None
                }
                0x15 => {
                    let reg = c.uleb()?;
                    let off = c.sleb()?.wrapping_mul(da);
                    set(row, reg, Rule::ValOffset(off));
                    None
                }
                0x2e => {
                    c.uleb()?;
                    None
                }
                0x2f => {
                    let reg = c.uleb()?;
                    let off = (c.uleb()? as i64).wrapping_neg().wrapping_mul(da);
                    set(row, reg, Rule::Offset(off));
                    None
                }
                _ => return None,
            },
        };
        if let Some(d) = advance {
            loc = loc.wrapping_add(d.wrapping_mul(cie.code_align) as usize);
            if loc > pc {
                return Some(());
            }
        }
    }
    Some(())
}
