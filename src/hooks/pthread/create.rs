//! Creating and ending coroutine threads: `pthread_create`, `pthread_exit`,
//! `pthread_self`, `pthread_equal`, `pthread_yield` (see mod.rs).

use super::*;

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
pub(super) fn default_stack_size() -> usize {
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
pub(super) fn stacksize_offset() -> Option<usize> {
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
pub(super) unsafe fn explicit_stack_size(attr: *const pthread_attr_t) -> Option<usize> {
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

/// The stack the program gave on `attr` (`pthread_attr_setstack`, or
/// `pthread_attr_setstackaddr` with a size): its lowest address and size.
/// glibc keeps the top (address + size, stacks grow down) and reads back
/// 0 when none was given; with no size set, the default size is used, as
/// glibc does.
///
/// # Safety
/// `attr` points at an initialised attribute object.
pub(super) unsafe fn given_stack(attr: *const pthread_attr_t) -> Option<(usize, usize)> {
    extern "C" {
        fn pthread_attr_getstackaddr(attr: *const pthread_attr_t, addr: *mut *mut c_void) -> c_int;
    }
    let mut top: *mut c_void = std::ptr::null_mut();
    // SAFETY: the caller's attribute object; `top` is writable.
    if unsafe { pthread_attr_getstackaddr(attr, &mut top) } != 0 || top.is_null() {
        return None;
    }
    // SAFETY: as above.
    let size = unsafe { explicit_stack_size(attr) }.unwrap_or_else(default_stack_size);
    let top = top as usize;
    Some((top.checked_sub(size)?, size))
}

/// The end of a coroutine thread's life, in the coroutine: key destructors,
/// then the table learns it finished (a detached thread leaves it).
pub(super) fn thread_end() {
    // glibc's order at thread exit: C++ thread_local destructors, then
    // the keys' (only for a thread with TLS of its own: the worker's list
    // is the worker's).
    if current().is_some_and(|t| t.ident.tp.get() != 0) {
        crate::ctx::tls::run_thread_dtors();
    }
    run_key_destructors();
    // A once whose routine this thread left (pthread_exit or a
    // cancellation inside it) may run again.
    crate::hooks::pthread_sync::once_thread_ended(current_id());
    // Then, as the kernel at a thread's exit, its robust mutexes: their next
    // lockers get EOWNERDEAD (before a joiner can run).
    if current().is_some_and(|t| t.ident.tp.get() != 0) {
        crate::ctx::tls::end_robust_list();
    }
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
    super::tid::clear_child_tid_at_exit();
    if created && LIVE.fetch_sub(1, Ordering::AcqRel) == 1 {
        sync::wake_all(&LIVE);
    }
}

/// Whether glibc could map a stack of `size` bytes: the kernel is asked the
/// question glibc's own mapping asks it (a private, writable, accounted
/// mapping, at once unmapped). A stack corun clamps to its maximum must
/// still fail where the native one would: 1 TiB gets EAGAIN natively
/// (more than memory and swap), so it must under corun too.
pub(super) fn could_map(size: usize) -> bool {
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

/// A thread's start routine: POSIX's, or C11's (`thrd_create`), whose
/// `int` result becomes the thread's value as glibc makes it
/// (`(void *)(uintptr_t)result`, which `thrd_join` casts back).
#[derive(Clone, Copy)]
pub(crate) enum Start {
    Posix(StartFn),
    C11(extern "C" fn(*mut c_void) -> c_int),
}

impl Start {
    /// The routine's address (the watchdog and `corun dump` name it).
    pub(crate) fn addr(self) -> usize {
        match self {
            Start::Posix(f) => f as usize,
            Start::C11(f) => f as usize,
        }
    }

    fn call(self, arg: *mut c_void) -> *mut c_void {
        match self {
            Start::Posix(f) => f(arg),
            Start::C11(f) => f(arg) as isize as *mut c_void,
        }
    }
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
    if !coroutine_threads() || super::foreign::schedules_itself(start as usize) {
        // SAFETY: the caller's contract.
        return unsafe { create_native(thread, attr, start, arg) };
    }
    // SAFETY: the caller's contract.
    unsafe { create_coroutine(thread, attr, Start::Posix(start), arg) }
}

/// A thread as a coroutine (`pthread_create`, `thrd_create`): 0 or an
/// error number.
///
/// # Safety
/// `thread` is writable; `attr` is NULL or an initialised attribute object.
pub(crate) unsafe fn create_coroutine(
    thread: *mut pthread_t,
    attr: *const pthread_attr_t,
    start: Start,
    arg: *mut c_void,
) -> c_int {
    let mut stack = default_stack_size();
    let mut detached = false;
    let mut program_stack = None;
    if !attr.is_null() {
        // SAFETY: `attr` is an initialised attribute object (caller's contract).
        if let Some(given) = unsafe { given_stack(attr) } {
            program_stack = Some(given);
        // SAFETY: as above.
        } else if let Some(size) = unsafe { explicit_stack_size(attr) } {
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
    // SAFETY: `attr` is null or initialised (caller's contract).
    let mask = match unsafe { affinity::for_new_thread(attr) } {
        Ok(m) => m,
        Err(e) => return e,
    };
    let rec = ThreadRec::new(inherited_name());
    *lock(&rec.affinity) = mask;
    if detached {
        lock(&rec.state).detached = true;
    }
    let rec2 = rec.clone();
    // The thread's extension is made here and installed before anything
    // else runs in the thread: a value the thread sets (jemalloc calls
    // pthread_setspecific at the thread's first malloc) must land in it,
    // not in one made on demand and then replaced (its destructor would
    // never run).
    let local = Handoff(ThreadLocal::boxed(rec.clone(), true));
    let arg = arg as usize;
    let entry = sched::Entry::Rust(Box::new(move || {
        let Handoff(local) = local;
        if let Some(me) = current_ref() {
            // SAFETY: the new task's own extension, touched only by the
            // task itself, which runs this before any program code.
            let ext = unsafe { &mut *me.ext.get() };
            match ext.as_mut().and_then(|e| e.downcast_mut::<ThreadLocal>()) {
                // Made on demand already: the values it holds are kept.
                Some(l) => {
                    l.rec = rec2.clone();
                    l.created = true;
                }
                None => *ext = Some(local),
            }
            // The thread enters itself in the table before running any
            // program code (pthread_create does too, whichever is first):
            // it may hand out its own handle at once.
            register(me.clone(), &rec2);
        }
        if let Some(me) = current() {
            // Where pthread_exit's unwinding stops: this frame is above
            // every frame of the start routine.
            let marker = 0u8;
            me.ident
                .entry_limit
                .set(std::hint::black_box(&marker) as *const u8 as usize);
        }
        let r = start.call(arg as *mut c_void);
        thread_end();
        r
    }));
    // Before the spawn: once it runs, the thread may free what arg points to.
    let kept = sched::startname::creation_arg(start.addr(), arg);
    LIVE.fetch_add(1, Ordering::AcqRel);
    let task = match sched::spawn_thread(entry, stack, start.addr(), program_stack) {
        Ok(t) => t,
        Err(e) if program_stack.is_some() => {
            LIVE.fetch_sub(1, Ordering::AcqRel);
            return e;
        }
        Err(_) => {
            // No stack could be had (memory, or the mappings limit): what
            // glibc reports for lacking resources.
            LIVE.fetch_sub(1, Ordering::AcqRel);
            return libc::EAGAIN;
        }
    };
    let id = task.id;
    task.start_arg.store(kept, Ordering::Relaxed);
    if detached {
        let _ = sched::detach(&task);
    }
    register(task, &rec);
    // SAFETY: the caller passed a writable pthread_t.
    unsafe { *thread = encode(id) };
    // A thread that keeps creating threads without waiting (a main
    // accepting a burst of connections, a thread each) gives its worker up
    // after a time slice, as the kernel would preempt it: the threads it
    // queued there start there. Held, its worker's new threads all started
    // on the others, which idle workers steal from a held one, and stayed
    // there for good (10,000 connections from wrk: 7,400 on one worker of
    // two, thousands of them ready while the other idled).
    sched::slice::yield_if_slice_spent();
    0
}

/// Enters a created thread in the table unless it is there already, or
/// already ended detached (and left it).
pub(super) fn register(task: TaskRef, rec: &Arc<ThreadRec>) {
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
    crate::hooks::cancel::unwind_exit(value as usize)
}

/// Ends the running coroutine thread with `value` without unwinding
/// (what is left of its frames is abandoned): destructors, then the end.
pub(crate) fn end_without_unwind(value: usize) -> ! {
    if current_id() == MAIN_ID {
        main_exit();
    }
    thread_end();
    sched::exit_current(value)
}

/// In a forked child: a shard of the thread table locked at the fork by
/// another thread would stay locked (the forking thread's own record is
/// kept; the parent's other threads do not exist here).
pub(crate) fn after_fork_child() {
    let mut used = SHARDS_USED.load(Ordering::Relaxed);
    while used != 0 {
        let i = used.trailing_zeros() as usize;
        used &= used - 1;
        THREADS[i].unlock_after_fork(|| None);
    }
    affinity::apply_in_child();
    name::apply_in_child();
}

/// The coroutine thread behind a handle, if it is one and still exists.
pub(crate) fn coroutine_task(t: pthread_t) -> Option<TaskRef> {
    alive(decode(t)?)
}

/// Whether `t` is a coroutine's handle (alive or not).
pub(crate) fn is_coroutine_handle(t: pthread_t) -> bool {
    decode(t).is_some()
}

/// `main` called pthread_exit: the process lives until the last thread
/// ends, then exits with status 0 (atexit handlers run).
pub(super) fn main_exit() -> ! {
    for live in [&LIVE, &NATIVE_LIVE] {
        loop {
            let n = live.load(Ordering::Acquire);
            if n == 0 {
                break;
            }
            crate::sched::waitdesc::describe(crate::sched::waitdesc::Cause::Join, 0);
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
pub(super) fn native_exit_key() -> Option<pthread_key_t> {
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
pub(super) unsafe fn create_native(
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
    } else {
        // glibc installs its SIGSETXID handler at its first pthread_create.
        crate::ctx::setxid::wrap_glibc_handler();
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
pub(super) fn adopt_main() {
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
    unsafe { crate::hooks::signal::sched_yield() }
}
