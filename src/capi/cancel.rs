//! Cancel tokens and structured scopes of `include/corun.h`, on
//! `sched::token` and `sched::scope`.
//!
//! A `corun_cancel_source_t *` is a boxed counted reference to a token;
//! the `corun_token_t *` it gives out is the token itself, valid while
//! its source lives or a coroutine runs under it (each such coroutine
//! holds a count). A `corun_scope_t *` is a counted `Scope`.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::sched::scope::{Member, Scope};
use crate::sched::token::{self, Inner};
use crate::sched::Entry;
use crate::sys::set_errno;

/// `corun_cancel_source_t`.
pub struct Source(Arc<Inner>);

/// A C function and its argument, run on the cancelling thread.
struct Call(extern "C" fn(*mut c_void), *mut c_void);
// SAFETY: the program hands the argument to whichever thread cancels, as
// documented in corun.h (callbacks run on the cancelling thread).
unsafe impl Send for Call {}

/// A counted reference to the token behind a `corun_token_t *`.
fn token_ref(p: *const Inner) -> Option<Arc<Inner>> {
    if p.is_null() {
        return None;
    }
    // SAFETY: a token pointer handed out by this file (Arc::as_ptr of a
    // token its source or a coroutine still holds: the caller's contract);
    // taking a count of our own keeps it alive for as long as we need.
    unsafe {
        Arc::increment_strong_count(p);
        Some(Arc::from_raw(p))
    }
}

fn deadline_in(ns: u64) -> Option<u64> {
    (ns != 0).then(|| crate::sys::now_ns().saturating_add(ns))
}

/// A cancel source, cancelled with `parent` (NULL: none) and after
/// `timeout_ns` (0: no deadline).
#[no_mangle]
pub extern "C" fn corun_cancel_source_new(parent: *const Inner, timeout_ns: u64) -> *mut Source {
    let parent = token_ref(parent);
    let t = Inner::new(parent.as_ref(), deadline_in(timeout_ns));
    Box::into_raw(Box::new(Source(t)))
}

/// The source's token.
#[no_mangle]
pub extern "C" fn corun_cancel_token(src: *const Source) -> *const Inner {
    // SAFETY: a live source or NULL (the caller's contract).
    unsafe { src.as_ref() }.map_or(std::ptr::null(), |s| Arc::as_ptr(&s.0))
}

/// Cancels: 0, EALREADY if it was cancelled before, EINVAL for NULL.
#[no_mangle]
pub extern "C" fn corun_cancel(src: *const Source) -> c_int {
    // SAFETY: as above.
    match unsafe { src.as_ref() } {
        Some(s) if s.0.cancel() => 0,
        Some(_) => libc::EALREADY,
        None => libc::EINVAL,
    }
}

/// Frees a source (its token lives on while coroutines run under it).
#[no_mangle]
pub extern "C" fn corun_cancel_source_free(src: *mut Source) {
    if !src.is_null() {
        // SAFETY: a source from corun_cancel_source_new, freed once.
        drop(unsafe { Box::from_raw(src) });
    }
}

/// 1 if the token is cancelled, 0 if not (or NULL).
#[no_mangle]
pub extern "C" fn corun_token_cancelled(tok: *const Inner) -> c_int {
    token_ref(tok).map_or(0, |t| t.is_cancelled() as c_int)
}

/// Runs `f(arg)` once when the token is cancelled (at once, here, if it
/// is already: then `*reg` is 0). 0 or EINVAL.
///
/// # Safety
/// `reg` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn corun_token_register(
    tok: *const Inner,
    f: Option<extern "C" fn(*mut c_void)>,
    arg: *mut c_void,
    reg: *mut u64,
) -> c_int {
    let (Some(t), Some(f)) = (token_ref(tok), f) else {
        return libc::EINVAL;
    };
    let call = Call(f, arg);
    let id = match t.register(Box::new(move || {
        let c = call;
        (c.0)(c.1)
    })) {
        Ok(id) => id,
        Err(cb) => {
            cb();
            0
        }
    };
    if !reg.is_null() {
        // SAFETY: writable, the caller's contract.
        unsafe { *reg = id };
    }
    0
}

/// Removes a registration that has not run: 0, or ENOENT (it ran, runs
/// now, or never was), EINVAL for NULL.
#[no_mangle]
pub extern "C" fn corun_token_unregister(tok: *const Inner, reg: u64) -> c_int {
    match token_ref(tok) {
        Some(t) if t.unregister(reg) => 0,
        Some(_) => libc::ENOENT,
        None => libc::EINVAL,
    }
}

/// The token the running coroutine runs under (NULL: none, or not a
/// coroutine).
#[no_mangle]
pub extern "C" fn corun_token_current() -> *const Inner {
    token::current_token().map_or(std::ptr::null(), |t| Arc::as_ptr(&t))
}

/// Spawns `f(arg)` as a joinable coroutine running under `tok`.
#[no_mangle]
pub extern "C" fn corun_spawn_under(
    tok: *const Inner,
    f: Option<extern "C" fn(*mut c_void) -> *mut c_void>,
    arg: *mut c_void,
) -> *mut c_void {
    let Some(f) = f else {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    };
    let t = token_ref(tok);
    super::spawn_handle(Entry::Rust(Box::new(move || {
        let _ = token::enter(t);
        let r = f(arg);
        let _ = token::enter(None);
        r
    })))
}

/// Runs `f(arg)` in the running coroutine under `tok` (NULL: no token),
/// then goes back to the token it ran under. 0, EINVAL, or EPERM outside
/// a coroutine.
///
/// # Safety
/// `result` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn corun_run_under(
    tok: *const Inner,
    f: Option<extern "C" fn(*mut c_void) -> *mut c_void>,
    arg: *mut c_void,
    result: *mut *mut c_void,
) -> c_int {
    let Some(f) = f else {
        return libc::EINVAL;
    };
    let Ok(prev) = token::enter(token_ref(tok)) else {
        return libc::EPERM;
    };
    let r = f(arg);
    let _ = token::enter(prev);
    if !result.is_null() {
        // SAFETY: writable, the caller's contract.
        unsafe { *result = r };
    }
    0
}

// ------------------------------------------------------------------ scope

/// Runs `f` with the scope behind a handle (None for NULL).
fn with_scope<R>(s: *const Scope, f: impl FnOnce(&Arc<Scope>) -> R) -> Option<R> {
    if s.is_null() {
        return None;
    }
    // SAFETY: `s` came from Arc::into_raw in corun_scope_new and is not
    // freed (the caller's contract); ManuallyDrop leaves its count alone.
    let a = std::mem::ManuallyDrop::new(unsafe { Arc::from_raw(s) });
    Some(f(&a))
}

/// A scope under the running coroutine's token, cancelled after
/// `timeout_ns` (0: no deadline).
#[no_mangle]
pub extern "C" fn corun_scope_new(timeout_ns: u64) -> *const Scope {
    Arc::into_raw(Scope::new(deadline_in(timeout_ns)))
}

/// Spawns `f(arg)` into the scope: 0, EINVAL, EAGAIN (no coroutine).
#[no_mangle]
pub extern "C" fn corun_scope_spawn(s: *const Scope, f: Option<Member>, arg: *mut c_void) -> c_int {
    let Some(f) = f else {
        return libc::EINVAL;
    };
    with_scope(s, |s| {
        s.spawn(f, arg, super::stack_size()).err().unwrap_or(0)
    })
    .unwrap_or(libc::EINVAL)
}

/// Cancels the scope's members: 0, EALREADY, EINVAL.
#[no_mangle]
pub extern "C" fn corun_scope_cancel(s: *const Scope) -> c_int {
    match with_scope(s, |s| s.cancel()) {
        Some(true) => 0,
        Some(false) => libc::EALREADY,
        None => libc::EINVAL,
    }
}

/// Waits until every member returned: the first non-zero result, or 0.
/// EINVAL for NULL.
#[no_mangle]
pub extern "C" fn corun_scope_wait(s: *const Scope) -> c_int {
    with_scope(s, |s| s.wait()).unwrap_or(libc::EINVAL)
}

/// The scope's token.
#[no_mangle]
pub extern "C" fn corun_scope_token(s: *const Scope) -> *const Inner {
    with_scope(s, |s| Arc::as_ptr(s.token())).unwrap_or(std::ptr::null())
}

/// Cancels what still runs in the scope, waits for it, frees the scope.
#[no_mangle]
pub extern "C" fn corun_scope_free(s: *const Scope) {
    let known = with_scope(s, |sc| {
        if sc.live() != 0 {
            sc.cancel();
        }
        sc.wait();
    });
    if known.is_some() {
        // SAFETY: the count corun_scope_new gave the caller, given back once.
        drop(unsafe { Arc::from_raw(s) });
    }
}
