//! C11 `<threads.h>`: `thrd_*`, `mtx_*`, `cnd_*`, `call_once`, `tss_*`.
//!
//! glibc implements each of these on its pthread functions, but calls
//! them internally (`__pthread_create`, `__pthread_mutex_lock`...), not
//! through the PLT: no pthread hook saw them. `thrd_create` made a kernel
//! thread, and a C11 wait in a coroutine (`mtx_lock`, `cnd_wait`,
//! `thrd_join`, `thrd_sleep`) held its worker, so a program mixing C11 and
//! pthread waits could deadlock. Here each one is the matching pthread
//! hook of corun's, with glibc's mapping of results (`thrd_err_map` in
//! glibc's `thrd_priv.h`): 0 is `thrd_success`, EBUSY `thrd_busy`,
//! ETIMEDOUT `thrd_timedout`, ENOMEM `thrd_nomem`, anything else
//! `thrd_error`. A `thrd_t` is a `pthread_t`, a `mtx_t` a
//! `pthread_mutex_t`, a `cnd_t` a `pthread_cond_t`, a `once_flag` a
//! `pthread_once_t` and a `tss_t` a `pthread_key_t` (glibc's static
//! asserts say so), so a thread made by `thrd_create` is a coroutine like
//! one made by `pthread_create`, and the two kinds of calls mix.
//!
//! A C11 start routine returns `int`; glibc stores it as the thread's
//! `void *` value `(void *)(uintptr_t)result`, `thrd_exit` likewise, and
//! `thrd_join` casts it back. `thrd_sleep` is `clock_nanosleep` on
//! CLOCK_REALTIME, 0, -1 when a signal handler interrupted it and -2 on
//! another error.
//!
//! Left to glibc (they never wait): `mtx_init`, `mtx_destroy`, `cnd_init`,
//! `cnd_destroy`. With CORUN_THREADS=native, or a start routine corun lets
//! schedule itself (`pthread/foreign.rs`), `thrd_create` is glibc's.

use std::ffi::{c_int, c_uint, c_void};

use libc::{pthread_cond_t, pthread_key_t, pthread_mutex_t, pthread_t, timespec};

use super::pthread::{self, coroutine_threads, Start};
use super::pthread_sync as sync;

type C11Start = extern "C" fn(*mut c_void) -> c_int;

mod real {
    use libc::{c_int, c_void, pthread_t};
    crate::sys::real::real_fns! {
        fn thrd_create(t: *mut pthread_t, f: super::C11Start, arg: *mut c_void) -> c_int;
    }
}

const THRD_SUCCESS: c_int = 0;
const THRD_BUSY: c_int = 1;
const THRD_ERROR: c_int = 2;
const THRD_NOMEM: c_int = 3;
const THRD_TIMEDOUT: c_int = 4;

/// glibc's `thrd_err_map`: a pthread error number as a C11 result.
fn map(err: c_int) -> c_int {
    match err {
        0 => THRD_SUCCESS,
        libc::ENOMEM => THRD_NOMEM,
        libc::ETIMEDOUT => THRD_TIMEDOUT,
        libc::EBUSY => THRD_BUSY,
        _ => THRD_ERROR,
    }
}

#[no_mangle]
pub unsafe extern "C" fn thrd_create(
    thr: *mut pthread_t,
    func: Option<C11Start>,
    arg: *mut c_void,
) -> c_int {
    let Some(func) = func else {
        return THRD_ERROR;
    };
    if !coroutine_threads() || pthread::foreign::schedules_itself(func as usize) {
        // SAFETY: the caller's contract.
        return unsafe { real::thrd_create(thr, func, arg) };
    }
    // SAFETY: the caller's contract (a writable thrd_t); NULL attributes
    // are glibc's for C11 threads (the default stack, joinable).
    map(unsafe { pthread::create_coroutine(thr, std::ptr::null(), Start::C11(func), arg) })
}

#[no_mangle]
pub unsafe extern "C" fn thrd_join(thr: pthread_t, res: *mut c_int) -> c_int {
    let mut value: *mut c_void = std::ptr::null_mut();
    // SAFETY: a local out-pointer; the handle is the caller's.
    let r = unsafe { pthread::pthread_join(thr, &mut value) };
    if r == 0 && !res.is_null() {
        // SAFETY: the caller's contract makes a non-NULL res writable.
        unsafe { *res = value as usize as c_int };
    }
    map(r)
}

#[no_mangle]
pub unsafe extern "C" fn thrd_exit(res: c_int) -> ! {
    // SAFETY: ends the calling thread, as glibc's thrd_exit does.
    unsafe { pthread::pthread_exit(res as isize as *mut c_void) }
}

#[no_mangle]
pub unsafe extern "C" fn thrd_detach(thr: pthread_t) -> c_int {
    // SAFETY: the caller's handle.
    map(unsafe { pthread::pthread_detach(thr) })
}

#[no_mangle]
pub unsafe extern "C" fn thrd_current() -> pthread_t {
    // SAFETY: no arguments.
    unsafe { pthread::pthread_self() }
}

#[no_mangle]
pub extern "C" fn thrd_equal(a: pthread_t, b: pthread_t) -> c_int {
    pthread::pthread_equal(a, b)
}

#[no_mangle]
pub unsafe extern "C" fn thrd_sleep(req: *const timespec, rem: *mut timespec) -> c_int {
    // SAFETY: the caller's contract, as glibc forwards it.
    match unsafe { super::sleep::clock_nanosleep(libc::CLOCK_REALTIME, 0, req, rem) } {
        0 => 0,
        libc::EINTR => -1,
        _ => -2,
    }
}

#[no_mangle]
pub unsafe extern "C" fn thrd_yield() {
    // SAFETY: no arguments.
    unsafe { super::signal::sched_yield() };
}

#[no_mangle]
pub unsafe extern "C" fn mtx_lock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's mtx_t is a pthread_mutex_t.
    map(unsafe { sync::pthread_mutex_lock(m) })
}

#[no_mangle]
pub unsafe extern "C" fn mtx_timedlock(m: *mut pthread_mutex_t, abs: *const timespec) -> c_int {
    // SAFETY: as mtx_lock; the deadline is the caller's.
    map(unsafe { sync::pthread_mutex_timedlock(m, abs) })
}

#[no_mangle]
pub unsafe extern "C" fn mtx_trylock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: as mtx_lock.
    map(unsafe { sync::pthread_mutex_trylock(m) })
}

#[no_mangle]
pub unsafe extern "C" fn mtx_unlock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: as mtx_lock.
    map(unsafe { sync::pthread_mutex_unlock(m) })
}

#[no_mangle]
pub unsafe extern "C" fn cnd_wait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's cnd_t and mtx_t are glibc's pthread types.
    map(unsafe { sync::pthread_cond_wait(c, m) })
}

#[no_mangle]
pub unsafe extern "C" fn cnd_timedwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: as cnd_wait; the deadline (CLOCK_REALTIME) is the caller's.
    map(unsafe { sync::pthread_cond_timedwait(c, m, abs) })
}

#[no_mangle]
pub unsafe extern "C" fn cnd_signal(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: as cnd_wait.
    map(unsafe { sync::pthread_cond_signal(c) })
}

#[no_mangle]
pub unsafe extern "C" fn cnd_broadcast(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: as cnd_wait.
    map(unsafe { sync::pthread_cond_broadcast(c) })
}

#[no_mangle]
pub unsafe extern "C" fn call_once(flag: *mut c_int, func: Option<unsafe extern "C" fn()>) {
    // SAFETY: a once_flag is a pthread_once_t.
    unsafe { sync::pthread_once(flag, func) };
}

#[no_mangle]
pub unsafe extern "C" fn tss_create(
    key: *mut pthread_key_t,
    dtor: Option<unsafe extern "C" fn(*mut c_void)>,
) -> c_int {
    // SAFETY: a tss_t is a pthread_key_t; the destructor has its type.
    map(unsafe { pthread::pthread_key_create(key, dtor) })
}

#[no_mangle]
pub unsafe extern "C" fn tss_get(key: c_uint) -> *mut c_void {
    // SAFETY: as tss_create.
    unsafe { pthread::pthread_getspecific(key) }
}

#[no_mangle]
pub unsafe extern "C" fn tss_set(key: c_uint, value: *mut c_void) -> c_int {
    // SAFETY: as tss_create.
    map(unsafe { pthread::pthread_setspecific(key, value) })
}

#[no_mangle]
pub unsafe extern "C" fn tss_delete(key: c_uint) {
    // SAFETY: as tss_create.
    unsafe { pthread::pthread_key_delete(key) };
}
