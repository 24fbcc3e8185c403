//! Build script: gives libcorun.so its soname, and its own copy of the
//! stack unwinder.
//!
//! A program linked with `-lcorun` records `libcorun.so` as needed; run
//! with `LD_PRELOAD=/some/prefix/lib/libcorun.so`, the loader matches that
//! need against the preloaded library by its soname, so the program runs
//! without an rpath or LD_LIBRARY_PATH pointing at the install
//! (docs/ARCHITECTURE.md §10, installation).
//!
//! The unwinder: Rust's std on linux-gnu links `-lgcc_s`, so every process
//! under corun loaded libgcc_s.so.1, whose constructor
//! (`__cpu_indicator_init`) runs about ten `cpuid` instructions. On a
//! virtual machine each is a trap to the hypervisor (13 us on this one):
//! a `dlopen` of libgcc_s took 160 us against 31 us for libz, paid by
//! every process started under corun, a C program included, which
//! natively never loads it (glibc opens it only for a thread's
//! cancellation). Here `-lgcc_s` finds a linker script in OUT_DIR that
//! names gcc's static `libgcc_eh.a` instead: the same unwinder, linked
//! into libcorun.so and not exported (rustc's version script keeps only
//! corun's own symbols). A program that loads libgcc_s itself (C++) keeps
//! its own; the two share the unwinding ABI (`_Unwind_Exception`, the
//! context accessors), and a forced unwind started by corun's copy and
//! resumed by libgcc_s's in a C++ landing pad works as between any two
//! objects linked with `-static-libgcc` (`exit_cancel`,
//! `cxx_exit_cancel`). Where the compiler has no `libgcc_eh.a`, the
//! shared library is linked as before.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcorun.so");
    // The functions every forked child runs (the fork hook, the runtime's
    // reset in the child, read, write, close, syscall) are marked
    // `#[link_section = ".text.hot.corun"]`, and kept together in the
    // output's `.text.hot` (and the compiler's cold code in
    // `.text.unlikely`) rather than spread over 1.5 MB of text. A child's
    // text is not copied at fork: its first run of each 64 KiB the kernel
    // maps around a fault is a page fault, and those pages are unmapped
    // again at its exit. bench_baselines fork (a child that echoes 5
    // bytes and exits): 51 page faults a child before, 43 with them
    // together (natively 26), 245 us against 224 a fork (docs/ARCHITECTURE.md §5.5).
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,keep-text-section-prefix");
    // The statics a forked child writes (`#[link_section = "corun_fork"]`,
    // about 2.7 KiB) are one output section, but the linker would start
    // it wherever `.data` ends: across a page boundary, each store after
    // the fork copied two pages. This script, added to the linker's
    // default layout (INSERT), starts the section on a page of its own.
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let fork_ld = Path::new(&out).join("corun_fork.ld");
    std::fs::write(
        &fork_ld,
        "SECTIONS\n{\n  corun_fork : ALIGN(4096) { *(corun_fork) }\n}\nINSERT AFTER .data;\n",
    )
    .expect("OUT_DIR is writable");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-T,{}", fork_ld.display());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CC");
    if let Some(eh) = static_unwinder() {
        let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
        let script = Path::new(&out).join("libgcc_s.so");
        std::fs::write(&script, format!("INPUT({eh})\n")).expect("OUT_DIR is writable");
        println!("cargo:rustc-link-search=native={out}");
    }
}

/// The absolute path of the C compiler's `libgcc_eh.a`, if it has one.
fn static_unwinder() -> Option<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?.trim().to_string();
    // Without the file, gcc prints the bare name back.
    (Path::new(&path).is_absolute() && Path::new(&path).is_file()).then_some(path)
}
