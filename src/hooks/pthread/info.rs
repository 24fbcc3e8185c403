//! Everything else that takes a `pthread_t`: attributes,
//! affinity, scheduling, `pthread_kill`, `pthread_sigqueue`, `raise`.

use super::*;

/// The coroutine behind `id` exists (and has not finished its work).
pub(super) fn alive(id: u64) -> Option<TaskRef> {
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
        let own = || (id == current_id()).then(sched::current_stack).flatten();
        // A stack the program gave is reported as given (glibc does too).
        match task.program_stack.or_else(own) {
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
pub(super) fn worker_tid(task: &TaskRef) -> i32 {
    let rt = match sched::runtime() {
        Some(r) => r,
        None => return crate::sys::gettid(),
    };
    let w = rt.workers.get(task.home()).unwrap_or(rt.workers.at(0));
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
pub(super) fn send_to_coroutine(task: &TaskRef, sig: c_int, info: &sched::siginfo::Info) -> c_int {
    if !(1..=64).contains(&sig) {
        return libc::EINVAL;
    }
    let handled = crate::hooks::sigdeliver::HANDLER[sig as usize].load(Ordering::Acquire) != 0;
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
pub(super) fn own_siginfo(sig: c_int, code: c_int, value: usize) -> sched::siginfo::Info {
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
        // main is the process's first kernel thread: the kernel's call.
        // SAFETY: the caller's contract; getpid has no preconditions.
        Some(MAIN_ID) => errno_of(unsafe { real::sched_setaffinity(libc::getpid(), size, set) }),
        // A coroutine cannot be pinned: its mask is kept (affinity.rs).
        Some(id) => match alive(id).and(rec_of(id)) {
            // SAFETY: the caller's buffer of `size` bytes.
            Some(rec) => unsafe { affinity::set(&rec, size, set.cast()) },
            None => libc::ESRCH,
        },
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
    match decode(t) {
        // SAFETY: the caller's contract; getpid has no preconditions.
        Some(MAIN_ID) => errno_of(unsafe { real::sched_getaffinity(libc::getpid(), size, set) }),
        Some(id) => match alive(id).and(rec_of(id)) {
            // SAFETY: the caller's buffer of `size` bytes.
            Some(rec) => unsafe { affinity::get(&rec, size, set.cast()) },
            None => libc::ESRCH,
        },
        // SAFETY: the caller's contract.
        None => unsafe { real::pthread_getaffinity_np(t, size, set) },
    }
}

/// A libc result (-1 and errno) as a pthread one (0 or the errno value).
fn errno_of(r: c_int) -> c_int {
    if r < 0 {
        crate::sys::errno()
    } else {
        0
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_getcpuclockid(t: pthread_t, clk: *mut clockid_t) -> c_int {
    let Some(id) = decode(t) else {
        // SAFETY: the caller's contract.
        return unsafe { real::pthread_getcpuclockid(t, clk) };
    };
    let Some(task) = alive(id) else {
        return libc::ESRCH;
    };
    // The thread's own clock (sched/cpuclock.rs), named as the kernel
    // names a thread's, with the thread's tid (hooks/clock.rs reads it).
    task.ident.cpu.track(id == current_id());
    // SAFETY: a writable out-pointer by the caller's contract.
    unsafe { *clk = sched::cpuclock::kernel_thread_clock(super::vtid(id)) };
    0
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
    let kept = lookup(id).map_or(libc::SCHED_OTHER, |(_, rec)| {
        rec.policy.load(Ordering::Relaxed)
    });
    // SAFETY: writable out-pointers by the caller's contract.
    unsafe {
        *policy = kept;
        (*p).sched_priority = 0;
    }
    0
}

/// Whether a coroutine thread may take scheduling `policy` with priority
/// `prio`: the non-real-time policies with priority 0 are accepted (kept,
/// with no effect: it shares its worker's scheduling), as the kernel
/// accepts them from an unprivileged thread; the real-time ones get EPERM
/// (a privileged thread gets them natively); anything else EINVAL, as the
/// kernel says.
pub(super) fn policy_check(policy: c_int, prio: c_int) -> Result<(), c_int> {
    match policy {
        libc::SCHED_OTHER | libc::SCHED_BATCH | libc::SCHED_IDLE if prio == 0 => Ok(()),
        libc::SCHED_FIFO | libc::SCHED_RR if (1..=99).contains(&prio) => Err(libc::EPERM),
        _ => Err(libc::EINVAL),
    }
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
    match policy_check(policy, prio) {
        Ok(()) => {
            if let Some((_, rec)) = lookup(id) {
                rec.policy.store(policy, Ordering::Relaxed);
            }
            0
        }
        Err(e) => e,
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
