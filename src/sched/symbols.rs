//! Names of code addresses, for the watchdog and `corun dump`
//! (docs/ARCHITECTURE.md §11).
//!
//! `dladdr` only knows the dynamic symbol table: a program built without
//! `-rdynamic`, a C++ template instance, a Rust function are not there. So
//! an address `dladdr` cannot name is looked up in the object's own ELF
//! symbol table (`.symtab`, read from its file once and kept), the function
//! whose range holds the address. C++ names are demangled with the
//! process's own `__cxa_demangle` when libstdc++ is loaded, Rust names by
//! `rustdemangle`. What cannot be named is `object+offset`, for
//! `addr2line -e object offset`.
//!
//! Runs on the watchdog's or the dump's native thread, never in a signal
//! handler: it reads files and allocates.

use crate::sys::ForkMutex;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};

/// One object's function symbols: (start offset, size, mangled name),
/// sorted by start.
type Table = Vec<(u64, u64, String)>;

static TABLES: ForkMutex<Option<HashMap<String, Option<Table>>>> = ForkMutex::new(None);

/// In a forked child: the tables' lock, if a parent thread held it.
pub fn after_fork_child() {
    TABLES.unlock_after_fork(|| None);
}

/// What `dladdr` says of `addr`: (object path, load base, dynamic symbol
/// name if any, that symbol's address).
fn dl(addr: usize) -> Option<(String, usize, Option<String>, usize)> {
    // SAFETY: a zeroed Dl_info is a valid out-buffer; dladdr only reads the
    // loader's tables.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::dladdr(addr as *const c_void, &mut info) } == 0 {
        return None;
    }
    let cstr = |p: *const c_char| {
        // SAFETY: dladdr's strings are NUL-terminated and owned by the loader.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    let mut object = cstr(info.dli_fname).unwrap_or_default();
    let (main_base, main_path) = main_program();
    if object.is_empty() || info.dli_fbase as usize == *main_base {
        // The main program: its path as the kernel knows it. glibc's
        // dladdr names it by argv[0], which is no path when the program
        // was found on $PATH ("privoxy") or started from another
        // directory: its symbols were never read, and its functions had
        // no names in stall reports and dumps.
        object = main_path.clone();
    }
    Some((
        object,
        info.dli_fbase as usize,
        cstr(info.dli_sname),
        info.dli_saddr as usize,
    ))
}

/// The main program: where it is loaded (the `dli_fbase` of its entry
/// point, as `dladdr` gives it for each of its addresses) and its path as
/// the kernel knows it (/proc/self/exe). Found once.
fn main_program() -> &'static (usize, String) {
    static MAIN: std::sync::OnceLock<(usize, String)> = std::sync::OnceLock::new();
    MAIN.get_or_init(|| {
        // SAFETY: getauxval reads the auxiliary vector.
        let entry = unsafe { libc::getauxval(libc::AT_ENTRY) } as usize;
        // SAFETY: a zeroed Dl_info is a valid out-buffer; dladdr only reads
        // the loader's tables.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let found = entry != 0 && unsafe { libc::dladdr(entry as *const c_void, &mut info) } != 0;
        let path = std::fs::read_link("/proc/self/exe")
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        (if found { info.dli_fbase as usize } else { 0 }, path)
    })
}

/// The object file holding `addr` and `addr`'s offset in it.
pub fn object_of(addr: usize) -> Option<(String, usize)> {
    dl(addr).map(|(o, base, _, _)| (o, addr - base))
}

/// The function holding `addr`, demangled, if any table names it.
pub fn function_name(addr: usize) -> Option<String> {
    let (object, base, sname, saddr) = dl(addr)?;
    if let Some(n) = sname.filter(|_| saddr <= addr) {
        return Some(demangle(&n));
    }
    let off = (addr - base) as u64;
    let mut g = crate::sched::fdtable::lock(TABLES.get());
    let tables = g.get_or_insert_with(HashMap::new);
    let table = tables
        .entry(object.clone())
        .or_insert_with(|| read_symtab(&object));
    let t = table.as_ref()?;
    let i = t.partition_point(|s| s.0 <= off).checked_sub(1)?;
    let (start, size, name) = &t[i];
    (off < start + (*size).max(1)).then(|| demangle(name))
}

/// `function_name`, or `object+0xoffset` (the object's file name only).
pub fn describe(addr: usize) -> String {
    if let Some(n) = function_name(addr) {
        return n;
    }
    match object_of(addr) {
        Some((o, off)) => format!("{}+{off:#x}", short(&o)),
        None => format!("{addr:#x}"),
    }
}

/// The last component of a path.
pub fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The function symbols of the ELF file at `path` (None: unreadable, not
/// ELF64, or stripped).
fn read_symtab(path: &str) -> Option<Table> {
    // Not std::fs: an open here would take one of the program's fd
    // numbers for a moment (`sys::private_read`).
    // A helper thread of corun's, which a process that confines itself
    // waits for (`confined.rs`); it leaves the list when done.
    fn spawn(job: Box<dyn FnOnce() + Send + 'static>) -> std::io::Result<()> {
        super::confined::spawn_helper(Box::new(move || {
            job();
            super::confined::unregister_helper();
        }))
    }
    let f = crate::sys::private_read::read_file(&std::ffi::CString::new(path).ok()?, spawn)?;
    let u16_at = |o: usize| Some(u16::from_le_bytes(f.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(f.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(f.get(o..o + 8)?.try_into().ok()?));
    if f.get(..5)? != b"\x7fELF\x02" {
        return None;
    }
    let shoff = u64_at(0x28)? as usize;
    let shentsize = u16_at(0x3a)? as usize;
    let shnum = u16_at(0x3c)? as usize;
    let sec = |i: usize| shoff + i * shentsize;
    const SHT_SYMTAB: u32 = 2;
    const STT_FUNC: u8 = 2;
    let symtab = (0..shnum).find(|&i| u32_at(sec(i) + 4) == Some(SHT_SYMTAB))?;
    let (off, size) = (u64_at(sec(symtab) + 0x18)?, u64_at(sec(symtab) + 0x20)?);
    let strtab = u32_at(sec(symtab) + 0x28)? as usize;
    let str_off = u64_at(sec(strtab) + 0x18)? as usize;
    let mut t = Table::new();
    for s in (off as usize..(off + size) as usize).step_by(24) {
        let info = *f.get(s + 4)?;
        let value = u64_at(s + 8)?;
        if info & 0xf != STT_FUNC || value == 0 {
            continue;
        }
        let name_at = str_off + u32_at(s)? as usize;
        let end = f.get(name_at..)?.iter().position(|&b| b == 0)?;
        let name = String::from_utf8_lossy(&f[name_at..name_at + end]).into_owned();
        t.push((value, u64_at(s + 16)?, name));
    }
    t.sort_unstable_by_key(|s| s.0);
    Some(t)
}

type CxaDemangle =
    unsafe extern "C" fn(*const c_char, *mut c_char, *mut usize, *mut c_int) -> *mut c_char;

/// A readable name: Rust's (`rustdemangle`), C++ through libstdc++'s
/// demangler when the process has it; anything else as it is.
pub fn demangle(name: &str) -> String {
    // LLVM's suffix on a local symbol it renamed (ThinLTO): not part of
    // the mangled name.
    let name = name.split_once(".llvm.").map_or(name, |(n, _)| n);
    if let Some(r) = super::rustdemangle::demangle(name) {
        return r;
    }
    if !name.starts_with("_Z") {
        return name.to_string();
    }
    let Some(f) = crate::sys::real::resolve(c"__cxa_demangle") else {
        return name.to_string();
    };
    // SAFETY: the symbol is libstdc++'s __cxa_demangle, of this signature.
    let f: CxaDemangle = unsafe { std::mem::transmute::<*mut c_void, CxaDemangle>(f) };
    let Ok(c) = std::ffi::CString::new(name) else {
        return name.to_string();
    };
    let mut status: c_int = -1;
    // SAFETY: a NUL-terminated name; NULL buffer: the demangler mallocs
    // the result, freed below.
    let out = unsafe {
        f(
            c.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut status,
        )
    };
    if status != 0 || out.is_null() {
        return name.to_string();
    }
    // SAFETY: a NUL-terminated string the demangler made.
    let s = unsafe { CStr::from_ptr(out) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: allocated with malloc by __cxa_demangle.
    unsafe { libc::free(out.cast()) };
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_a_function_of_this_binary() {
        // This test binary has a symbol table: a function of it is named
        // even though it is not in the dynamic symbol table.
        let here = names_a_function_of_this_binary as fn() as usize;
        let n = function_name(here).expect("named");
        assert!(n.contains("names_a_function_of_this_binary"), "{n}");
    }
}
