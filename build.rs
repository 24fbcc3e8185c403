//! Build script: gives libcorun.so its soname.
//!
//! A program linked with `-lcorun` records `libcorun.so` as needed; run
//! with `LD_PRELOAD=/some/prefix/lib/libcorun.so`, the loader matches that
//! need against the preloaded library by its soname, so the program runs
//! without an rpath or LD_LIBRARY_PATH pointing at the install
//! (docs/ARCHITECTURE.md §10, installation).

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcorun.so");
    println!("cargo:rerun-if-changed=build.rs");
}
