//! Threads as coroutines: `pthread_create`, `join`, `detach`, `exit`,
//! `self`, `equal`, names, thread-specific data, and every libc function
//! that takes a `pthread_t`.
//!
//! Files: `create.rs` (create, exit, self), `join.rs` (join, detach),
//! `keys.rs` (thread-specific data), `name.rs` (names, also the
//! kernel's), `info.rs` (attributes, scheduling, kill), `affinity.rs` (a thread's CPU mask, kept), `tid.rs`
//! (a thread's own tid, and the calls that take one); this file holds the
//! thread table they share.
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
        fn sched_setaffinity(pid: libc::pid_t, size: size_t, set: *const libc::cpu_set_t) -> c_int;
        fn sched_getaffinity(pid: libc::pid_t, size: size_t, set: *mut libc::cpu_set_t) -> c_int;
        fn sched_getscheduler(pid: libc::pid_t) -> c_int;
        fn sched_setscheduler(pid: libc::pid_t, policy: c_int, p: *const libc::sched_param) -> c_int;
        fn sched_getparam(pid: libc::pid_t, p: *mut libc::sched_param) -> c_int;
        fn sched_setparam(pid: libc::pid_t, p: *const libc::sched_param) -> c_int;
        fn getpriority(which: libc::__priority_which_t, who: libc::id_t) -> c_int;
        fn setpriority(which: libc::__priority_which_t, who: libc::id_t, prio: c_int) -> c_int;
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
        && !sched::confined::is()
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
    /// The CPU mask the thread set (`affinity.rs`); None: main's.
    affinity: Mutex<Option<affinity::Mask>>,
    /// The scheduling policy (`pthread_setschedparam`, `sched_setscheduler`,
    /// `sched_setattr`) and nice value (`setpriority`, `sched_setattr`):
    /// kept, not applied (a coroutine runs with its worker's; `sched_attr.rs`).
    policy: std::sync::atomic::AtomicI32,
    nice: std::sync::atomic::AtomicI32,
    /// Timer slack and I/O priority: kept, not applied (`slack_ioprio.rs`).
    kept: slack_ioprio::Kept,
}

#[derive(Default)]
struct RecState {
    detached: bool,
    joining: bool,
    finished: bool,
}

impl ThreadRec {
    fn new(name: [u8; NAME_LEN]) -> Arc<ThreadRec> {
        with_caller_rec(|parent| {
            let (policy, nice) = sched_attr::inherited(parent);
            Arc::new(ThreadRec {
                name: Mutex::new(name),
                state: Mutex::new(RecState::default()),
                finished: AtomicU32::new(0),
                affinity: Mutex::new(None),
                policy: std::sync::atomic::AtomicI32::new(policy),
                nice: std::sync::atomic::AtomicI32::new(nice),
                kept: slack_ioprio::inherited(parent),
            })
        })
    }
}

/// Calls `f` with the calling coroutine thread's record if it has one
/// (None: main, a native thread, a coroutine without one yet, such as a
/// `corun_spawn` coroutine), which a thread it makes inherits from. Never
/// makes one: a record made on the way (`with_local`) made its own
/// `ThreadRec::new` ask again, for ever (a `corun_spawn` coroutine's
/// `pthread_create` overflowed its stack).
fn with_caller_rec<R>(f: impl FnOnce(Option<&ThreadRec>) -> R) -> R {
    if let Some(t) = current().filter(|t| t.id != MAIN_ID) {
        // SAFETY: as in `with_local`: the running task's own extension,
        // only read here.
        let ext = unsafe { &*t.ext.get() };
        if let Some(l) = ext.as_ref().and_then(|e| e.downcast_ref::<ThreadLocal>()) {
            return f(Some(&l.rec));
        }
    }
    f(None)
}

/// Per-coroutine data in the task extension: touched only by the task.
struct ThreadLocal {
    rec: Arc<ThreadRec>,
    /// Created by our pthread_create (runs the end-of-thread protocol).
    created: bool,
    /// Values by key: (key generation, value).
    tsd: Vec<(u64, *mut c_void)>,
}

impl ThreadLocal {
    fn boxed(rec: Arc<ThreadRec>, created: bool) -> Box<dyn Any> {
        Box::new(ThreadLocal {
            rec,
            created,
            tsd: Vec::new(),
        })
    }
}

/// A new thread's extension on its way from its creator to the thread.
struct Handoff(Box<dyn Any>);
// SAFETY: a fresh `ThreadLocal` holding no values yet (its raw pointers
// are the program's thread-specific values, none set), moved once to the
// one thread that uses it.
unsafe impl Send for Handoff {}

struct Entry {
    task: TaskRef,
    rec: Arc<ThreadRec>,
}

const SHARDS: usize = 64;
type Shard = Mutex<Option<HashMap<u64, Entry>>>;
static THREADS: [crate::sys::ForkMutex<Option<HashMap<u64, Entry>>>; SHARDS] =
    [const { crate::sys::ForkMutex::new(None) }; SHARDS];

/// Which shards of THREADS were ever handed out (bit i: shard i), so that
/// a forked child looks at those only: a look at one the parent never used
/// would map a page of zeroes in the child (`sys::ForkReset`).
#[link_section = "corun_fork"] // read after a fork: sys::ForkReset
static SHARDS_USED: AtomicU64 = AtomicU64::new(0);

fn shard(id: u64) -> &'static Shard {
    let i = (id as usize) % SHARDS;
    if SHARDS_USED.load(Ordering::Relaxed) & (1 << i) == 0 {
        // Before the shard is handed out (`ForkMutex::get`), as its own
        // mark is: a fork after this use sees the bit.
        SHARDS_USED.fetch_or(1 << i, Ordering::SeqCst);
    }
    THREADS[i].get()
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
        *ext = Some(ThreadLocal::boxed(rec, false));
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

/// The name a program gave coroutine thread `id` (`corun dump`), None if
/// it has none but the one every thread inherits (the process's).
pub(crate) fn name_of(id: u64) -> Option<String> {
    let (_, rec) = lookup(id)?;
    let name = *lock(&rec.name);
    if name == process_name() {
        return None;
    }
    let end = name.iter().position(|&b| b == 0).unwrap_or(NAME_LEN);
    Some(String::from_utf8_lossy(&name[..end]).into_owned())
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

mod affinity;
mod create;
pub(crate) mod foreign;
mod info;
mod join;
mod keys;
mod name;
mod sched_attr;
mod slack_ioprio;
mod tid;
pub(crate) use sched_attr::sched_attr_call;
pub(crate) use slack_ioprio::{ioprio_call, prctl_slack};
pub(crate) use tid::{current_tid, is_virtual_tid, set_clear_child_tid, signal_tid, task_id, vtid};

pub(crate) use create::*;
pub(crate) use info::*;
pub(crate) use join::*;
pub(crate) use keys::*;
pub(crate) use name::*;
