//! The unwinder a thread's exit runs on: libgcc_s's, opened when first
//! needed, as glibc does for `pthread_exit` and `pthread_cancel`
//! (its `__libc_unwind_link_get`).
//!
//! libcorun.so carries a private copy of the unwinder (gcc's static
//! `libgcc_eh.a`, `build.rs`), so that a process does not load libgcc_s
//! just for corun. That copy must not unwind the program's frames: a C++
//! personality routine (libstdc++) reads the unwind context through
//! libgcc_s's accessors, whose tables only libgcc_s's own unwinder fills
//! (`_Unwind_GetGR` aborted on the context of corun's copy:
//! `cxx_exit_cancel`). So a forced unwind, and the stop function's look
//! at each frame, use libgcc_s's entry points, found with `dlopen` and
//! `dlsym` the first time a thread exits or is cancelled: in normal
//! context (`prepare`), never in a signal handler. Where libgcc_s cannot
//! be opened, no program library can be using it, and the private copy
//! serves.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use crate::sched::identity::UnwindException;

/// `_Unwind_Stop_Fn`.
pub(crate) type StopFn =
    extern "C" fn(c_int, c_int, u64, *mut UnwindException, *mut c_void, *mut c_void) -> c_int;
type ForcedUnwindFn = unsafe extern "C" fn(*mut UnwindException, StopFn, *mut c_void) -> c_int;
type GetCfaFn = unsafe extern "C" fn(*mut c_void) -> usize;

extern "C" {
    // The private copy (libgcc_eh.a), or libgcc_s where the build found no
    // static one.
    fn _Unwind_ForcedUnwind(exc: *mut UnwindException, stop: StopFn, param: *mut c_void) -> c_int;
    fn _Unwind_GetCFA(ctx: *mut c_void) -> usize;
}

/// The two entry points a thread's exit uses, from one unwinder.
pub(crate) struct Unwinder {
    pub forced_unwind: ForcedUnwindFn,
    pub get_cfa: GetCfaFn,
}

static UNWINDER: OnceLock<Unwinder> = OnceLock::new();

/// Opens libgcc_s if it was not yet: call in normal context before an
/// exit or cancellation may act (`pthread_cancel`, `pthread_exit`,
/// asynchronous cancellation being enabled).
pub(crate) fn prepare() {
    unwinder();
}

/// The unwinder to use (opened on first use).
pub(crate) fn unwinder() -> &'static Unwinder {
    UNWINDER.get_or_init(|| {
        open_libgcc_s().unwrap_or(Unwinder {
            forced_unwind: _Unwind_ForcedUnwind,
            get_cfa: _Unwind_GetCFA,
        })
    })
}

fn open_libgcc_s() -> Option<Unwinder> {
    // SAFETY: a constant, NUL-terminated name; the handle is never closed,
    // so the symbols found in it stay valid for the process's life.
    let h = unsafe { libc::dlopen(c"libgcc_s.so.1".as_ptr(), libc::RTLD_NOW) };
    if h.is_null() {
        return None;
    }
    // SAFETY: `h` is a live handle and the names are NUL-terminated.
    let (fu, cfa) = unsafe {
        (
            libc::dlsym(h, c"_Unwind_ForcedUnwind".as_ptr()),
            libc::dlsym(h, c"_Unwind_GetCFA".as_ptr()),
        )
    };
    if fu.is_null() || cfa.is_null() {
        return None;
    }
    // SAFETY: libgcc_s's exported functions with these C signatures
    // (unwind.h).
    unsafe {
        Some(Unwinder {
            forced_unwind: std::mem::transmute::<*mut c_void, ForcedUnwindFn>(fu),
            get_cfa: std::mem::transmute::<*mut c_void, GetCfaFn>(cfa),
        })
    }
}
