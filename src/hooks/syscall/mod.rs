//! `syscall(long number, ...)`: the program's own futexes.
//!
//! libstdc++ (std::latch, barrier, counting_semaphore, atomic::wait,
//! future) and Rust std (Mutex, Condvar, thread::park, mpsc) wait with
//! `syscall(SYS_futex, ...)`. A coroutine sleeping in that syscall would
//! hold its worker, and with it the coroutine that would wake it. So for
//! SYS_futex this hook does what the kernel does, on the table of
//! `sched::sync` that the pthread objects already share with native
//! threads (one table, so one word may be waited on both ways):
//!
//! - FUTEX_WAIT, FUTEX_WAIT_BITSET from a coroutine: one check first, by
//!   the kernel, that never sleeps: a FUTEX_CMP_REQUEUE of nobody from the
//!   word to itself. The kernel compares the word and checks the address,
//!   so EAGAIN, EINVAL and EFAULT are its own (a zero bitset is EINVAL
//!   here); success means "would sleep", and the coroutine parks in the
//!   table (`sync::park_on`), comparing again under the bucket lock, until a wake, the deadline (relative, monotonic
//!   for FUTEX_WAIT; absolute on the clock FUTEX_CLOCK_REALTIME chooses for
//!   FUTEX_WAIT_BITSET) or, for a shared (non-PRIVATE) futex, a 10 ms pause
//!   after which it looks whether the word changed: only a word another
//!   process woke can change unseen by the table, and a return of 0 may
//!   always be spurious for a futex waiter.
//! - FUTEX_WAKE, FUTEX_WAKE_BITSET, FUTEX_REQUEUE, FUTEX_CMP_REQUEUE,
//!   FUTEX_WAKE_OP from anyone: coroutines parked in the table first, then
//!   the real kernel call for what is left, which reaches native threads
//!   and other processes. The result is the kernel's count (woken, plus
//!   requeued for the requeues) over both kinds of sleeper: programs use it
//!   (Rust's RwLock asks whether a wake found a writer). When no coroutine
//!   sleeps in the table at all (`sync::any_parked`), the call is the
//!   kernel's, unchanged. FUTEX_WAKE_OP changes its second word under the
//!   table's locks, so no coroutine compares it in between.
//! - a native thread's waits (and every other futex command: PI locks,
//!   FUTEX_WAIT_REQUEUE_PI...) go to the kernel as they are.
//!
//! SYS_gettid, SYS_tgkill, SYS_tkill, SYS_rt_tgsigqueueinfo,
//! SYS_set_tid_address, SYS_sched_setattr and SYS_sched_getattr go to
//! `hooks/pthread/tid.rs`: a coroutine thread's tid is its own there, and
//! so is its clear-child-tid word.
//!
//! The signal calls `rt_sigpending`, `rt_sigtimedwait`, `rt_sigsuspend`,
//! `sigaltstack` and `rt_sigaction` go to their libc hooks (`signals.rs`):
//! a coroutine's signals are corun's, not its worker's. `ioprio_set` and
//! `ioprio_get` on a thread go to `hooks/pthread/sched_attr.rs` (a
//! thread's I/O priority is its own, kept, as its nice value).
//!
//! Raw `close`, `dup2`, `dup3` and `close_range` go to the hooks of those
//! names (`hooks::fdctl`): an fd closed or replaced that way must not leave
//! a stale registration or lose a parked call's file. `io_getevents` and
//! `io_pgetevents` with `min_nr > 0` from a coroutine (libaio's waits for
//! completions, no fd to park on) run on the blocking pool.
//!
//! The calls that wait for an fd, a timer or a child (`read`, `poll`,
//! `nanosleep`, `wait4`... the list is `io.rs`'s) go to their libc hooks
//! from a coroutine: made raw, they held the worker.
//!
//! Every other system call number goes straight to glibc's `syscall`, in
//! the assembly below, without a frame of ours.
//!
//! corun's own code reaches `syscall` too: Rust std's Mutex inside
//! libcorun.so, like the program's, calls the exported name, which the
//! dynamic linker resolves to this hook. Runtime code must never park
//! here (a worker could then wait on a lock a parked coroutine holds), so
//! the exported `syscall` is a few instructions of assembly that look at
//! the return address first: a call from inside libcorun.so jumps to
//! glibc's `syscall` directly, any other goes to `syscall_hook`. The range
//! of libcorun.so's code is read once from its own program headers.
//!
//! The C prototype is variadic. On x86_64 Linux a variadic callee finds
//! its integer arguments where a non-variadic one with the same argument
//! list finds them: number and five arguments in registers, the sixth on
//! the stack. So the hook is declared with seven `c_long`s; when the caller
//! passed fewer, the last ones hold whatever was there and are not used for
//! a call that takes fewer (glibc's own `syscall` reads the same stack slot
//! the same way).
//!
//! SYS_fork, SYS_clone, SYS_clone3 and SYS_seccomp go to `process.rs`:
//! a new process must get its own runtime, a filter must find corun
//! standing aside.
//!
//! `futex_waitv` (SYS_futex_waitv) from a coroutine parks likewise, on all
//! its words at once (`waitv.rs`). Not done: the futex2 calls `futex_wake`/`futex_wait`/
//! `futex_requeue` (454-456; they pass through: a wake there does not reach
//! parked coroutines). A bad pointer to the word of a parked wait, to the
//! timeout or to FUTEX_WAKE_OP's second word faults where the kernel would
//! return EFAULT, when coroutines sleep in the table.

use std::ffi::{c_int, c_long, c_uint};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

mod futex;
mod io;
mod process;
mod signals;
mod waitv;

use futex::{futex, Call};
use futex::{timeout_ns, with_pause, PAST};

use waitv::{waitv, SYS_FUTEX_WAITV};

use crate::sched::in_coroutine;
use crate::sys::{real, set_errno};

/// `io_pgetevents` on x86_64 (not in the libc crate).
const SYS_IO_PGETEVENTS: c_long = 333;

/// libcorun.so's code: [SELF_LO, SELF_HI). Written once, LO first (the
/// trampoline reads LO, then HI).
static SELF_LO: AtomicUsize = AtomicUsize::new(0);
static SELF_HI: AtomicUsize = AtomicUsize::new(0);
static INIT: AtomicBool = AtomicBool::new(false);

/// The exported `syscall`: a call from libcorun.so itself, or with a
/// number the hook has no part in, jumps to glibc's `syscall` (once
/// resolved), so it is glibc's call exactly (no frame of ours: even
/// `syscall(SYS_vfork)` behaves as it does without corun); the program's
/// futex, fd (close, dup2, dup3, close_range), AIO-wait and thread-id
/// calls, and those of `process.rs` (fork, seccomp, and clone and clone3
/// without CLONE_VM: clone3's flags are read from its argument block, so
/// a bad pointer there faults here instead of failing with EFAULT), go to
/// `syscall_hook`. Only rax and r11 are touched (neither
/// carries an argument); the stack is left as the caller made it, so both
/// targets see the original call.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[no_mangle]
#[link_section = ".text.hot.corun"] // a forked child's path: build.rs
pub unsafe extern "C" fn syscall(
    n: c_long,
    a1: c_long,
    a2: c_long,
    a3: c_long,
    a4: c_long,
    a5: c_long,
    a6: c_long,
) -> c_long {
    core::arch::naked_asm!(
        // rax: the return address. Inside libcorun.so: glibc's syscall.
        "mov rax, qword ptr [rsp]",
        "mov r11, qword ptr [rip + {lo}@GOTPCREL]",
        "cmp rax, qword ptr [r11]",
        "jb 2f",
        "mov r11, qword ptr [rip + {hi}@GOTPCREL]",
        "cmp rax, qword ptr [r11]",
        "jb 3f",
        // The program's call: futex numbers, the fd calls corun keeps
        // track of, the AIO waits and those about a thread's tid go to
        // the hook, the rest to glibc.
        "2:",
        // The fd, timer and child waits of `io.rs`: those below 64 by
        // one bit test, the others one by one.
        "cmp rdi, 64",
        "jae 6f",
        "mov rax, {io_low}",
        "bt rax, rdi",
        "jc 4f",
        "jmp 7f",
        "6:",
        "cmp rdi, {msgsnd}",
        "je 4f",
        "cmp rdi, {msgrcv}",
        "je 4f",
        "cmp rdi, {clock_nanosleep}",
        "je 4f",
        "cmp rdi, {epoll_wait}",
        "je 4f",
        "cmp rdi, {waitid}",
        "je 4f",
        "cmp rdi, {pselect6}",
        "je 4f",
        "cmp rdi, {ppoll}",
        "je 4f",
        "cmp rdi, {epoll_pwait}",
        "je 4f",
        "cmp rdi, {accept4}",
        "je 4f",
        "7:",
        "cmp rdi, {futex}",
        "je 4f",
        "cmp rdi, {waitv}",
        "je 4f",
        "cmp rdi, {close}",
        "je 4f",
        "cmp rdi, {dup2}",
        "je 4f",
        "cmp rdi, {dup3}",
        "je 4f",
        "cmp rdi, {close_range}",
        "je 4f",
        "cmp rdi, {getevents}",
        "je 4f",
        "cmp rdi, {pgetevents}",
        "je 4f",
        "cmp rdi, {gettid}",
        "je 4f",
        "cmp rdi, {set_tid_address}",
        "je 4f",
        "cmp rdi, {tkill}",
        "je 4f",
        "cmp rdi, {tgkill}",
        "je 4f",
        "cmp rdi, {tgsigqueueinfo}",
        "je 4f",
        "cmp rdi, {setattr}",
        "je 4f",
        "cmp rdi, {getattr}",
        "je 4f",
        "cmp rdi, {fork}",
        "je 4f",
        "cmp rdi, {sigprocmask}",
        "je 4f",
        "cmp rdi, {sigpending}",
        "je 4f",
        "cmp rdi, {sigtimedwait}",
        "je 4f",
        "cmp rdi, {sigsuspend}",
        "je 4f",
        "cmp rdi, {sigaltstack}",
        "je 4f",
        "cmp rdi, {sigaction}",
        "je 4f",
        "cmp rdi, {ioprio_set}",
        "je 4f",
        "cmp rdi, {ioprio_get}",
        "je 4f",
        "cmp rdi, {seccomp}",
        "je 4f",
        // A clone with CLONE_VM makes a thread (or a vfork-like child on
        // this very stack, which must find no frame of ours): glibc's.
        "cmp rdi, {clone}",
        "jne 5f",
        "test rsi, {vm}",
        "jnz 3f",
        "jmp 4f",
        "5:",
        "cmp rdi, {clone3}",
        "jne 3f",
        "test rsi, rsi",
        "jz 3f",
        "mov rax, qword ptr [rsi]",
        "test rax, {vm}",
        "jnz 3f",
        "jmp 4f",
        "3:",
        "mov r11, qword ptr [rip + {real}@GOTPCREL]",
        "mov r11, qword ptr [r11]",
        "test r11, r11",
        "jz 4f",
        "jmp r11",
        // (Also before glibc's syscall is resolved: the hook resolves it.)
        "4:",
        "jmp {hook}",
        lo = sym SELF_LO,
        hi = sym SELF_HI,
        real = sym real::SYSCALL,
        hook = sym syscall_hook,
        io_low = const io::LOW_MASK,
        msgsnd = const libc::SYS_msgsnd,
        msgrcv = const libc::SYS_msgrcv,
        clock_nanosleep = const libc::SYS_clock_nanosleep,
        epoll_wait = const libc::SYS_epoll_wait,
        waitid = const libc::SYS_waitid,
        pselect6 = const libc::SYS_pselect6,
        ppoll = const libc::SYS_ppoll,
        epoll_pwait = const libc::SYS_epoll_pwait,
        accept4 = const libc::SYS_accept4,
        futex = const libc::SYS_futex,
        waitv = const SYS_FUTEX_WAITV,
        close = const libc::SYS_close,
        dup2 = const libc::SYS_dup2,
        dup3 = const libc::SYS_dup3,
        close_range = const libc::SYS_close_range,
        getevents = const libc::SYS_io_getevents,
        pgetevents = const SYS_IO_PGETEVENTS,
        gettid = const libc::SYS_gettid,
        set_tid_address = const libc::SYS_set_tid_address,
        tkill = const libc::SYS_tkill,
        tgkill = const libc::SYS_tgkill,
        tgsigqueueinfo = const libc::SYS_rt_tgsigqueueinfo,
        setattr = const libc::SYS_sched_setattr,
        getattr = const libc::SYS_sched_getattr,
        fork = const libc::SYS_fork,
        sigprocmask = const libc::SYS_rt_sigprocmask,
        sigpending = const libc::SYS_rt_sigpending,
        sigtimedwait = const libc::SYS_rt_sigtimedwait,
        sigsuspend = const libc::SYS_rt_sigsuspend,
        sigaltstack = const libc::SYS_sigaltstack,
        sigaction = const libc::SYS_rt_sigaction,
        ioprio_set = const libc::SYS_ioprio_set,
        ioprio_get = const libc::SYS_ioprio_get,
        seccomp = const libc::SYS_seccomp,
        clone = const libc::SYS_clone,
        clone3 = const libc::SYS_clone3,
        vm = const libc::CLONE_VM,
    )
}

/// Finds libcorun.so's code range and glibc's `syscall` (idempotent; the
/// runtime calls it at start, the hook on its first call).
pub fn init() {
    if INIT.swap(true, Ordering::AcqRel) {
        return;
    }
    real::syscall_fn();
    if let Some((lo, hi)) = own_code() {
        SELF_LO.store(lo, Ordering::Release);
        SELF_HI.store(hi, Ordering::Release);
    }
}

/// The lowest and highest address of libcorun.so's executable segments.
fn own_code() -> Option<(usize, usize)> {
    extern "C" {
        /// The linker's symbol for this object's own ELF header, at its
        /// load base (`dladdr` found the base too, but searched the
        /// symbol table for a name nobody read: 10,500 instructions of
        /// every process's start).
        static __ehdr_start: u8;
    }
    // Only the address is taken (no read): the linker defines the symbol
    // for every ELF object whose first segment maps its header.
    let base = std::ptr::addr_of!(__ehdr_start) as usize;
    // SAFETY: a loaded ELF object's header is mapped at its base (the first
    // PT_LOAD starts at file offset 0); checked by its magic.
    let eh = unsafe { &*(base as *const libc::Elf64_Ehdr) };
    if eh.e_ident[..4] != [0x7f, b'E', b'L', b'F'] {
        return None;
    }
    // SAFETY: the program headers lie in that first mapped segment.
    let phs = unsafe {
        std::slice::from_raw_parts(
            (base + eh.e_phoff as usize) as *const libc::Elf64_Phdr,
            eh.e_phnum as usize,
        )
    };
    let (mut lo, mut hi) = (usize::MAX, 0);
    for ph in phs {
        if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_X != 0 {
            lo = lo.min(base + ph.p_vaddr as usize);
            hi = hi.max(base + (ph.p_vaddr + ph.p_memsz) as usize);
        }
    }
    (lo < hi).then_some((lo, hi))
}

/// glibc's `syscall` with every argument.
fn real6(n: c_long, a: [c_long; 6]) -> c_long {
    // SAFETY: the caller's own call, made as it asked.
    unsafe { real::syscall!(n, a[0], a[1], a[2], a[3], a[4], a[5]) }
}

/// The program's futex calls (and any call made before glibc's `syscall`
/// was resolved).
unsafe extern "C" fn syscall_hook(
    n: c_long,
    a1: c_long,
    a2: c_long,
    a3: c_long,
    a4: c_long,
    a5: c_long,
    a6: c_long,
) -> c_long {
    if !INIT.load(Ordering::Relaxed) {
        init();
    }
    if n == libc::SYS_futex {
        let call = Call {
            uaddr: a1,
            op: a2 as c_int,
            val: a3,
            t: a4,
            uaddr2: a5,
            val3: a6,
        };
        if let Some(r) = futex(call) {
            return r;
        }
    } else if n == SYS_FUTEX_WAITV && in_coroutine() {
        return waitv(a1, a2 as c_uint, a3 as c_uint, a4, a5 as libc::clockid_t);
    } else if n == libc::SYS_rt_sigprocmask {
        if let Some(r) = crate::hooks::sigmask::raw_call(a1 as c_int, a2 as _, a3 as _, a4 as usize)
        {
            return r;
        }
    } else if signals::NUMBERS.contains(&n) {
        if let Some(r) = signals::call(n, [a1, a2, a3, a4]) {
            return r;
        }
    } else if n == libc::SYS_io_uring_setup
        || n == libc::SYS_io_uring_enter
        || n == libc::SYS_io_uring_register
    {
        // The ring is tied to this kernel task (hooks/io_uring.rs): the
        // thread never moves to another worker from now on.
        crate::sched::bind_to_kernel_thread();
    } else if let Some(r) = thread_id_call(n, [a1, a2, a3, a4]) {
        return r;
    } else if process::NUMBERS.contains(&n) {
        return process::call(n, [a1, a2, a3, a4, a5, a6]);
    } else if let Some(r) = fd_call(n, [a1, a2, a3]) {
        return r;
    } else if io::NUMBERS.contains(&n) && in_coroutine() {
        if let Some(r) = io::call(n, [a1, a2, a3, a4, a5, a6]) {
            return r;
        }
    } else if (n == libc::SYS_io_getevents || n == SYS_IO_PGETEVENTS) && a2 > 0 && in_coroutine() {
        // A wait for AIO completions (libaio's io_getevents with min_nr >
        // 0): no fd to park on, so a helper makes it while the coroutine
        // parks. With min_nr 0 it never waits: made here. A signal for the
        // caller ends the wait with EINTR, never restarted (signal(7)).
        return aio_wait(n, [a1, a2, a3, a4, a5, a6]);
    }
    real6(n, [a1, a2, a3, a4, a5, a6])
}

/// Raw `close`, `dup2`, `dup3` and `close_range`: what their libc names do
/// (`hooks::fdctl`), so an fd replaced or closed this way is known to
/// corun too (its waiters wake, a parked call keeps its file).
fn fd_call(n: c_long, a: [c_long; 3]) -> Option<c_long> {
    use crate::hooks::fdctl;
    // SAFETY: the hooks take plain integers, as the system calls do.
    let r = unsafe {
        match n {
            libc::SYS_close => fdctl::close(a[0] as c_int),
            libc::SYS_dup2 => fdctl::dup2(a[0] as c_int, a[1] as c_int),
            libc::SYS_dup3 => fdctl::dup3(a[0] as c_int, a[1] as c_int, a[2] as c_int),
            libc::SYS_close_range => {
                fdctl::close_range(a[0] as c_uint, a[1] as c_uint, a[2] as c_int)
            }
            _ => return None,
        }
    };
    Some(r as c_long)
}

/// A coroutine thread's own tid (hooks/pthread/tid.rs): SYS_gettid, and
/// the signals sent to such a tid. None: the kernel's call.
fn thread_id_call(n: c_long, a: [c_long; 4]) -> Option<c_long> {
    use crate::hooks::pthread::{
        current_tid, is_virtual_tid, sched_attr_call, set_clear_child_tid, signal_tid,
    };
    let r = match n {
        libc::SYS_sched_setattr | libc::SYS_sched_getattr => return sched_attr_call(n, a),
        libc::SYS_ioprio_set | libc::SYS_ioprio_get => {
            return crate::hooks::pthread::ioprio_call(n, [a[0], a[1], a[2]])
        }
        libc::SYS_gettid => current_tid(),
        libc::SYS_set_tid_address => set_clear_child_tid(a[0] as usize)?,
        libc::SYS_tgkill => signal_tid(a[0] as c_int, a[1] as c_int, a[2] as c_int, None)?,
        libc::SYS_tkill => signal_tid(-1, a[0] as c_int, a[1] as c_int, None)?,
        libc::SYS_rt_tgsigqueueinfo if a[3] != 0 && is_virtual_tid(a[1] as c_int) => {
            let mut info = [0u64; crate::sched::siginfo::WORDS];
            // SAFETY: the caller's siginfo buffer, the kernel's 128 bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(a[3] as *const u64, info.as_mut_ptr(), info.len())
            };
            signal_tid(a[0] as c_int, a[1] as c_int, a[2] as c_int, Some(&info))?
        }
        _ => return None,
    };
    Some(r as c_long)
}

fn fail(e: c_int) -> c_long {
    set_errno(e);
    -1
}

/// `io_getevents`/`io_pgetevents` (`a`: its arguments) on the blocking
/// pool, cut short by a signal for the caller (EINTR). Made again only
/// when the cut ran no handler: then with the time left of a relative
/// timeout (`a[4]`), which the kernel has read once already.
fn aio_wait(n: c_long, a: [c_long; 6]) -> c_long {
    use crate::sched::blocking::{run_blocking_restartable, OnHandler};
    let started = crate::sys::now_ns();
    let mut left = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let left_at = crate::sched::blocking::SendPtr(&mut left as *mut libc::timespec);
    run_blocking_restartable(OnHandler::Eintr, move |again| {
        let mut args = a;
        if again && a[4] != 0 {
            // SAFETY: the kernel read this timeout before the wait it cut
            // short (else the call had failed with EFAULT, not EINTR).
            let t = unsafe { *(a[4] as *const libc::timespec) };
            let total = crate::sys::timespec_ns(&t);
            let spent = crate::sys::now_ns().saturating_sub(started);
            let rest = total.saturating_sub(spent);
            // SAFETY: `left` lives on the caller's stack until we return.
            unsafe {
                *left_at.get() = libc::timespec {
                    tv_sec: (rest / 1_000_000_000) as libc::time_t,
                    tv_nsec: (rest % 1_000_000_000) as libc::c_long,
                };
            }
            args[4] = left_at.get() as c_long;
        }
        real6(n, args) as isize
    }) as c_long
}
