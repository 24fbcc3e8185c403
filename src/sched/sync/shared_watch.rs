//! Waiting, from a coroutine, for a process-shared futex word that other
//! processes wake in the kernel (glibc's named and process-shared
//! semaphores: `sem_post` adds to the value, then makes a FUTEX_WAKE when
//! the word's waiter count says someone sleeps).
//!
//! corun's own futex table (`sync`) only sees wakes made in this process
//! through corun, and a coroutine must not sleep in the kernel (its worker
//! would stop). So one watcher thread per process, started at the first
//! such wait with the real `pthread_create`, sleeps in the kernel on every
//! word coroutines wait for at once (`futex_waitv`: up to 128 words, one of
//! them its own control word), and passes each wake-up on. Before it, such
//! a coroutine tried and slept on a timer, 20 us doubling to 1 ms
//! (`hooks::pthread_sync::try_with_backoff`): a round trip between two
//! processes took hundreds of microseconds where it takes a few natively.
//!
//! Protocol. A waiting coroutine adds a *registration* (the word, the value
//! it waits to see change, and a ticket word of its own, shared with the
//! list: a coroutine cancelled in its park abandons its frames, and the
//! watcher may still fire its ticket) under the state lock, kicks the watcher (the control word), and parks on its ticket in
//! `sync` (checked under the bucket lock, so no wake is lost between the
//! check and the park). The watcher fires a registration (ticket 1, then a
//! `sync` wake of the ticket) when the kernel woke it for that word, or
//! when the word no longer holds the expected value (futex_waitv then
//! fails with EAGAIN at once); a fired registration leaves the list, so a
//! changed word never makes the watcher spin. The coroutine removes its
//! registration itself when it stops waiting (a timeout, a signal),
//! without waking the watcher.
//!
//! The kernel wakes one sleeper per FUTEX_WAKE(1): when it picks the
//! watcher and no registration wants that word any more, the watcher makes
//! the wake again, so that a sleeper of another process is not left
//! waiting for a wake-up that went nowhere (a wake is never wrong: futex
//! sleepers re-check their word).
//!
//! A word the kernel cannot wait on (unmapped: EFAULT) fires its
//! registrations as unwatchable, as does every registration when the
//! kernel has no futex_waitv (before Linux 5.16) or no thread can be
//! started; the caller then falls back to its back-off. Past 127
//! registrations at once, new ones are refused (the same fall-back). A forked child
//! starts a watcher of its own at its first wait (the parent's thread is
//! not in the child); a confined process (seccomp) gets none.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use super::{Deadline, WaitResult};
use crate::sys::ForkMutex;

/// futex_waitv's limit (FUTEX_WAITV_MAX), the control word included.
const MAX_WORDS: usize = 128;
const SYS_FUTEX_WAITV: libc::c_long = 449;
const FUTEX2_SIZE_U32: u32 = 2;
const FUTEX2_PRIVATE: u32 = 128;

/// A ticket's values.
const ARMED: u32 = 0;
const FIRED: u32 = 1;
const UNWATCHABLE: u32 = 2;

/// `struct futex_waitv` of linux/futex.h.
#[repr(C)]
#[derive(Clone, Copy)]
struct FutexWaitv {
    val: u64,
    uaddr: u64,
    flags: u32,
    reserved: u32,
}

struct Registration {
    addr: usize,
    expected: u32,
    ticket: Arc<AtomicU32>,
}

struct State {
    regs: Vec<Registration>,
    /// The process (pid) whose watcher runs; 0: none.
    watcher_of: i32,
}

static STATE: ForkMutex<State> = ForkMutex::new(State {
    regs: Vec::new(),
    watcher_of: 0,
});
/// Bumped at every change of the list; the watcher waits on it too.
static CONTROL: AtomicU32 = AtomicU32::new(0);
/// No watcher can work here (no futex_waitv, no thread).
static BROKEN: AtomicBool = AtomicBool::new(false);

fn lock() -> std::sync::MutexGuard<'static, State> {
    super::super::fdtable::lock(STATE.get())
}

fn kick() {
    CONTROL.fetch_add(1, Ordering::SeqCst);
    // SAFETY: FUTEX_WAKE on our own static word; nothing is written.
    unsafe {
        crate::sys::real::syscall!(
            libc::SYS_futex,
            CONTROL.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1
        )
    };
}

/// Wakes the watcher (it then looks whether the process is confined:
/// `confined.rs`).
pub fn wake() {
    kick();
}

/// Sets a registration's ticket and wakes its coroutine. Under the lock.
fn fire(r: &Registration, how: u32) {
    r.ticket.store(how, Ordering::SeqCst);
    super::wake_all(&r.ticket);
}

/// Parks the calling coroutine while `*word == expected`, `word` being a
/// process-shared futex word that another process may wake in the kernel,
/// until a wake of it, a change, the deadline, a signal handler or a
/// cancellation (as `sync::wait_cancelable`: the caller re-checks its
/// condition in every case). None: the word cannot be watched here (the
/// caller falls back to sleeping on a timer).
pub fn wait(word: &AtomicU32, expected: u32, deadline: Option<Deadline>) -> Option<WaitResult> {
    if BROKEN.load(Ordering::Relaxed) || super::super::confined::is() {
        return None;
    }
    let ticket = Arc::new(AtomicU32::new(ARMED));
    let addr = word.as_ptr() as usize;
    {
        let mut g = lock();
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        if g.watcher_of != pid {
            g.watcher_of = pid;
            if super::super::confined::spawn_helper(Box::new(watch)).is_err() {
                g.watcher_of = 0;
                BROKEN.store(true, Ordering::Relaxed);
                return None;
            }
        }
        // One word per registration at most: past the limit, some
        // registrations would not be waited on.
        if g.regs.len() + 1 >= MAX_WORDS {
            return None;
        }
        g.regs.push(Registration {
            addr,
            expected,
            ticket: ticket.clone(),
        });
    }
    kick();
    let r = if word.load(Ordering::SeqCst) != expected {
        WaitResult::Mismatch
    } else {
        super::wait_cancelable(&ticket, ARMED, deadline)
    };
    // No kick: the watcher may go on sleeping on the word until the next
    // change of the list; a wake that reaches it meanwhile finds nobody
    // and is passed on.
    let mut g = lock();
    if let Some(i) = g.regs.iter().position(|r| Arc::ptr_eq(&r.ticket, &ticket)) {
        g.regs.swap_remove(i);
    }
    drop(g);
    match ticket.load(Ordering::SeqCst) {
        UNWATCHABLE => None,
        FIRED => Some(WaitResult::Woken),
        _ => Some(r),
    }
}

/// The watcher thread.
fn watch() {
    crate::sys::block_all_signals();
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    let mut list: Vec<FutexWaitv> = Vec::with_capacity(MAX_WORDS);
    loop {
        if super::super::confined::is() {
            let mut g = lock();
            for r in g.regs.drain(..) {
                fire(&r, UNWATCHABLE);
            }
            g.watcher_of = 0;
            return;
        }
        let control = CONTROL.load(Ordering::SeqCst);
        list.clear();
        list.push(FutexWaitv {
            val: control as u64,
            uaddr: CONTROL.as_ptr() as u64,
            flags: FUTEX2_SIZE_U32 | FUTEX2_PRIVATE,
            reserved: 0,
        });
        {
            let g = lock();
            if g.watcher_of != me {
                return;
            }
            for r in &g.regs {
                if list.len() == MAX_WORDS {
                    break;
                }
                if !list
                    .iter()
                    .skip(1)
                    .any(|w| w.uaddr == r.addr as u64 && w.val == r.expected as u64)
                {
                    list.push(FutexWaitv {
                        val: r.expected as u64,
                        uaddr: r.addr as u64,
                        flags: FUTEX2_SIZE_U32,
                        reserved: 0,
                    });
                }
            }
        }
        // SAFETY: `list` is a valid futex_waitv array of list.len() entries;
        // no timeout (NULL), clockid unused then.
        let r = unsafe {
            crate::sys::real::syscall!(
                SYS_FUTEX_WAITV,
                list.as_ptr(),
                list.len() as libc::c_uint,
                0 as libc::c_uint,
                std::ptr::null::<libc::timespec>(),
                libc::CLOCK_MONOTONIC
            )
        };
        let err = crate::sys::errno();
        if r > 0 {
            let w = list[r as usize];
            let mut g = lock();
            let mut any = false;
            g.regs.retain(|reg| {
                let hit = reg.addr as u64 == w.uaddr;
                if hit {
                    fire(reg, FIRED);
                    any = true;
                }
                !hit
            });
            drop(g);
            if !any {
                // The kernel's one wake went to us and nobody here wants
                // it any more: pass it on to another sleeper.
                // SAFETY: a FUTEX_WAKE of a word that was a valid futex a
                // moment ago; it writes nothing (EFAULT if unmapped since).
                unsafe {
                    crate::sys::real::syscall!(libc::SYS_futex, w.uaddr, libc::FUTEX_WAKE, 1)
                };
            }
            continue;
        }
        if r == 0 {
            continue; // the control word: the list changed
        }
        match err {
            // A word that changed (EAGAIN) or that the kernel cannot wait
            // on (EFAULT, EINVAL): find which.
            libc::EAGAIN | libc::EFAULT | libc::EINVAL => fire_where(check),
            libc::EINTR => {}
            _ => {
                BROKEN.store(true, Ordering::Relaxed);
                let mut g = lock();
                for r in g.regs.drain(..) {
                    fire(&r, UNWATCHABLE);
                }
                g.watcher_of = 0;
                return;
            }
        }
    }
}

/// What a registration's word says now: changed (FIRED), not a futex the
/// kernel can wait on (UNWATCHABLE), or still the expected value (None).
/// Asked of the kernel, which never faults: a registration left by a
/// cancelled waiter may name memory unmapped since. A FUTEX_CMP_REQUEUE
/// of nobody compares the word with `expected` and moves no one.
fn check(reg: &Registration) -> Option<u32> {
    // SAFETY: moves no waiter and writes nothing; the kernel validates
    // the address.
    let k = unsafe {
        crate::sys::real::syscall!(
            libc::SYS_futex,
            reg.addr,
            libc::FUTEX_CMP_REQUEUE,
            0,
            0,
            reg.addr,
            reg.expected
        )
    };
    if k >= 0 {
        return None;
    }
    match crate::sys::errno() {
        libc::EAGAIN => Some(FIRED),
        _ => Some(UNWATCHABLE),
    }
}

/// Fires (and drops) each registration `how` says, under the lock.
fn fire_where(how: impl Fn(&Registration) -> Option<u32>) {
    let mut g = lock();
    g.regs.retain(|reg| match how(reg) {
        Some(h) => {
            fire(reg, h);
            false
        }
        None => true,
    });
}

/// In a forked child: the watcher is the parent's thread; the child
/// starts its own at its first wait (`watcher_of` is the parent's pid),
/// and the parent's registrations are its coroutines', gone here.
pub fn after_fork_child() {
    // Never used (no process-shared wait ever): nothing to forget, and
    // taking the lock would copy its page (`sys::ForkReset`).
    if !STATE.ever_used() {
        return;
    }
    STATE.unlock_after_fork(|| State {
        regs: Vec::new(),
        watcher_of: 0,
    });
    let mut g = lock();
    std::mem::forget(std::mem::take(&mut g.regs));
    g.watcher_of = 0;
}
