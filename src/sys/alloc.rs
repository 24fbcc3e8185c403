//! The runtime's own heap: glibc's malloc, called by its internal names,
//! never the program's `malloc`.
//!
//! # Why
//!
//! The program's `malloc` may be another allocator (redis-server links
//! jemalloc) that calls interposed functions from inside itself:
//! `pthread_mutex_lock` on a contended arena lock, `pthread_setspecific`
//! when it sets up a thread's state at the thread's first call. Those hooks
//! park or keep values, which allocates; had the runtime's allocations gone
//! to the program's `malloc`, they would re-enter it half way through
//! (jemalloc, in a new thread: a NULL tcache bin read at once, SIGSEGV, or
//! a self-deadlock on its own mutex). glibc's `pthread_mutex_lock` never
//! allocates, so a program never sees that natively.
//!
//! `__libc_malloc` and friends are glibc's exported names of its own
//! allocator (GLIBC_2.2.5); it takes only glibc's internal locks and calls
//! nothing interposable. Memory the runtime gets from here is only ever
//! freed by the runtime; what it hands to the program or takes from it
//! (`__cxa_demangle`'s string) goes through `libc::malloc`/`libc::free`.
//!
//! Those names are looked up with glibc's symbol version, not linked by
//! name: an allocator built to replace malloc defines them too (mimalloc,
//! statically linked into mold; tcmalloc; jemalloc), and a reference by
//! name binds to the executable's first.
//! mold aborted at start under corun: mimalloc, setting itself up at its
//! first call, opened a file; corun's `open` hook allocated, and that
//! allocation re-entered mimalloc (`own_libc_malloc`).

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};

/// glibc's own `__libc_malloc`, `__libc_calloc`, `__libc_realloc`,
/// `__libc_memalign` and `__libc_free`, in that order, once looked up.
static FNS: [AtomicPtr<c_void>; 5] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 5];
const NAMES: [&std::ffi::CStr; 5] = [
    c"__libc_malloc",
    c"__libc_calloc",
    c"__libc_realloc",
    c"__libc_memalign",
    c"__libc_free",
];

/// glibc's function number `i` of `FNS`.
#[inline]
fn glibc(i: usize) -> *mut c_void {
    let p = FNS[i].load(Ordering::Acquire);
    if p.is_null() {
        look_up(i)
    } else {
        p
    }
}

/// The version glibc gave its `__libc_*` names on this architecture.
#[cfg(target_arch = "x86_64")]
const GLIBC_VERSION: &std::ffi::CStr = c"GLIBC_2.2.5";
#[cfg(target_arch = "aarch64")]
const GLIBC_VERSION: &std::ffi::CStr = c"GLIBC_2.17";

/// Looks the five up by name and glibc's version (`dlvsym`): a versioned
/// lookup passes over an allocator's unversioned definitions wherever
/// they are loaded, before libcorun.so (the executable's: mold) or after it
/// (a library the program links: tcmalloc, mimalloc), which plain `dlsym`,
/// `RTLD_NEXT` included, would return. It allocates nothing when the name
/// is found (glibc is loaded at start-up, so no dependency is recorded; a
/// handle from `dlopen` would have allocated, through the program's
/// malloc). Racing first calls store the same addresses.
#[cold]
fn look_up(i: usize) -> *mut c_void {
    for (slot, name) in FNS.iter().zip(NAMES) {
        // SAFETY: both strings are NUL-terminated; RTLD_DEFAULT is valid.
        let p = unsafe { libc::dlvsym(libc::RTLD_DEFAULT, name.as_ptr(), GLIBC_VERSION.as_ptr()) };
        if p.is_null() {
            crate::sys::raw_stderr(b"corun: cannot find glibc's ");
            crate::sys::raw_stderr(name.to_bytes());
            crate::sys::raw_stderr(b"\n");
            // SAFETY: abort never returns.
            unsafe { libc::abort() }
        }
        slot.store(p, Ordering::Release);
    }
    FNS[i].load(Ordering::Acquire)
}

// SAFETY (for the five below): each address is glibc's function of that
// name (`look_up`), whose C type the signature restates.
unsafe fn libc_malloc(size: usize) -> *mut c_void {
    // SAFETY: see above.
    unsafe {
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(usize) -> *mut c_void>(glibc(0))(
            size,
        )
    }
}
unsafe fn libc_calloc(n: usize, size: usize) -> *mut c_void {
    // SAFETY: see above.
    unsafe {
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(usize, usize) -> *mut c_void>(
            glibc(1),
        )(n, size)
    }
}
unsafe fn libc_realloc(p: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: see above.
    unsafe {
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void>(
            glibc(2),
        )(p, size)
    }
}
unsafe fn libc_memalign(align: usize, size: usize) -> *mut c_void {
    // SAFETY: see above.
    unsafe {
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(usize, usize) -> *mut c_void>(
            glibc(3),
        )(align, size)
    }
}
unsafe fn libc_free(p: *mut c_void) {
    // SAFETY: see above.
    unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_void)>(glibc(4))(p) }
}

/// What glibc's malloc guarantees without being asked (x86_64).
const MIN_ALIGN: usize = 16;

pub struct LibcHeap;

// SAFETY: glibc's allocator returns memory aligned to MIN_ALIGN, or to the
// alignment asked of memalign; blocks are freed and resized only by the
// functions of the same allocator.
unsafe impl GlobalAlloc for LibcHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= MIN_ALIGN && layout.align() <= layout.size() {
            // The tasks' size, on a worker: its cache first (`block_cache`).
            if let Some(c) = super::block_cache::mine(layout.size()) {
                let p = c.take();
                if !p.is_null() {
                    return p;
                }
            }
            // SAFETY: plain allocation.
            unsafe { libc_malloc(layout.size()) as *mut u8 }
        } else {
            // SAFETY: a power-of-two alignment (Layout's invariant).
            unsafe { libc_memalign(layout.align(), layout.size()) as *mut u8 }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= MIN_ALIGN && layout.align() <= layout.size() {
            // SAFETY: plain allocation.
            unsafe { libc_calloc(1, layout.size()) as *mut u8 }
        } else {
            // SAFETY: as in alloc; the block is zeroed before use.
            unsafe {
                let p = self.alloc(layout);
                if !p.is_null() {
                    std::ptr::write_bytes(p, 0, layout.size());
                }
                p
            }
        }
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        if layout.align() <= MIN_ALIGN {
            if let Some(c) = super::block_cache::mine(layout.size()) {
                if c.give(p) {
                    return;
                }
            }
        }
        // SAFETY: `p` came from this allocator (GlobalAlloc's contract).
        unsafe { libc_free(p as *mut c_void) }
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= MIN_ALIGN && layout.align() <= new_size {
            // SAFETY: `p` came from this allocator with malloc's alignment.
            unsafe { libc_realloc(p as *mut c_void, new_size) as *mut u8 }
        } else {
            // SAFETY: a fresh block of the new size, the old contents
            // copied, the old block freed (GlobalAlloc's own fallback).
            unsafe {
                let new = self.alloc(Layout::from_size_align_unchecked(new_size, layout.align()));
                if !new.is_null() {
                    std::ptr::copy_nonoverlapping(p, new, layout.size().min(new_size));
                    self.dealloc(p, layout);
                }
                new
            }
        }
    }
}
