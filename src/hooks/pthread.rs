//! Threads as coroutines: `pthread_create`, `join`, `detach`, `exit`,
//! `self`, `equal`, names, thread-specific data, and every libc function
//! that takes a `pthread_t`.
//!
//! # Mechanism
//!
//! With `CORUN_THREADS=coroutine` (the default) `pthread_create` spawns a
//! task on the least loaded worker instead of a kernel thread. The stack
//! size attribute becomes the coroutine's stack size; without one the
//! thread gets what it would get natively (glibc's default attribute:
//! RLIMIT_STACK, usually 8 MiB), which costs only address space until
//! touched (stacks are MAP_NORESERVE, pooled, and give their pages back when
//! idle; README "Transparent threads" has the measurements).
//!
//! **Handles.** A coroutine's `pthread_t` is `id << 1 | 1`. A real one is
//! the address of glibc's `struct pthread`, which is aligned, so one bit
//! tells them apart and every function below that takes a `pthread_t`
//! passes real handles straight to glibc, which would otherwise dereference
//! our odd value as its own structure. Ids are never reused, so a stale
//! handle finds nothing (ESRCH) instead of another thread.
//!
//! **Table.** Joinable and detached threads live in a sharded table from id
//! to (task, record) until joined, or until they end if detached. The
//! record holds what others may ask about a thread (its name, whether it
//! finished) and the thread's own task extension points to it, so a
//! thread's calls about itself need no lookup.
//!
//! **Ending.** When the start routine returns, or the thread calls
//! `pthread_exit` at any depth, the thread runs its C++ `thread_local`
//! destructors and key destructors (in the coroutine, so they may block).
//! `pthread_exit` (and a cancellation) first unwinds the frames as glibc
//! does (cancel.rs: C++ destructors, `pthread_cleanup_push` handlers); what
//! cannot be unwound is abandoned (`sched::exit_current`). When `main`
//! calls `pthread_exit`, it waits for every thread to end and the process
//! exits with status 0, as POSIX says.
//!
//! **Thread-specific data.** Keys are glibc's own (created with the real
//! `pthread_key_create`, so native threads keep using glibc's storage and
//! destructors). Each coroutine keeps its values in its task extension,
//! tagged with the key's generation so a deleted and re-created key reads
//! NULL. `main` keeps using the main thread's storage: it is pinned to
//! worker 0, which is the main thread.
//!
//! **Cancellation**: deferred, in cancel.rs.
//!
//! **Signals.** `pthread_kill` and `pthread_sigqueue` on a coroutine make
//! the signal pending at that coroutine, whose handler runs there
//! (`sched/signals.rs`); a signal at its default action goes to the worker
//! thread, where the kernel acts for the process. Signal 0 tests whether
//! the thread exists.

use std::any::Any;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use libc::{clockid_t, pthread_attr_t, pthread_key_t, pthread_t, size_t, timespec};

use crate::config::ThreadMode;
use crate::sched::fdtable::lock;
use crate::sched::sync::{self, Deadline, WaitResult};
use crate::sched::{self, current, current_id, current_ref, in_coroutine, JoinError, TaskRef};

mod real {
    use libc::{
        c_char, c_int, c_void, clockid_t, pthread_attr_t, pthread_key_t, pthread_t, size_t,
        timespec,
    };
    crate::sys::real::real_fns! {
        fn pthread_join(t: pthread_t, ret: *mut *mut c_void) -> c_int;
        fn pthread_tryjoin_np(t: pthread_t, ret: *mut *mut c_void) -> c_int;
        fn pthread_timedjoin_np(t: pthread_t, ret: *mut *mut c_void, abs: *const timespec) -> c_int;
        fn pthread_clockjoin_np(t: pthread_t, ret: *mut *mut c_void, clk: clockid_t, abs: *const timespec) -> c_int;
        fn pthread_exit(v: *mut c_void) -> !;
        fn pthread_self() -> pthread_t;
        fn pthread_kill(t: pthread_t, sig: c_int) -> c_int;
        fn pthread_sigqueue(t: pthread_t, sig: c_int, val: libc::sigval) -> c_int;
        fn raise(sig: c_int) -> c_int;
        fn pthread_getattr_np(t: pthread_t, attr: *mut pthread_attr_t) -> c_int;
        fn pthread_setname_np(t: pthread_t, name: *const c_char) -> c_int;
        fn pthread_getname_np(t: pthread_t, buf: *mut c_char, len: size_t) -> c_int;
        fn pthread_setaffinity_np(t: pthread_t, size: size_t, set: *const libc::cpu_set_t) -> c_int;
        fn pthread_getaffinity_np(t: pthread_t, size: size_t, set: *mut libc::cpu_set_t) -> c_int;
        fn pthread_getcpuclockid(t: pthread_t, clk: *mut clockid_t) -> c_int;
        fn pthread_setschedparam(t: pthread_t, policy: c_int, p: *const libc::sched_param) -> c_int;
        fn pthread_getschedparam(t: pthread_t, policy: *mut c_int, p: *mut libc::sched_param) -> c_int;
        fn pthread_setschedprio(t: pthread_t, prio: c_int) -> c_int;
        fn pthread_key_create(k: *mut pthread_key_t, d: Option<unsafe extern "C" fn(*mut c_void)>) -> c_int;
        fn pthread_key_delete(k: pthread_key_t) -> c_int;
        fn pthread_getspecific(k: pthread_key_t) -> *mut c_void;
        fn pthread_setspecific(k: pthread_key_t, v: *const c_void) -> c_int;
    }
}

// Attribute functions corun does not interpose: glibc's, called directly.
extern "C" {
    fn pthread_getattr_default_np(attr: *mut pthread_attr_t) -> c_int;
    fn pthread_attr_getdetachstate(attr: *const pthread_attr_t, state: *mut c_int) -> c_int;
    fn pthread_attr_setstack(attr: *mut pthread_attr_t, addr: *mut c_void, size: size_t) -> c_int;
}

type StartFn = extern "C" fn(*mut c_void) -> *mut c_void;

/// `main` is the first task the runtime makes (hooks/start.rs).
const MAIN_ID: u64 = 1;
/// PTHREAD_DESTRUCTOR_ITERATIONS.
const DESTRUCTOR_ITERATIONS: usize = 4;
/// PTHREAD_KEYS_MAX in glibc.
const KEYS_MAX: usize = 1024;
/// Length of a thread name with its NUL (TASK_COMM_LEN).
const NAME_LEN: usize = 16;

/// Whether `pthread_create` makes coroutines (runtime up, CORUN_THREADS
/// is `coroutine`).
#[inline]
pub(crate) fn coroutine_threads() -> bool {
    sched::runtime().is_some_and(|r| r.config.threads == ThreadMode::Coroutine)
}

#[inline]
fn encode(id: u64) -> pthread_t {
    ((id << 1) | 1) as pthread_t
}

/// The task id behind a coroutine handle; None for a real pthread_t.
#[inline]
fn decode(t: pthread_t) -> Option<u64> {
    (t & 1 == 1).then_some(t >> 1)
}

/// What other threads may ask about a coroutine thread.
struct ThreadRec {
    name: Mutex<[u8; NAME_LEN]>,
    state: Mutex<RecState>,
    /// 0 while running, 1 once it finished its work (a futex word for
    /// timed joins).
    finished: AtomicU32,
}

#[derive(Default)]
struct RecState {
    detached: bool,
    joining: bool,
    finished: bool,
}

impl ThreadRec {
    fn new(name: [u8; NAME_LEN]) -> Arc<ThreadRec> {
        Arc::new(ThreadRec {
            name: Mutex::new(name),
            state: Mutex::new(RecState::default()),
            finished: AtomicU32::new(0),
        })
    }
}

/// Per-coroutine data in the task extension: touched only by the task.
struct ThreadLocal {
    rec: Arc<ThreadRec>,
    /// Created by our pthread_create (runs the end-of-thread protocol).
    created: bool,
    /// Values by key: (key generation, value).
    tsd: Vec<(u64, *mut c_void)>,
}

struct Entry {
    task: TaskRef,
    rec: Arc<ThreadRec>,
}

const SHARDS: usize = 64;
type Shard = Mutex<Option<HashMap<u64, Entry>>>;
static THREADS: [crate::sys::ForkMutex<Option<HashMap<u64, Entry>>>; SHARDS] =
    [const { crate::sys::ForkMutex::new(None) }; SHARDS];

fn shard(id: u64) -> &'static Shard {
    THREADS[(id as usize) % SHARDS].get()
}

fn lookup(id: u64) -> Option<(TaskRef, Arc<ThreadRec>)> {
    let g = lock(shard(id));
    let e = g.as_ref()?.get(&id)?;
    Some((e.task.clone(), e.rec.clone()))
}

/// Threads made by pthread_create that have not finished (main's
/// pthread_exit waits for this to reach 0).
static LIVE: AtomicU32 = AtomicU32::new(0);

/// The running coroutine's extension, created on first use. The closure
/// must not call back into code that could reach the extension again.
fn with_local<R>(f: impl FnOnce(&mut ThreadLocal) -> R) -> Option<R> {
    let t = current()?;
    // SAFETY: `ext` is only touched by the task itself, on its home worker,
    // and `f` does not re-enter (no hook calls inside the closures below).
    let ext = unsafe { &mut *t.ext.get() };
    if ext.as_ref().is_none_or(|e| !e.is::<ThreadLocal>()) {
        let rec = ThreadRec::new(inherited_name());
        if t.id == MAIN_ID {
            // main is adopted so other threads may name it (kill(main, 0)).
            if let Some(me) = current_ref() {
                lock(shard(me.id)).get_or_insert_with(HashMap::new).insert(
                    me.id,
                    Entry {
                        task: me,
                        rec: rec.clone(),
                    },
                );
            }
        }
        *ext = Some(Box::new(ThreadLocal {
            rec,
            created: false,
            tsd: Vec::new(),
        }) as Box<dyn Any>);
    }
    let tl = ext.as_mut()?.downcast_mut::<ThreadLocal>()?;
    Some(f(tl))
}

fn self_rec() -> Option<Arc<ThreadRec>> {
    with_local(|l| l.rec.clone())
}

/// The record of a coroutine handle: the caller's own, or the table's.
fn rec_of(id: u64) -> Option<Arc<ThreadRec>> {
    if id == current_id() {
        return self_rec();
    }
    lookup(id).map(|(_, r)| r)
}

/// A new thread's name: natively it inherits its creator's.
fn inherited_name() -> [u8; NAME_LEN] {
    if let Some(t) = current() {
        // SAFETY: as in `with_local`: the running task's own extension.
        let ext = unsafe { &*t.ext.get() };
        if let Some(l) = ext.as_ref().and_then(|e| e.downcast_ref::<ThreadLocal>()) {
            return *lock(&l.rec.name);
        }
    }
    process_name()
}

/// The main thread's name (/proc/self/comm), read once with raw syscalls.
fn process_name() -> [u8; NAME_LEN] {
    static NAME: OnceLock<[u8; NAME_LEN]> = OnceLock::new();
    *NAME.get_or_init(|| {
        let mut name = [0u8; NAME_LEN];
        // SAFETY: raw openat/read/close on a path literal and a local buffer.
        unsafe {
            let fd = crate::sys::real::syscall!(
                libc::SYS_openat,
                libc::AT_FDCWD,
                c"/proc/self/comm".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            );
            if fd >= 0 {
                let n =
                    crate::sys::real::syscall!(libc::SYS_read, fd, name.as_mut_ptr(), NAME_LEN - 1);
                crate::sys::real::syscall!(libc::SYS_close, fd);
                let n = n.max(0) as usize;
                let end = name[..n].iter().position(|&b| b == b'\n').unwrap_or(n);
                name[end..].fill(0);
            }
        }
        name
    })
}

// ---------------------------------------------------------------------------
// Keys (thread-specific data)

/// Per key: generation (bumped by create and delete) and destructor.
static KEY_GEN: [AtomicU64; KEYS_MAX] = [const { AtomicU64::new(0) }; KEYS_MAX];
static KEY_DTOR: [AtomicUsize; KEYS_MAX] = [const { AtomicUsize::new(0) }; KEYS_MAX];

/// Whether this caller keeps its values in its task (every coroutine but
/// `main`, which is the main thread).
#[inline]
fn coroutine_tsd() -> bool {
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
fn run_key_destructors() {
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

// ---------------------------------------------------------------------------
// Creation and ending

/// Whether the environment variable `name` is set to `value` (surrounding
/// blanks ignored). `getenv`: no allocation, no lock, so it is safe inside
/// `malloc` (see `pthread_sync::on`).
pub(crate) fn env_is(name: &std::ffi::CStr, value: &[u8]) -> bool {
    // SAFETY: getenv with a NUL-terminated name; the result is NULL or a
    // NUL-terminated string that lives while the environment is unchanged.
    let p = unsafe { libc::getenv(name.as_ptr()) };
    if p.is_null() {
        return false;
    }
    // SAFETY: as above.
    let v = unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes();
    v.trim_ascii() == value
}

/// Stack size for a thread created without a stack size attribute.
fn default_stack_size() -> usize {
    static SIZE: OnceLock<usize> = OnceLock::new();
    *SIZE.get_or_init(|| {
        // SAFETY: getenv with a NUL-terminated name (no allocation: see env_is).
        if !unsafe { libc::getenv(c"CORUN_STACK_SIZE".as_ptr()) }.is_null() {
            if let Some(r) = sched::runtime() {
                return r.config.stack_size;
            }
        }
        // What a native thread would get: glibc's default attribute.
        // SAFETY: a zeroed attr is valid storage for glibc to fill.
        let mut attr: pthread_attr_t = unsafe { std::mem::zeroed() };
        let mut size: size_t = 0;
        // SAFETY: valid pointers; the attr is destroyed after use.
        unsafe {
            if pthread_getattr_default_np(&mut attr) == 0 {
                libc::pthread_attr_getstacksize(&attr, &mut size);
                libc::pthread_attr_destroy(&mut attr);
            }
        }
        if size == 0 {
            size = 8 << 20;
        }
        size.clamp(crate::config::MIN_STACK_SIZE, crate::config::MAX_STACK_SIZE)
    })
}

/// Where glibc keeps the stack size in a `pthread_attr_t`, found once by
/// setting a recognisable size on a sample attribute. glibc's
/// `pthread_attr_getstacksize` reports the default size for an attribute
/// whose size was never set, which must not count as the program asking.
fn stacksize_offset() -> Option<usize> {
    static OFF: OnceLock<Option<usize>> = OnceLock::new();
    *OFF.get_or_init(|| {
        const PROBE: usize = 0x1234_5000;
        // SAFETY: glibc initialises and destroys a local attribute object;
        // it is read as plain bytes in between.
        unsafe {
            let mut a: pthread_attr_t = std::mem::zeroed();
            libc::pthread_attr_init(&mut a);
            libc::pthread_attr_setstacksize(&mut a, PROBE);
            let words = std::mem::size_of::<pthread_attr_t>() / std::mem::size_of::<usize>();
            let p = &a as *const pthread_attr_t as *const usize;
            let off = (0..words).find(|&i| *p.add(i) == PROBE);
            libc::pthread_attr_destroy(&mut a);
            off
        }
    })
}

/// The stack size the program set on `attr`, if it set one.
///
/// # Safety
/// `attr` points at an initialised attribute object.
unsafe fn explicit_stack_size(attr: *const pthread_attr_t) -> Option<usize> {
    match stacksize_offset() {
        // SAFETY: the offset is a word inside the object (found by the probe).
        Some(i) => match unsafe { *(attr as *const usize).add(i) } {
            0 => None,
            n => Some(n),
        },
        None => {
            let mut size: size_t = 0;
            // SAFETY: the caller's attribute object.
            (unsafe { libc::pthread_attr_getstacksize(attr, &mut size) } == 0 && size != 0)
                .then_some(size)
        }
    }
}

/// The end of a coroutine thread's life, in the coroutine: key destructors,
/// then the table learns it finished (a detached thread leaves it).
fn thread_end() {
    // glibc's order at thread exit: C++ thread_local destructors, then
    // the keys' (only for a thread with TLS of its own: the worker's list
    // is the worker's).
    if current().is_some_and(|t| t.ident.tp.get() != 0) {
        crate::ctx::tls::run_thread_dtors();
    }
    run_key_destructors();
    let Some(rec) = self_rec() else { return };
    let created = with_local(|l| l.created).unwrap_or(false);
    let id = current_id();
    {
        let mut g = lock(shard(id));
        let mut st = lock(&rec.state);
        st.finished = true;
        if st.detached {
            if let Some(m) = g.as_mut() {
                m.remove(&id);
            }
        }
    }
    rec.finished.store(1, Ordering::Release);
    sync::wake_all(&rec.finished);
    if created && LIVE.fetch_sub(1, Ordering::AcqRel) == 1 {
        sync::wake_all(&LIVE);
    }
}

/// Whether glibc could map a stack of `size` bytes: the kernel is asked the
/// question glibc's own mapping asks it (a private, writable, accounted
/// mapping, at once unmapped). A stack corun clamps to its maximum must
/// still fail where the native one would: 1 TiB gets EAGAIN natively
/// (more than memory and swap), so it must under corun too.
fn could_map(size: usize) -> bool {
    // SAFETY: a fresh anonymous mapping, never touched, unmapped at once.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return false;
        }
        libc::munmap(p, size);
    }
    true
}

#[no_mangle]
pub unsafe extern "C" fn pthread_create(
    thread: *mut pthread_t,
    attr: *const pthread_attr_t,
    start: Option<StartFn>,
    arg: *mut c_void,
) -> c_int {
    let Some(start) = start else {
        return libc::EINVAL;
    };
    if !coroutine_threads() {
        // SAFETY: the caller's contract.
        return unsafe { create_native(thread, attr, start, arg) };
    }
    let mut stack = default_stack_size();
    let mut detached = false;
    if !attr.is_null() {
        // SAFETY: `attr` is an initialised attribute object (caller's contract).
        if let Some(size) = unsafe { explicit_stack_size(attr) } {
            if size > crate::config::MAX_STACK_SIZE && !could_map(size) {
                return libc::EAGAIN;
            }
            stack = size.clamp(crate::config::MIN_STACK_SIZE, crate::config::MAX_STACK_SIZE);
        }
        let mut ds: c_int = 0;
        // SAFETY: as above.
        if unsafe { pthread_attr_getdetachstate(attr, &mut ds) } == 0 {
            detached = ds == libc::PTHREAD_CREATE_DETACHED;
        }
    }
    let rec = ThreadRec::new(inherited_name());
    if detached {
        lock(&rec.state).detached = true;
    }
    let rec2 = rec.clone();
    let arg = arg as usize;
    let entry = sched::Entry::Rust(Box::new(move || {
        if let Some(me) = current_ref() {
            // The thread enters itself in the table before running any
            // program code (pthread_create does too, whichever is first):
            // it may hand out its own handle at once.
            register(me.clone(), &rec2);
            // SAFETY: the new task's own extension, set before it runs code.
            unsafe {
                *me.ext.get() = Some(Box::new(ThreadLocal {
                    rec: rec2,
                    created: true,
                    tsd: Vec::new(),
                }) as Box<dyn Any>)
            };
        }
        if let Some(me) = current() {
            // Where pthread_exit's unwinding stops: this frame is above
            // every frame of the start routine.
            let marker = 0u8;
            me.ident
                .entry_limit
                .set(std::hint::black_box(&marker) as *const u8 as usize);
        }
        let r = start(arg as *mut c_void);
        thread_end();
        r
    }));
    LIVE.fetch_add(1, Ordering::AcqRel);
    let task = match sched::spawn_thread(entry, stack, start as usize) {
        Ok(t) => t,
        Err(_) => {
            // No stack could be had (memory, or the mappings limit): what
            // glibc reports for lacking resources.
            LIVE.fetch_sub(1, Ordering::AcqRel);
            return libc::EAGAIN;
        }
    };
    let id = task.id;
    if detached {
        let _ = sched::detach(&task);
    }
    register(task, &rec);
    // SAFETY: the caller passed a writable pthread_t.
    unsafe { *thread = encode(id) };
    0
}

/// Enters a created thread in the table unless it is there already, or
/// already ended detached (and left it).
fn register(task: TaskRef, rec: &Arc<ThreadRec>) {
    let id = task.id;
    let mut g = lock(shard(id));
    let st = lock(&rec.state);
    if st.detached && st.finished {
        return;
    }
    g.get_or_insert_with(HashMap::new)
        .entry(id)
        .or_insert_with(|| Entry {
            task,
            rec: rec.clone(),
        });
}

#[no_mangle]
pub unsafe extern "C" fn pthread_exit(value: *mut c_void) -> ! {
    let Some(t) = current() else {
        // SAFETY: a native thread exits as glibc does it.
        unsafe { real::pthread_exit(value) }
    };
    if t.id == MAIN_ID {
        main_exit();
    }
    super::cancel::unwind_exit(value as usize)
}

/// Ends the running coroutine thread with `value` without unwinding
/// (what is left of its frames is abandoned): destructors, then the end.
pub(super) fn end_without_unwind(value: usize) -> ! {
    if current_id() == MAIN_ID {
        main_exit();
    }
    thread_end();
    sched::exit_current(value)
}

/// In a forked child: a shard of the thread table locked at the fork by
/// another thread would stay locked (the forking thread's own record is
/// kept; the parent's other threads do not exist here).
pub(super) fn after_fork_child() {
    for s in THREADS.iter() {
        s.unlock_after_fork(|| None);
    }
}

/// The coroutine thread behind a handle, if it is one and still exists.
pub(super) fn coroutine_task(t: pthread_t) -> Option<TaskRef> {
    alive(decode(t)?)
}

/// Whether `t` is a coroutine's handle (alive or not).
pub(super) fn is_coroutine_handle(t: pthread_t) -> bool {
    decode(t).is_some()
}

/// `main` called pthread_exit: the process lives until the last thread
/// ends, then exits with status 0 (atexit handlers run).
fn main_exit() -> ! {
    for live in [&LIVE, &NATIVE_LIVE] {
        loop {
            let n = live.load(Ordering::Acquire);
            if n == 0 {
                break;
            }
            sync::wait(live, n, None);
        }
    }
    // SAFETY: ending the process as the last thread's exit would.
    unsafe { libc::exit(0) }
}

/// Kernel threads the program made with CORUN_THREADS=native and that have
/// not ended (main's pthread_exit waits for them too).
static NATIVE_LIVE: AtomicU32 = AtomicU32::new(0);

/// A glibc key whose destructor tells that a native thread ended, however
/// it ended (return, pthread_exit, cancellation): glibc runs it in every case.
fn native_exit_key() -> Option<pthread_key_t> {
    static KEY: OnceLock<Option<pthread_key_t>> = OnceLock::new();
    *KEY.get_or_init(|| {
        unsafe extern "C" fn gone(_: *mut c_void) {
            if NATIVE_LIVE.fetch_sub(1, Ordering::AcqRel) == 1 {
                sync::wake_all(&NATIVE_LIVE);
            }
        }
        let mut k: pthread_key_t = 0;
        // SAFETY: glibc allocates a key; `gone` has the destructor's type.
        (unsafe { real::pthread_key_create(&mut k, Some(gone)) } == 0).then_some(k)
    })
}

struct NativeStart {
    start: StartFn,
    arg: usize,
}

/// First frame of a native thread: arms the exit key, then runs the
/// program's routine. "C-unwind" and nothing to drop: glibc's forced unwind
/// (pthread_exit, cancellation) may pass through it.
extern "C-unwind" fn native_trampoline(p: *mut c_void) -> *mut c_void {
    // SAFETY: `p` is the Box leaked by create_native, taken once.
    let NativeStart { start, arg } = *unsafe { Box::from_raw(p as *mut NativeStart) };
    if let Some(k) = native_exit_key() {
        // SAFETY: a valid key; any non-NULL value arms the destructor.
        unsafe { real::pthread_setspecific(k, std::ptr::dangling::<c_void>()) };
    }
    start(arg as *mut c_void)
}

/// CORUN_THREADS=native: a kernel thread, counted while it lives.
unsafe fn create_native(
    thread: *mut pthread_t,
    attr: *const pthread_attr_t,
    start: StartFn,
    arg: *mut c_void,
) -> c_int {
    if native_exit_key().is_none() {
        // SAFETY: the caller's contract.
        return unsafe { crate::sys::real::pthread_create(thread, attr, start, arg) };
    }
    let p = Box::into_raw(Box::new(NativeStart {
        start,
        arg: arg as usize,
    }));
    // SAFETY: glibc calls the trampoline with the C start routine's
    // signature; "C-unwind" only adds that unwinding may pass through.
    let tramp: StartFn = unsafe {
        std::mem::transmute::<extern "C-unwind" fn(*mut c_void) -> *mut c_void, StartFn>(
            native_trampoline,
        )
    };
    NATIVE_LIVE.fetch_add(1, Ordering::AcqRel);
    // SAFETY: the caller's arguments, with our trampoline and its argument.
    let r = unsafe { crate::sys::real::pthread_create(thread, attr, tramp, p as *mut c_void) };
    if r != 0 {
        NATIVE_LIVE.fetch_sub(1, Ordering::AcqRel);
        // SAFETY: the thread was not created: the Box is still ours.
        drop(unsafe { Box::from_raw(p) });
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn pthread_self() -> pthread_t {
    match current() {
        Some(t) if coroutine_threads() => {
            if t.id == MAIN_ID {
                adopt_main();
            }
            encode(t.id)
        }
        // SAFETY: no arguments.
        _ => unsafe { real::pthread_self() },
    }
}

/// Enters `main` in the table the first time it asks for its handle, so
/// other threads can use that handle (pthread_kill(main, 0), names).
fn adopt_main() {
    static ADOPTED: AtomicBool = AtomicBool::new(false);
    if !ADOPTED.swap(true, Ordering::AcqRel) {
        with_local(|_| ());
    }
}

#[no_mangle]
pub extern "C" fn pthread_equal(a: pthread_t, b: pthread_t) -> c_int {
    (a == b) as c_int
}

/// `pthread_yield` is `sched_yield` (hooks/signal.rs: yields the coroutine).
#[no_mangle]
pub unsafe extern "C" fn pthread_yield() -> c_int {
    // SAFETY: no arguments.
    unsafe { super::signal::sched_yield() }
}

// ---------------------------------------------------------------------------
// Joining and detaching

/// Joins coroutine `id` once it has finished (or finishes by `deadline`;
/// `poll` only checks).
fn join_coroutine(id: u64, ret: *mut *mut c_void, deadline: Option<Deadline>, poll: bool) -> c_int {
    if id == current_id() {
        return libc::EDEADLK;
    }
    let me = current();
    if let (Some(me), false) = (me, poll) {
        sched::identity::cancel_point(&me.ident);
    }
    let Some((task, rec)) = lookup(id) else {
        return libc::ESRCH;
    };
    {
        let st = lock(&rec.state);
        if st.detached || st.joining {
            return libc::EINVAL;
        }
    }
    if poll || deadline.is_some() {
        while rec.finished.load(Ordering::Acquire) == 0 {
            if poll {
                return libc::EBUSY;
            }
            let w = sync::wait_cancelable(&rec.finished, 0, deadline);
            if let Some(me) = me {
                sched::identity::cancel_point(&me.ident);
            }
            if w == WaitResult::TimedOut && rec.finished.load(Ordering::Acquire) == 0 {
                return libc::ETIMEDOUT;
            }
        }
    }
    {
        let mut st = lock(&rec.state);
        if st.detached || st.joining {
            return libc::EINVAL;
        }
        st.joining = true;
    }
    match sched::join(&task) {
        Ok(r) => {
            if let Some(m) = lock(shard(id)).as_mut() {
                m.remove(&id);
            }
            if !ret.is_null() {
                // SAFETY: the caller passed a writable pointer or NULL.
                unsafe { *ret = r as *mut c_void };
            }
            0
        }
        Err(JoinError::Deadlock) => libc::EDEADLK,
        Err(JoinError::Claimed) => libc::EINVAL,
        Err(JoinError::Cancelled) => {
            lock(&rec.state).joining = false;
            if let Some(me) = me {
                sched::identity::cancel_point(&me.ident);
            }
            libc::EINVAL
        }
    }
}

/// A coroutine joining a real thread: polls, so the worker keeps running.
fn join_real_from_coroutine(
    t: pthread_t,
    ret: *mut *mut c_void,
    deadline: Option<Deadline>,
) -> c_int {
    let mut nap = 1_000_000u64;
    loop {
        // SAFETY: the caller's contract (a real handle).
        let r = unsafe { real::pthread_tryjoin_np(t, ret) };
        if r != libc::EBUSY {
            return r;
        }
        if deadline.is_some_and(|d| d.passed()) {
            return libc::ETIMEDOUT;
        }
        sched::sleep_until(crate::sys::now_ns() + nap);
        nap = (nap * 2).min(50_000_000);
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_join(t: pthread_t, ret: *mut *mut c_void) -> c_int {
    match decode(t) {
        Some(id) => join_coroutine(id, ret, None, false),
        None if in_coroutine() => join_real_from_coroutine(t, ret, None),
        // SAFETY: the caller's contract.
        None => unsafe { real::pthread_join(t, ret) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_tryjoin_np(t: pthread_t, ret: *mut *mut c_void) -> c_int {
    match decode(t) {
        Some(id) => join_coroutine(id, ret, None, true),
        // SAFETY: the caller's contract.
        None => unsafe { real::pthread_tryjoin_np(t, ret) },
    }
}

/// An absolute timespec as a deadline on `clock`; None if invalid.
pub(crate) fn abs_deadline(clock: clockid_t, abs: *const timespec) -> Option<Deadline> {
    if abs.is_null() {
        return None;
    }
    // SAFETY: non-null, readable by the caller's contract.
    let ts = unsafe { *abs };
    if !(0..1_000_000_000).contains(&ts.tv_nsec) {
        return None;
    }
    let ns = if ts.tv_sec < 0 {
        0
    } else {
        crate::sys::timespec_ns(&ts)
    };
    match clock {
        libc::CLOCK_MONOTONIC => Some(Deadline::Monotonic(ns)),
        libc::CLOCK_REALTIME => Some(Deadline::Realtime(ns)),
        _ => None,
    }
}

unsafe fn timed_join(
    t: pthread_t,
    ret: *mut *mut c_void,
    clk: clockid_t,
    abs: *const timespec,
) -> c_int {
    let Some(d) = abs_deadline(clk, abs) else {
        return libc::EINVAL;
    };
    match decode(t) {
        Some(id) => join_coroutine(id, ret, Some(d), false),
        None if in_coroutine() => join_real_from_coroutine(t, ret, Some(d)),
        // SAFETY: the caller's contract.
        None => unsafe { real::pthread_clockjoin_np(t, ret, clk, abs) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_timedjoin_np(
    t: pthread_t,
    ret: *mut *mut c_void,
    abs: *const timespec,
) -> c_int {
    if decode(t).is_none() && !in_coroutine() {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_timedjoin_np(t, ret, abs) };
    }
    // SAFETY: forwarding the caller's arguments.
    unsafe { timed_join(t, ret, libc::CLOCK_REALTIME, abs) }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_clockjoin_np(
    t: pthread_t,
    ret: *mut *mut c_void,
    clk: clockid_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: forwarding the caller's arguments.
    unsafe { timed_join(t, ret, clk, abs) }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_detach(t: pthread_t) -> c_int {
    let Some(id) = decode(t) else {
        // SAFETY: the caller's contract.
        return unsafe { crate::sys::real::pthread_detach(t) };
    };
    let mut g = lock(shard(id));
    let Some(e) = g.as_ref().and_then(|m| m.get(&id)) else {
        return libc::ESRCH;
    };
    let task = e.task.clone();
    let rec = e.rec.clone();
    let mut st = lock(&rec.state);
    if st.detached || st.joining {
        return libc::EINVAL;
    }
    if sched::detach(&task).is_err() {
        return libc::EINVAL;
    }
    st.detached = true;
    if st.finished {
        if let Some(m) = g.as_mut() {
            m.remove(&id);
        }
    }
    0
}

// ---------------------------------------------------------------------------
// Names, attributes, scheduling, signals

#[no_mangle]
pub unsafe extern "C" fn pthread_setname_np(t: pthread_t, name: *const c_char) -> c_int {
    let Some(id) = decode(t) else {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_setname_np(t, name) };
    };
    if name.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: a NUL-terminated string by the caller's contract.
    let s = unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes();
    if s.len() >= NAME_LEN {
        return libc::ERANGE;
    }
    let Some(rec) = rec_of(id) else {
        return libc::ESRCH;
    };
    let mut n = lock(&rec.name);
    n.fill(0);
    n[..s.len()].copy_from_slice(s);
    0
}

#[no_mangle]
pub unsafe extern "C" fn pthread_getname_np(t: pthread_t, buf: *mut c_char, len: size_t) -> c_int {
    let Some(id) = decode(t) else {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_getname_np(t, buf, len) };
    };
    if len < NAME_LEN {
        return libc::ERANGE;
    }
    let Some(rec) = rec_of(id) else {
        return libc::ESRCH;
    };
    let n = *lock(&rec.name);
    // SAFETY: `buf` has room for `len` >= 16 bytes (caller's contract).
    unsafe { std::ptr::copy_nonoverlapping(n.as_ptr(), buf as *mut u8, NAME_LEN) };
    0
}

/// The coroutine behind `id` exists (and has not finished its work).
fn alive(id: u64) -> Option<TaskRef> {
    if id == current_id() {
        return current_ref();
    }
    let (task, rec) = lookup(id)?;
    (rec.finished.load(Ordering::Acquire) == 0).then_some(task)
}

#[no_mangle]
pub unsafe extern "C" fn pthread_getattr_np(t: pthread_t, attr: *mut pthread_attr_t) -> c_int {
    let Some(id) = decode(t) else {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_getattr_np(t, attr) };
    };
    let Some(task) = alive(id) else {
        return libc::ESRCH;
    };
    let detached = rec_of(id).is_some_and(|r| lock(&r.state).detached);
    // SAFETY: `attr` is writable storage for an attribute object.
    unsafe {
        libc::pthread_attr_init(attr);
        libc::pthread_attr_setdetachstate(
            attr,
            if detached {
                libc::PTHREAD_CREATE_DETACHED
            } else {
                libc::PTHREAD_CREATE_JOINABLE
            },
        );
        libc::pthread_attr_setguardsize(attr, crate::sys::page_size());
        match (id == current_id()).then(sched::current_stack).flatten() {
            Some((lo, hi)) => {
                pthread_attr_setstack(attr, lo as *mut c_void, hi - lo);
            }
            None => {
                libc::pthread_attr_setstacksize(attr, task.stack_size);
            }
        }
    }
    0
}

/// The kernel thread a coroutine runs on (its home worker), for signals.
fn worker_tid(task: &TaskRef) -> i32 {
    let rt = match sched::runtime() {
        Some(r) => r,
        None => return crate::sys::gettid(),
    };
    let w = rt
        .workers
        .get(task.home())
        .copied()
        .unwrap_or(rt.workers[0]);
    match w.tid.load(Ordering::Relaxed) {
        0 => crate::sys::gettid(),
        tid => tid,
    }
}

/// A signal for coroutine `task` (`pthread_kill`, `pthread_sigqueue`),
/// with the siginfo the kernel would give. A signal the program handles,
/// or one the thread blocks, is pending at that coroutine (its handler
/// runs there); one left at its default action, which the thread does not
/// block, goes to the thread the coroutine runs on, where the kernel acts
/// for the whole process (terminate, stop, ignore), as natively.
fn send_to_coroutine(task: &TaskRef, sig: c_int, info: &sched::siginfo::Info) -> c_int {
    if !(1..=64).contains(&sig) {
        return libc::EINVAL;
    }
    let handled = super::sigdeliver::HANDLER[sig as usize].load(Ordering::Acquire) != 0;
    let blocked = task.ident.sigmask.load(Ordering::SeqCst) & sched::sigmask::bit(sig) != 0;
    if handled || blocked {
        sched::signals::send_to_task(task, sig, info);
        return 0;
    }
    // SAFETY: rt_tgsigqueueinfo with a siginfo buffer of the kernel's size
    // (negative codes may be sent to our own threads), else tgkill.
    let r = unsafe {
        if sched::siginfo::code(info) == libc::SI_TKILL {
            libc::syscall(libc::SYS_tgkill, libc::getpid(), worker_tid(task), sig)
        } else {
            libc::syscall(
                libc::SYS_rt_tgsigqueueinfo,
                libc::getpid(),
                worker_tid(task),
                sig,
                info.as_ptr(),
            )
        }
    };
    if r < 0 {
        crate::sys::errno()
    } else {
        0
    }
}

/// The siginfo of a signal this process sends: signo, code, pid, uid,
/// value (the kernel's layout).
fn own_siginfo(sig: c_int, code: c_int, value: usize) -> sched::siginfo::Info {
    let mut info = [0u64; sched::siginfo::WORDS];
    // SAFETY: getpid/getuid have no preconditions.
    let (pid, uid) = unsafe { (libc::getpid(), libc::getuid()) };
    info[0] = sig as u32 as u64;
    info[1] = code as u32 as u64;
    info[2] = (pid as u32 as u64) | ((uid as u64) << 32);
    info[3] = value as u64;
    info
}

#[no_mangle]
pub unsafe extern "C" fn pthread_kill(t: pthread_t, sig: c_int) -> c_int {
    let Some(id) = decode(t) else {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_kill(t, sig) };
    };
    let Some(task) = alive(id) else {
        return libc::ESRCH;
    };
    if sig == 0 {
        return 0;
    }
    send_to_coroutine(&task, sig, &own_siginfo(sig, libc::SI_TKILL, 0))
}

/// `raise` in a coroutine is `pthread_kill` of itself: its handler runs
/// before `raise` returns (in a handler, the real call: the kernel nests).
#[no_mangle]
pub unsafe extern "C" fn raise(sig: c_int) -> c_int {
    if in_coroutine() && sig != 0 {
        if let Some(task) = current_ref() {
            return match send_to_coroutine(&task, sig, &own_siginfo(sig, libc::SI_TKILL, 0)) {
                0 => 0,
                e => {
                    crate::sys::set_errno(e);
                    -1
                }
            };
        }
    }
    // SAFETY: plain integer.
    unsafe { real::raise(sig) }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_sigqueue(t: pthread_t, sig: c_int, val: libc::sigval) -> c_int {
    let Some(id) = decode(t) else {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_sigqueue(t, sig, val) };
    };
    let Some(task) = alive(id) else {
        return libc::ESRCH;
    };
    if sig == 0 {
        return 0;
    }
    let info = own_siginfo(sig, libc::SI_QUEUE, val.sival_ptr as usize);
    send_to_coroutine(&task, sig, &info)
}

#[no_mangle]
pub unsafe extern "C" fn pthread_setaffinity_np(
    t: pthread_t,
    size: size_t,
    set: *const libc::cpu_set_t,
) -> c_int {
    match decode(t) {
        // A coroutine cannot be pinned: accepted, no effect (README).
        Some(id) => alive(id).map_or(libc::ESRCH, |_| 0),
        // SAFETY: the caller's contract.
        None => unsafe { real::pthread_setaffinity_np(t, size, set) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_getaffinity_np(
    t: pthread_t,
    size: size_t,
    set: *mut libc::cpu_set_t,
) -> c_int {
    let Some(id) = decode(t) else {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_getaffinity_np(t, size, set) };
    };
    if alive(id).is_none() {
        return libc::ESRCH;
    }
    // The process's CPUs: a coroutine may run on any worker.
    // SAFETY: the caller's buffer of `size` bytes.
    let r = unsafe { libc::sched_getaffinity(libc::getpid(), size, set) };
    if r < 0 {
        crate::sys::errno()
    } else {
        0
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_getcpuclockid(t: pthread_t, clk: *mut clockid_t) -> c_int {
    match decode(t) {
        // No per-coroutine CPU clock (a documented errno of this call).
        Some(id) => alive(id).map_or(libc::ESRCH, |_| libc::ENOENT),
        // SAFETY: the caller's contract.
        None => unsafe { real::pthread_getcpuclockid(t, clk) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_getschedparam(
    t: pthread_t,
    policy: *mut c_int,
    p: *mut libc::sched_param,
) -> c_int {
    let Some(id) = decode(t) else {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_getschedparam(t, policy, p) };
    };
    if alive(id).is_none() {
        return libc::ESRCH;
    }
    // SAFETY: writable out-pointers by the caller's contract.
    unsafe {
        *policy = libc::SCHED_OTHER;
        (*p).sched_priority = 0;
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn pthread_setschedparam(
    t: pthread_t,
    policy: c_int,
    p: *const libc::sched_param,
) -> c_int {
    let Some(id) = decode(t) else {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_setschedparam(t, policy, p) };
    };
    if alive(id).is_none() {
        return libc::ESRCH;
    }
    // SAFETY: readable by the caller's contract.
    let prio = unsafe { (*p).sched_priority };
    if policy == libc::SCHED_OTHER && prio == 0 {
        0
    } else {
        libc::EPERM
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_setschedprio(t: pthread_t, prio: c_int) -> c_int {
    match decode(t) {
        Some(id) if alive(id).is_none() => libc::ESRCH,
        Some(_) if prio == 0 => 0,
        Some(_) => libc::EINVAL,
        // SAFETY: the caller's contract.
        None => unsafe { real::pthread_setschedprio(t, prio) },
    }
}
