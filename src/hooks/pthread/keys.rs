//! Thread-specific data of coroutine threads: `pthread_key_create`,
//! `pthread_key_delete`, `pthread_getspecific`, `pthread_setspecific` and
//! glibc's old aliases (see mod.rs).

use super::*;

/// Per key: generation (bumped by create and delete) and destructor.
static KEY_GEN: [AtomicU64; KEYS_MAX] = [const { AtomicU64::new(0) }; KEYS_MAX];
static KEY_DTOR: [AtomicUsize; KEYS_MAX] = [const { AtomicUsize::new(0) }; KEYS_MAX];

/// Whether this caller keeps its values in its task (every coroutine but
/// `main`, which is the main thread).
#[inline]
pub(super) fn coroutine_tsd() -> bool {
    current().is_some_and(|t| t.id != MAIN_ID)
}

#[no_mangle]
pub unsafe extern "C" fn pthread_key_create(
    key: *mut pthread_key_t,
    dtor: Option<unsafe extern "C" fn(*mut c_void)>,
) -> c_int {
    // SAFETY: the caller's contract; glibc allocates the key number and
    // keeps the destructor for native threads.
    let r = unsafe { real::pthread_key_create(key, dtor) };
    if r == 0 {
        // SAFETY: glibc just wrote the key.
        let k = unsafe { *key } as usize;
        if k < KEYS_MAX {
            KEY_DTOR[k].store(dtor.map_or(0, |d| d as usize), Ordering::Release);
            KEY_GEN[k].fetch_add(1, Ordering::AcqRel);
        }
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn __pthread_getspecific(key: pthread_key_t) -> *mut c_void {
    // SAFETY: forwarded.
    unsafe { pthread_getspecific(key) }
}

#[no_mangle]
pub unsafe extern "C" fn __pthread_setspecific(key: pthread_key_t, value: *const c_void) -> c_int {
    // SAFETY: forwarded.
    unsafe { pthread_setspecific(key, value) }
}

/// The old exported aliases (glibc compat symbols) some libraries still call.
#[no_mangle]
pub unsafe extern "C" fn __pthread_key_create(
    key: *mut pthread_key_t,
    dtor: Option<unsafe extern "C" fn(*mut c_void)>,
) -> c_int {
    // SAFETY: the caller's contract, forwarded.
    unsafe { pthread_key_create(key, dtor) }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_key_delete(key: pthread_key_t) -> c_int {
    // SAFETY: plain integer.
    let r = unsafe { real::pthread_key_delete(key) };
    if r == 0 && (key as usize) < KEYS_MAX {
        KEY_DTOR[key as usize].store(0, Ordering::Release);
        KEY_GEN[key as usize].fetch_add(1, Ordering::AcqRel);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn pthread_getspecific(key: pthread_key_t) -> *mut c_void {
    let k = key as usize;
    if !coroutine_tsd() || k >= KEYS_MAX {
        // SAFETY: plain integer.
        return unsafe { real::pthread_getspecific(key) };
    }
    let gen = KEY_GEN[k].load(Ordering::Acquire);
    with_local(|l| match l.tsd.get(k) {
        Some(&(g, v)) if g == gen => v,
        _ => std::ptr::null_mut(),
    })
    .unwrap_or(std::ptr::null_mut())
}

#[no_mangle]
pub unsafe extern "C" fn pthread_setspecific(key: pthread_key_t, value: *const c_void) -> c_int {
    let k = key as usize;
    if !coroutine_tsd() || k >= KEYS_MAX {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_setspecific(key, value) };
    }
    let gen = KEY_GEN[k].load(Ordering::Acquire);
    if gen != 0 && gen & 1 == 0 {
        // Deleted. (0: a key corun did not see created, e.g. by glibc's
        // internal name; glibc checks it.)
        return libc::EINVAL;
    }
    with_local(|l| {
        if l.tsd.len() <= k {
            l.tsd.resize(k + 1, (0, std::ptr::null_mut()));
        }
        l.tsd[k] = (gen, value as *mut c_void);
    })
    .map_or(libc::ENOMEM, |_| 0)
}

/// Runs the destructors of the running coroutine's keys, as glibc does at
/// thread exit: up to four passes while values remain.
pub(super) fn run_key_destructors() {
    for _ in 0..DESTRUCTOR_ITERATIONS {
        let mut ran = false;
        let mut k = 0;
        loop {
            // Take one (destructor, value) at a time: a destructor may set
            // values again.
            let next = with_local(|l| {
                while k < l.tsd.len() {
                    let (g, v) = l.tsd[k];
                    k += 1;
                    if v.is_null() || g != KEY_GEN[k - 1].load(Ordering::Acquire) {
                        continue;
                    }
                    l.tsd[k - 1].1 = std::ptr::null_mut();
                    let d = KEY_DTOR[k - 1].load(Ordering::Acquire);
                    if d != 0 {
                        return Some((d, v));
                    }
                }
                None
            })
            .flatten();
            match next {
                Some((d, v)) => {
                    // SAFETY: `d` was registered by pthread_key_create as a
                    // `void (*)(void *)`.
                    let f: unsafe extern "C" fn(*mut c_void) = unsafe { std::mem::transmute(d) };
                    // SAFETY: calling the program's destructor with its value.
                    unsafe { f(v) };
                    ran = true;
                }
                None => break,
            }
        }
        if !ran {
            break;
        }
    }
}
