//! A coroutine thread's scheduling attributes: `sched_setscheduler`,
//! `sched_getscheduler`, `sched_setparam`, `sched_getparam`,
//! `setpriority`/`getpriority` (PRIO_PROCESS) and
//! `syscall(SYS_sched_setattr/SYS_sched_getattr)` on its tid, or on 0 in it.
//!
//! Natively nice and the policy belong to each thread: a thread that
//! lowers its own priority (a background thread's `setpriority(0, 10)`)
//! changes only itself, reads back what it set, and a thread inherits its
//! creator's values. A coroutine cannot be given a kernel priority of its
//! own (it runs on its worker's thread), so, as with affinity
//! (`affinity.rs`), the values are kept in the thread's record, checked
//! as the kernel checks them, reported back, and not applied: the worker's
//! scheduling is untouched (before, a coroutine's `setpriority(0, ...)`
//! reniced its worker and every thread there). The real-time policies are
//! refused with EPERM (`info::policy_check`). `main` and kernel tids get
//! the kernel's calls, as for affinity.

use super::tid::fail;
use super::*;

/// The calling thread's policy and nice value, which a thread it makes
/// starts with (natively a new thread inherits them): the calling
/// coroutine thread's kept ones (`parent`, its record), else (main, a
/// native thread) the kernel's for the calling thread.
pub(super) fn inherited(parent: Option<&ThreadRec>) -> (c_int, c_int) {
    if let Some(rec) = parent {
        return (
            rec.policy.load(Ordering::Relaxed),
            rec.nice.load(Ordering::Relaxed),
        );
    }
    // Both from one system call (this runs at every pthread_create made
    // by main): the calling thread's struct sched_attr, through the real
    // `syscall` so that no hook is re-entered; errno kept.
    let mut attr = [0u8; ATTR_SIZE_VER0];
    let keep = crate::sys::errno();
    // SAFETY: a local buffer of the size passed; flags 0.
    let r = unsafe {
        crate::sys::real::syscall!(
            libc::SYS_sched_getattr,
            0,
            attr.as_mut_ptr(),
            ATTR_SIZE_VER0,
            0
        )
    };
    crate::sys::set_errno(keep);
    if r != 0 {
        return (libc::SCHED_OTHER, 0);
    }
    let word = |at: usize| i32::from_ne_bytes([attr[at], attr[at + 1], attr[at + 2], attr[at + 3]]);
    let policy = match word(ATTR_POLICY) {
        p @ (libc::SCHED_BATCH | libc::SCHED_IDLE) => p,
        _ => libc::SCHED_OTHER,
    };
    let got = (policy, word(ATTR_NICE));
    (got.0, got.1.clamp(MIN_NICE, MAX_NICE))
}

const MIN_NICE: c_int = -20;
const MAX_NICE: c_int = 19;
/// CAP_SYS_NICE (linux/capability.h).
const CAP_SYS_NICE: u32 = 23;

/// Whether the process may set a nice value below the thread's current one
/// (sched(7): RLIMIT_NICE allows down to `20 - rlim_cur`, or CAP_SYS_NICE).
fn may_raise_priority(nice: c_int) -> bool {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a local out-struct.
    if unsafe { libc::getrlimit(libc::RLIMIT_NICE, &mut lim) } == 0
        && lim.rlim_cur >= (20 - nice) as libc::rlim_t
    {
        return true;
    }
    #[repr(C)]
    struct Header {
        version: u32,
        pid: c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    // _LINUX_CAPABILITY_VERSION_3: two data words.
    let mut h = Header {
        version: 0x2008_0522,
        pid: 0,
    };
    let mut d = [Data::default(); 2];
    // SAFETY: the header and the two data words capget(2) fills.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut h as *mut Header, d.as_mut_ptr()) };
    r == 0 && d[0].effective & (1 << CAP_SYS_NICE) != 0
}

/// Sets the kept nice value as setpriority(2) and sched_setattr(2) do:
/// clamped to [-20, 19]; lowering it needs the right (`refused`: EACCES
/// for setpriority, EPERM for sched_setattr).
fn set_nice(rec: &ThreadRec, nice: c_int, refused: c_int) -> Result<(), c_int> {
    let nice = nice.clamp(MIN_NICE, MAX_NICE);
    if nice < rec.nice.load(Ordering::Relaxed) && !may_raise_priority(nice) {
        return Err(refused);
    }
    rec.nice.store(nice, Ordering::Relaxed);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn sched_getscheduler(pid: libc::pid_t) -> c_int {
    match super::affinity::target(pid) {
        Some(Ok(rec)) => rec.policy.load(Ordering::Relaxed),
        Some(Err(e)) => fail(e),
        // SAFETY: plain integer.
        None => unsafe { real::sched_getscheduler(pid) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn sched_setscheduler(
    pid: libc::pid_t,
    policy: c_int,
    p: *const libc::sched_param,
) -> c_int {
    match super::affinity::target(pid) {
        // SAFETY: the caller's contract.
        Some(Ok(rec)) => match unsafe { p.as_ref() } {
            None => fail(libc::EINVAL),
            Some(p) => match super::info::policy_check(policy, p.sched_priority) {
                Ok(()) => {
                    rec.policy.store(policy, Ordering::Relaxed);
                    0
                }
                Err(e) => fail(e),
            },
        },
        Some(Err(e)) => fail(e),
        // SAFETY: the caller's contract.
        None => unsafe { real::sched_setscheduler(pid, policy, p) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn sched_getparam(pid: libc::pid_t, p: *mut libc::sched_param) -> c_int {
    match super::affinity::target(pid) {
        // SAFETY: the caller's contract.
        Some(Ok(_)) => match unsafe { p.as_mut() } {
            None => fail(libc::EINVAL),
            Some(p) => {
                p.sched_priority = 0;
                0
            }
        },
        Some(Err(e)) => fail(e),
        // SAFETY: the caller's contract.
        None => unsafe { real::sched_getparam(pid, p) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn sched_setparam(pid: libc::pid_t, p: *const libc::sched_param) -> c_int {
    match super::affinity::target(pid) {
        // SAFETY: the caller's contract.
        Some(Ok(_)) => match unsafe { p.as_ref() } {
            None => fail(libc::EINVAL),
            Some(p) if p.sched_priority == 0 => 0,
            Some(_) => fail(libc::EINVAL),
        },
        Some(Err(e)) => fail(e),
        // SAFETY: the caller's contract.
        None => unsafe { real::sched_setparam(pid, p) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn getpriority(which: libc::__priority_which_t, who: libc::id_t) -> c_int {
    if which == libc::PRIO_PROCESS as libc::__priority_which_t {
        match super::affinity::target(who as libc::pid_t) {
            Some(Ok(rec)) => return rec.nice.load(Ordering::Relaxed),
            Some(Err(e)) => return fail(e),
            None => {}
        }
    }
    // SAFETY: plain integers.
    unsafe { real::getpriority(which, who) }
}

#[no_mangle]
pub unsafe extern "C" fn setpriority(
    which: libc::__priority_which_t,
    who: libc::id_t,
    prio: c_int,
) -> c_int {
    if which == libc::PRIO_PROCESS as libc::__priority_which_t {
        match super::affinity::target(who as libc::pid_t) {
            Some(Ok(rec)) => {
                return match set_nice(&rec, prio, libc::EACCES) {
                    Ok(()) => 0,
                    Err(e) => fail(e),
                }
            }
            Some(Err(e)) => return fail(e),
            None => {}
        }
    }
    // SAFETY: plain integers.
    unsafe { real::setpriority(which, who, prio) }
}

/// struct sched_attr (sched_setattr(2)): where the fields corun keeps lie.
const ATTR_POLICY: usize = 4;
const ATTR_FLAGS: usize = 8;
const ATTR_NICE: usize = 16;
/// SCHED_ATTR_SIZE_VER0: the smallest struct the kernel takes.
const ATTR_SIZE_VER0: usize = 48;
/// SCHED_FLAG_KEEP_POLICY.
const FLAG_KEEP_POLICY: u64 = 0x08;

/// `syscall(SYS_sched_setattr)` and `syscall(SYS_sched_getattr)` on a
/// coroutine thread (glibc 2.36 has no wrapper: GLib's thread creation
/// copies its creator's attributes into each new thread with them, by
/// `syscall(SYS_gettid)`): setattr keeps the policy (SCHED_OTHER,
/// SCHED_BATCH, SCHED_IDLE; EPERM for the real-time ones) and the nice
/// value; getattr gives the calling worker's attributes with those two
/// put in. None: the kernel's call (main, kernel tids).
pub(crate) fn sched_attr_call(n: libc::c_long, a: [libc::c_long; 4]) -> Option<libc::c_long> {
    let rec = match super::affinity::target(a[0] as libc::pid_t)? {
        Ok(rec) => rec,
        Err(e) => return Some(fail(e) as libc::c_long),
    };
    let attr = a[1] as *mut u8;
    if attr.is_null() {
        return Some(fail(libc::EINVAL) as libc::c_long);
    }
    if n == libc::SYS_sched_getattr {
        // SAFETY: the caller's buffer and size, for the calling thread.
        let r = unsafe { libc::syscall(n, 0, a[1], a[2], a[3]) };
        if r == 0 && a[2] as usize >= ATTR_SIZE_VER0 {
            // SAFETY: the kernel just filled at least ATTR_SIZE_VER0 bytes
            // of the caller's struct; unaligned-safe writes of its fields.
            unsafe {
                attr.add(ATTR_POLICY)
                    .cast::<u32>()
                    .write_unaligned(rec.policy.load(Ordering::Relaxed) as u32);
                attr.add(ATTR_NICE)
                    .cast::<i32>()
                    .write_unaligned(rec.nice.load(Ordering::Relaxed));
            }
        }
        return Some(r);
    }
    // SAFETY: the caller's struct sched_attr, at least its first version
    // (the kernel would fault on a shorter one, as this read does).
    let (policy, flags, nice) = unsafe {
        (
            attr.add(ATTR_POLICY).cast::<u32>().read_unaligned() as c_int,
            attr.add(ATTR_FLAGS).cast::<u64>().read_unaligned(),
            attr.add(ATTR_NICE).cast::<i32>().read_unaligned(),
        )
    };
    let keep_policy = flags & FLAG_KEEP_POLICY != 0;
    if !keep_policy
        && !matches!(
            policy,
            libc::SCHED_OTHER | libc::SCHED_BATCH | libc::SCHED_IDLE
        )
    {
        return Some(fail(libc::EPERM) as libc::c_long);
    }
    if let Err(e) = set_nice(&rec, nice, libc::EPERM) {
        return Some(fail(e) as libc::c_long);
    }
    if !keep_policy {
        rec.policy.store(policy, Ordering::Relaxed);
    }
    Some(0)
}
