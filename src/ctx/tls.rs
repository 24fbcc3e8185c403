//! Per-coroutine thread-local storage: a thread pointer of its own.
//!
//! # Why
//!
//! On x86_64 the thread pointer (the fs base) *is* the thread to libc and to
//! compiled code: `__thread`/`thread_local` variables, errno, malloc's
//! per-thread cache, Rust std's current-thread handle and glibc's thread
//! descriptor (`struct pthread`, TLS variant II: the static TLS blocks sit
//! just below it) are all found through it. Coroutines that share their
//! worker's thread pointer share all of that, and real programs break (Rust
//! std aborts at its second thread, C++ `thread_local` state leaks between
//! connections). So a thread made by `pthread_create` gets its own block,
//! built the way glibc's `pthread_create` builds one, and the scheduler
//! installs its thread pointer for as long as the coroutine runs.
//!
//! # How a block is built
//!
//! ld.so's `_dl_allocate_tls(NULL)` (GLIBC_PRIVATE, what `pthread_create`
//! uses) allocates the static TLS and the descriptor, makes the DTV and
//! copies every module's TLS image. We then fill the descriptor header as
//! `pthread_create` does: `tcb` and `self` point at it, and `sysinfo`, the
//! stack-protector canary (`%fs:0x28`) and the pointer guard (`%fs:0x30`,
//! setjmp mangling) are copied from the creating thread, with the
//! `multiple_threads` flag and the CET word. Further in the descriptor:
//! `tid` is the worker's kernel tid (what `gettid` returns in the coroutine,
//! and what the kernel checks for PI and robust futexes), the robust-mutex
//! list head and the thread-list links point at themselves (empty lists:
//! glibc's `fork` unlinks the forking thread in the child), and the rseq area says "not
//! registered" so `sched_getcpu` asks the kernel.
//!
//! Nothing here is guessed: `check_layout` finds `tid` and the robust head
//! in the running thread's own descriptor (its tid, then the head that
//! points at itself with glibc's futex offset right after it), and
//! libc's own TLS block through `dl_iterate_phdr`. If anything does not
//! match, one line on stderr says so and coroutines keep sharing their
//! worker's TLS, as before.
//!
//! The storage is a slot of `tls_storage.rs` (fresh zero pages, the
//! thread pointer placed so that what a coroutine writes is one page),
//! given to `_dl_allocate_tls(tp)`; ld.so's own malloc'd storage
//! (`_dl_allocate_tls(NULL)`) only if ld.so cannot tell its static TLS size.
//!
//! # Reuse
//!
//! glibc frees a thread's malloc cache (tcache) at thread exit with an
//! internal function it does not export: a block thrown away leaks that
//! cache. So blocks are pooled. A reused block gets a fresh DTV and fresh
//! TLS images for every module (`_dl_deallocate_tls(tp, false)` then
//! `_dl_allocate_tls(tp)`), except libc's own block (144 bytes here), which
//! is saved and put back: it holds the tcache and arena pointers, which a
//! new thread may inherit from a dead one. What else it holds is reset in
//! the new coroutine before its code runs (`start_thread`): errno, the
//! locale (`uselocale(LC_GLOBAL_LOCALE)`) and the ctype tables
//! (`__ctype_init`, as glibc's `start_thread` calls it).
//!
//! # Switching
//!
//! `set_thread_pointer` is one `wrfsbase` (~6 ns) where the kernel allows
//! it (`AT_HWCAP2` bit 1), else the `arch_prctl(ARCH_SET_FS)` syscall. The
//! compiler treats the thread pointer as constant inside a function, so
//! nothing between installing a coroutine's and putting the worker's back
//! touches TLS (`sched/resume.rs`, `run_task_inline`: the two installs and
//! the resume only): a TLS address the scheduler computed anywhere else in
//! the function is the worker's, which is installed wherever it is used.

use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// tcbhead_t (sysdeps/x86_64/nptl/tls.h), stable since glibc 2.x.
const TCB: usize = 0x00;
/// dtv_t *dtv.
const DTV: usize = 0x08;
const SELF: usize = 0x10;
/// int multiple_threads, int gscope_flag.
const MULTIPLE_THREADS: usize = 0x18;
const SYSINFO: usize = 0x20;
const STACK_GUARD: usize = 0x28;
const POINTER_GUARD: usize = 0x30;
/// unsigned int feature_1 (CET).
const FEATURE_1: usize = 0x48;
/// glibc's robust list futex offset on x86_64: offsetof(__lock) -
/// offsetof(__list.__next) in pthread_mutex_t.
const ROBUST_FUTEX_OFFSET: i64 = -32;
/// Idle blocks kept for reuse.
const POOL_MAX: usize = 4096;

type AllocateTls = unsafe extern "C" fn(*mut c_void) -> *mut c_void;
type DeallocateTls = unsafe extern "C" fn(*mut c_void, bool);
type VoidFn = unsafe extern "C" fn();

/// What was learnt of the running glibc at start.
struct Glibc {
    allocate: AllocateTls,
    deallocate: DeallocateTls,
    call_tls_dtors: VoidFn,
    ctype_init: VoidFn,
    /// Offsets in `struct pthread`: the thread-list links (`list_t list`,
    /// through which glibc links its threads and, in a forked child,
    /// unlinks the forking one), the kernel tid, the robust list head.
    list: usize,
    tid: usize,
    robust_head: usize,
    /// The thread glibc's lists were learnt on (the process's first) and
    /// the head of its list, then; ld.so's `_rtld_global` (start, length),
    /// where every list head lives (`fork_lists.rs`).
    first_thread: (usize, usize),
    rtld: (usize, usize),
    /// libc's static TLS block: offset from the thread pointer and size.
    libc_block: (isize, usize),
    /// Offset of the rseq area from the thread pointer, if glibc has one.
    rseq: Option<isize>,
    fsgsbase: bool,
}

static GLIBC: OnceLock<Option<Glibc>> = OnceLock::new();
/// Blocks made so far (for stats and the bench).
static MADE: AtomicUsize = AtomicUsize::new(0);
static POOL: crate::sys::ForkMutex<Vec<usize>> = crate::sys::ForkMutex::new(Vec::new());

/// A coroutine's own static TLS and glibc thread descriptor. Owned by its
/// task; given back to the pool when the task ends.
pub struct ThreadBlock {
    tp: usize,
}

impl ThreadBlock {
    /// The thread pointer (fs base) of this block.
    pub fn tp(&self) -> usize {
        self.tp
    }

    /// The block's DTV, as `_dl_allocate_tls` made it (ld.so may move it
    /// later, when a module loaded since needs a longer one).
    pub fn dtv(&self) -> usize {
        // SAFETY: the block is live while `self` is, and its TCB header
        // (tcbhead_t) holds the DTV pointer at `DTV`.
        unsafe { *((self.tp + DTV) as *const usize) }
    }
}

fn lookup(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: `name` is NUL-terminated; RTLD_DEFAULT searches every object.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// The thread pointer of the calling thread (glibc keeps it in the
/// descriptor's `self` word, which is how it finds THREAD_SELF).
#[inline]
pub fn thread_pointer() -> usize {
    let tp: usize;
    // SAFETY: reads %fs:0x10, which glibc sets in every thread it makes
    // (and we in every block we make).
    unsafe {
        std::arch::asm!("mov {}, qword ptr fs:[0x10]", out(reg) tp,
            options(nostack, readonly, preserves_flags))
    };
    tp
}

/// Installs `tp` as this thread's thread pointer.
///
/// # Safety
/// `tp` must be a thread pointer built by this module or a real thread's;
/// the caller must not use TLS addresses computed under the previous one.
#[inline]
pub unsafe fn set_thread_pointer(tp: usize) {
    if glibc().is_some_and(|g| g.fsgsbase) {
        // SAFETY: the kernel enabled FSGSBASE (AT_HWCAP2 bit 1), so the
        // instruction is allowed in user mode; `tp` is valid (caller).
        unsafe { std::arch::asm!("wrfsbase {}", in(reg) tp, options(nostack, preserves_flags)) };
    } else {
        // arch_prctl(ARCH_SET_FS, tp) made directly: the `syscall` symbol
        // may be interposed, and this must not re-enter any hook.
        let ret: isize;
        // SAFETY: a plain syscall with two integer arguments.
        unsafe {
            std::arch::asm!("syscall",
                inlateout("rax") libc::SYS_arch_prctl as isize => ret,
                in("rdi") 0x1002, in("rsi") tp,
                lateout("rcx") _, lateout("r11") _, options(nostack))
        };
        debug_assert_eq!(ret, 0);
    }
}

/// Reads the word at `tp + off`.
///
/// # Safety
/// `tp + off` must lie in a live descriptor.
unsafe fn word(tp: usize, off: usize) -> usize {
    // SAFETY: the caller's contract.
    unsafe { ((tp + off) as *const usize).read() }
}

/// # Safety
/// `tp + off` must lie in a descriptor this thread may write.
unsafe fn set_word(tp: usize, off: usize, v: usize) {
    // SAFETY: the caller's contract.
    unsafe { ((tp + off) as *mut usize).write(v) }
}

/// libc.so.6's static TLS block in the calling thread: (address, size).
fn libc_tls_block() -> Option<(usize, usize)> {
    struct Found(Option<(usize, usize)>);
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info and our `data`.
        let (info, found) = unsafe { (&*info, &mut *(data as *mut Found)) };
        if info.dlpi_name.is_null() {
            return 0;
        }
        // SAFETY: a NUL-terminated path owned by ld.so.
        let name = unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes();
        if !name.ends_with(b"/libc.so.6") && name != b"libc.so.6" {
            return 0;
        }
        for i in 0..info.dlpi_phnum as usize {
            // SAFETY: dlpi_phdr has dlpi_phnum entries.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            if ph.p_type == libc::PT_TLS && !info.dlpi_tls_data.is_null() {
                found.0 = Some((info.dlpi_tls_data as usize, ph.p_memsz as usize));
            }
        }
        1
    }
    let mut found = Found(None);
    // SAFETY: `each` only reads what ld.so passes and writes `found`.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut found as *mut Found as *mut c_void) };
    found.0
}

/// The offset of `list_t list` in the calling thread's descriptor: the
/// first pair of words (after the header) that both point into ld.so's
/// `_rtld_global`, where the list heads live, at a head whose `next`
/// and `prev` point back at this pair (checked before the start of any
/// other thread, so the main thread is alone on its list).
fn find_thread_list(tp: usize) -> Option<usize> {
    let (rtld, len) = rtld_global()?;
    let inside = |p: usize| p >= rtld && p < rtld + len && p.is_multiple_of(8);
    let mut off = 0x80;
    while off < 0x400 {
        // SAFETY: the scan stays in the first KiB of the live descriptor,
        // and `head` is only read once it is known to lie in _rtld_global.
        unsafe {
            let (next, prev) = (word(tp, off), word(tp, off + 8));
            if next == prev
                && inside(next)
                && word(next, 0) == tp + off
                && word(next, 8) == tp + off
            {
                return Some(off);
            }
        }
        off += 8;
    }
    None
}

/// ld.so's `_rtld_global`: its address and a generous length (the whole
/// structure is 4,336 bytes in glibc 2.36).
fn rtld_global() -> Option<(usize, usize)> {
    Some((lookup(c"_rtld_global")? as usize, 16384))
}

/// Checks the running glibc against what this module writes; `Err` names
/// the first mismatch.
fn check_layout() -> Result<Glibc, &'static str> {
    let allocate = lookup(c"_dl_allocate_tls").ok_or("no _dl_allocate_tls")?;
    let deallocate = lookup(c"_dl_deallocate_tls").ok_or("no _dl_deallocate_tls")?;
    let call_tls_dtors = lookup(c"__call_tls_dtors").ok_or("no __call_tls_dtors")?;
    let ctype_init = lookup(c"__ctype_init").ok_or("no __ctype_init")?;
    let tp = thread_pointer();
    // SAFETY: `tp` is this thread's live descriptor; its header is 0x80
    // bytes and the scan below stays in the first 4 KiB of `struct pthread`
    // (2,304 bytes in glibc 2.36; the robust head is near its middle).
    unsafe {
        if word(tp, TCB) != tp || word(tp, SELF) != tp {
            return Err("the thread pointer is not glibc's descriptor");
        }
        let list = find_thread_list(tp).ok_or("the thread list links not found")?;
        let tid = crate::sys::gettid();
        let mut found = None;
        let mut off = 0x80;
        while off + 32 <= 0x900 {
            let t = ((tp + off) as *const i32).read();
            if t == tid {
                let head = off + 16;
                if word(tp, head) == tp + head && word(tp, head + 8) as i64 == ROBUST_FUTEX_OFFSET {
                    found = Some((off, head));
                    break;
                }
            }
            off += 4;
        }
        let (tid, robust_head) = found.ok_or("tid and robust list head not found")?;
        let (block, size) = libc_tls_block().ok_or("libc's TLS block not found")?;
        if block >= tp || size > 4096 {
            return Err("libc's TLS block is not static TLS below the descriptor");
        }
        let rseq = lookup(c"__rseq_offset")
            .zip(lookup(c"__rseq_size"))
            .and_then(|(o, s)| (*(s as *const u32) != 0).then(|| *(o as *const isize)));
        let fsgsbase = libc::getauxval(libc::AT_HWCAP2) & 2 != 0;
        Ok(Glibc {
            allocate: std::mem::transmute::<*mut c_void, AllocateTls>(allocate),
            deallocate: std::mem::transmute::<*mut c_void, DeallocateTls>(deallocate),
            call_tls_dtors: std::mem::transmute::<*mut c_void, VoidFn>(call_tls_dtors),
            ctype_init: std::mem::transmute::<*mut c_void, VoidFn>(ctype_init),
            list,
            tid,
            robust_head,
            first_thread: (tp, word(tp, list)),
            rtld: rtld_global().ok_or("no _rtld_global")?,
            libc_block: (block as isize - tp as isize, size),
            rseq,
            fsgsbase,
        })
    }
}

/// Learns the running glibc, once, on a thread glibc made (the main thread
/// at start). Returns whether coroutines can have TLS of their own; if not,
/// says why once.
pub fn init() -> bool {
    GLIBC
        .get_or_init(|| match check_layout() {
            Ok(g) => Some(g),
            Err(why) => {
                crate::sys::raw_stderr(b"corun: threads share their worker's TLS (");
                crate::sys::raw_stderr(why.as_bytes());
                crate::sys::raw_stderr(b"): __thread variables are per worker\n");
                None
            }
        })
        .is_some()
}

/// What `fork_lists.rs` needs of glibc's thread lists, if coroutines have
/// descriptors of their own: the offsets of the list links and of the tid
/// in `struct pthread`, the first thread's descriptor and list head, and
/// `_rtld_global`'s span.
pub(super) fn thread_lists() -> Option<super::fork_lists::Layout> {
    glibc().map(|g| super::fork_lists::Layout {
        list: g.list,
        tid: g.tid,
        first_thread: g.first_thread,
        rtld: g.rtld,
    })
}

fn glibc() -> Option<&'static Glibc> {
    GLIBC.get().and_then(|g| g.as_ref())
}

/// Whether coroutines get TLS of their own.
pub fn available() -> bool {
    glibc().is_some()
}

/// Blocks made since start (pooled ones are counted once).
pub fn made() -> usize {
    MADE.load(Ordering::Relaxed)
}

impl ThreadBlock {
    /// A block for a coroutine that will run on the thread with kernel id
    /// `tid`, its header copied from the calling (glibc-made) thread. Called
    /// by the scheduler, outside any coroutine TLS.
    pub fn new(tid: i32) -> Option<ThreadBlock> {
        let g = glibc()?;
        let pooled = crate::sched::fdtable::lock(POOL.get()).pop();
        let tp = match pooled {
            // SAFETY: a block of ours, idle, owned by nobody else now.
            Some(tp) => unsafe { renew(g, tp) }?,
            None => {
                let tp = if super::tls_storage::in_use() {
                    // A zeroed slot of ours (`tls_storage.rs`): ld.so makes
                    // the DTV and copies the modules' TLS images.
                    let slot = super::tls_storage::take()?;
                    // SAFETY: `slot` is a fresh block's thread pointer,
                    // aligned, with the static TLS size free on both sides.
                    let tp = unsafe { (g.allocate)(slot as *mut c_void) } as usize;
                    if tp == 0 {
                        super::tls_storage::give_back(slot);
                    }
                    tp
                } else {
                    // SAFETY: NULL asks ld.so to allocate the storage too.
                    unsafe { (g.allocate)(std::ptr::null_mut()) as usize }
                };
                if tp == 0 {
                    return None;
                }
                MADE.fetch_add(1, Ordering::Relaxed);
                tp
            }
        };
        let me = thread_pointer();
        // SAFETY: `tp` is a descriptor ld.so just initialised (or we
        // renewed) and nobody runs on; `me` is this thread's live one.
        unsafe {
            set_word(tp, TCB, tp);
            set_word(tp, SELF, tp);
            for off in [MULTIPLE_THREADS, SYSINFO, STACK_GUARD, POINTER_GUARD] {
                set_word(tp, off, word(me, off));
            }
            ((tp + FEATURE_1) as *mut u32).write(((me + FEATURE_1) as *const u32).read());
            // The worker owns the kernel thread: it is the tid the kernel
            // knows (PI and robust futexes compare it) and gettid returns.
            ((tp + g.tid) as *mut i32).write(tid);
            // An empty list of its own: glibc's fork unlinks the forking
            // thread from its lists in the child (a zero link would crash).
            set_word(tp, g.list, tp + g.list);
            set_word(tp, g.list + 8, tp + g.list);
            let head = tp + g.robust_head;
            set_word(tp, g.robust_head, head);
            set_word(tp, g.robust_head + 8, ROBUST_FUTEX_OFFSET as usize);
            set_word(tp, g.robust_head + 16, 0);
            if let Some(r) = g.rseq {
                // struct rseq: u32 cpu_id_start, u32 cpu_id. -2 is
                // RSEQ_CPU_ID_REGISTRATION_FAILED: sched_getcpu asks the kernel.
                let area = (tp as isize + r) as usize;
                ((area + 4) as *mut u32).write(-2i32 as u32);
            }
        }
        Some(ThreadBlock { tp })
    }

    /// Gives the block back for reuse (or frees it when the pool is full).
    /// Its coroutine has ended; its destructors ran (`run_thread_dtors`).
    pub fn release(self) {
        let tp = self.tp;
        std::mem::forget(self);
        let mut pool = crate::sched::fdtable::lock(POOL.get());
        if pool.len() < POOL_MAX {
            pool.push(tp);
            return;
        }
        drop(pool);
        if let Some(g) = glibc() {
            let own = super::tls_storage::in_use();
            // SAFETY: our block, unused from now on; `true` frees the
            // storage ld.so allocated, `false` only the DTV (the storage
            // is a slot of `tls_storage`). (Its malloc cache leaks: see
            // the top.)
            unsafe { (g.deallocate)(tp as *mut c_void, !own) };
            if own {
                super::tls_storage::give_back(tp);
            }
        }
    }
}

impl Drop for ThreadBlock {
    fn drop(&mut self) {
        // A block is given back with `release`; one dropped otherwise (a
        // task that never ran) goes back too.
        ThreadBlock { tp: self.tp }.release();
    }
}

/// In a forked child: the pool's lock may have been held by another
/// thread at the fork.
pub fn after_fork_child() {
    POOL.unlock_after_fork(Vec::new);
    super::tls_storage::after_fork_child();
}

/// Fresh DTV and TLS images for a pooled block, keeping libc's own block
/// (malloc's per-thread cache and arena).
///
/// # Safety
/// `tp` is an idle block of ours.
unsafe fn renew(g: &Glibc, tp: usize) -> Option<usize> {
    let (off, size) = g.libc_block;
    let libc_block = (tp as isize + off) as *mut u8;
    let mut saved = [0u8; 4096];
    // SAFETY: libc's block lies in the block's static TLS (checked at
    // start: below the descriptor, at most 4 KiB).
    unsafe { std::ptr::copy_nonoverlapping(libc_block, saved.as_mut_ptr(), size) };
    // SAFETY: frees the DTV and dynamic TLS, keeps the storage (false);
    // then ld.so makes a new DTV and copies every module's TLS image.
    let r = unsafe {
        (g.deallocate)(tp as *mut c_void, false);
        (g.allocate)(tp as *mut c_void)
    };
    if r.is_null() {
        return None;
    }
    // SAFETY: as above.
    unsafe { std::ptr::copy_nonoverlapping(saved.as_ptr(), libc_block, size) };
    Some(tp)
}

/// A coroutine moves to the worker whose kernel thread is `tid`
/// (`sched::shed`): its descriptor's `tid` becomes that thread's, as the
/// kernel will see it. False (nothing written) if its robust-mutex list is
/// not empty: the kernel checks those owners against the old tid.
///
/// # Safety
/// `tp` is the thread pointer of a block of ours whose coroutine is not
/// running.
pub unsafe fn move_to_kernel_thread(tp: usize, tid: i32) -> bool {
    let Some(g) = glibc() else { return false };
    let head = tp + g.robust_head;
    // SAFETY: the caller's block; nobody runs on it now.
    unsafe {
        if word(tp, g.robust_head) != head {
            return false;
        }
        ((tp + g.tid) as *mut i32).write(tid);
    }
    true
}

/// First thing a coroutine with a block of its own does, on its own thread
/// pointer: libc's per-thread state as glibc's `start_thread` leaves it.
pub fn start_thread() {
    let Some(g) = glibc() else { return };
    // SAFETY: no arguments; they set this thread's ctype table pointers and
    // locale, which glibc does at the start of every thread.
    unsafe {
        // LC_GLOBAL_LOCALE is (locale_t) -1 in <locale.h>.
        libc::uselocale(-1isize as libc::locale_t);
        (g.ctype_init)();
    }
    crate::sys::set_errno(0);
}

/// What the kernel does at a thread's exit for its robust mutexes, for the
/// ending coroutine's own list (`robust.rs`). Called in the ending
/// coroutine, on its own thread pointer, after its destructors.
pub fn end_robust_list() {
    let Some(g) = glibc() else { return };
    let tp = thread_pointer();
    // SAFETY: the calling thread's own descriptor (a block of ours, as the
    // caller checked), whose thread runs nothing more that locks.
    unsafe {
        let tid = *((tp + g.tid) as *const i32);
        super::robust::owner_died(tp + g.robust_head, tid);
    }
}

/// Runs the thread's C++ `thread_local` destructors (registered through
/// `__cxa_thread_atexit_impl`), as glibc does when a thread ends. Called
/// in the ending coroutine, on its own thread pointer.
pub fn run_thread_dtors() {
    if let Some(g) = glibc() {
        // SAFETY: glibc's own exit path for the calling thread's list.
        unsafe { (g.call_tls_dtors)() };
    }
}
