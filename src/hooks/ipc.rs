//! Message queues and System V semaphores: their waits park.
//!
//! `msgrcv`, `msgsnd`, `semop`, `semtimedop` (System V) and `mq_receive`,
//! `mq_send` and their timed forms (POSIX) block until another thread or
//! process acts. Made as they are in a coroutine, they held the worker: a
//! thread waiting in `msgrcv` for 300 ms froze a 1 ms ticker on the same
//! worker for 300 ms.
//!
//! - POSIX queues are fds (Linux's mqueue filesystem) that `epoll` can
//!   wait on: the call is tried with a deadline already past (which returns
//!   ETIMEDOUT at once instead of waiting), and the coroutine parks on the
//!   fd in between, as a socket read does (`nonblocking_loop`: EINTR and
//!   SA_RESTART as for sockets; a queue opened O_NONBLOCK answers EAGAIN
//!   itself).
//! - System V objects are not fds: the call is tried with IPC_NOWAIT, and
//!   the coroutine sleeps between tries, 20 us doubling to 1 ms (as for
//!   process-shared mutexes, `pthread_sync::try_with_backoff`). Each try is
//!   the kernel's whole operation, so nothing is taken that the program
//!   would not have taken. A handler that runs meanwhile ends the wait with
//!   EINTR (these calls are never restarted, signal(7)); they are
//!   cancellation points. A `semop` whose operations mix IPC_NOWAIT and
//!   waiting ones is made on the blocking pool: which operation found the
//!   semaphore busy cannot be told from outside; a signal for the caller
//!   cuts it short there too (EINTR, `sched/pool_kick.rs`).

use std::ffi::{c_char, c_int, c_long, c_uint, c_void};

use libc::{mqd_t, size_t, ssize_t, timespec};

use super::{nonblocking_loop, Deadline, Io};
use crate::sched::blocking::SendPtr;
use crate::sched::fdtable::{self, Dir};
use crate::sched::signals::Interruptible;
use crate::sched::{self, current, parking};
use crate::sys::{errno, now_ns, set_errno, timespec_ns};

mod real {
    use libc::{c_char, c_int, c_long, c_uint, c_void, mqd_t, size_t, ssize_t, timespec};
    crate::sys::real::real_fns! {
        fn msgrcv(id: c_int, p: *mut c_void, sz: size_t, typ: c_long, flg: c_int) -> ssize_t;
        fn msgsnd(id: c_int, p: *const c_void, sz: size_t, flg: c_int) -> c_int;
        fn semop(id: c_int, ops: *mut libc::sembuf, n: size_t) -> c_int;
        fn semtimedop(id: c_int, ops: *mut libc::sembuf, n: size_t, t: *const timespec) -> c_int;
        fn mq_timedreceive(q: mqd_t, p: *mut c_char, len: size_t, prio: *mut c_uint, t: *const timespec) -> ssize_t;
        fn mq_timedsend(q: mqd_t, p: *const c_char, len: size_t, prio: c_uint, t: *const timespec) -> c_int;
    }
}

/// An absolute time long past: a timed queue call with it does not wait.
const PAST: timespec = timespec {
    tv_sec: 0,
    tv_nsec: 0,
};

fn fail(e: c_int) -> c_int {
    set_errno(e);
    -1
}

/// Retries `attempt` (a non-waiting form of a System V call, -1/`busy`
/// while it would wait) with sleeps in between, until it answers, the
/// deadline (monotonic ns) passes (-1/`timeout`), a handler runs (-1/EINTR)
/// or the thread is cancelled.
fn sysv_wait(
    busy: c_int,
    timeout: c_int,
    deadline: Option<u64>,
    mut attempt: impl FnMut() -> isize,
) -> isize {
    let caller_errno = errno();
    let intr = Interruptible::begin();
    let mut pause = 20_000u64;
    let mut waited = false;
    loop {
        let r = attempt();
        if r >= 0 {
            set_errno(caller_errno);
            return r;
        }
        if errno() != busy {
            // The object was removed while this thread waited: natively
            // the waiter learns it as EIDRM; a later try sees no such id.
            if waited && errno() == libc::EINVAL {
                set_errno(libc::EIDRM);
            }
            return r;
        }
        waited = true;
        if intr.check().is_some() {
            return fail(libc::EINTR) as isize;
        }
        if let Some(t) = current() {
            sched::identity::cancel_point(&t.ident);
        }
        let now = now_ns();
        let mut until = now + pause;
        if let Some(d) = deadline {
            if now >= d {
                return fail(timeout) as isize;
            }
            until = until.min(d);
        }
        sched::park_cancelable(|_| true, Some(until));
        pause = (pause * 2).min(1_000_000);
    }
}

#[no_mangle]
pub unsafe extern "C" fn msgrcv(
    id: c_int,
    p: *mut c_void,
    sz: size_t,
    typ: c_long,
    flg: c_int,
) -> ssize_t {
    if !parking() || flg & libc::IPC_NOWAIT != 0 {
        // SAFETY: the caller's contract.
        return unsafe { real::msgrcv(id, p, sz, typ, flg) };
    }
    // SAFETY: the caller's contract; IPC_NOWAIT only keeps it from waiting.
    sysv_wait(libc::ENOMSG, libc::ENOMSG, None, || unsafe {
        real::msgrcv(id, p, sz, typ, flg | libc::IPC_NOWAIT)
    })
}

#[no_mangle]
pub unsafe extern "C" fn msgsnd(id: c_int, p: *const c_void, sz: size_t, flg: c_int) -> c_int {
    if !parking() || flg & libc::IPC_NOWAIT != 0 {
        // SAFETY: the caller's contract.
        return unsafe { real::msgsnd(id, p, sz, flg) };
    }
    // SAFETY: as msgrcv.
    sysv_wait(libc::EAGAIN, libc::EAGAIN, None, || unsafe {
        real::msgsnd(id, p, sz, flg | libc::IPC_NOWAIT) as isize
    }) as c_int
}

/// No time at all: a `semtimedop` with it answers EAGAIN at once where it
/// would wait.
const ZERO: timespec = timespec {
    tv_sec: 0,
    tv_nsec: 0,
};

/// `semop`/`semtimedop` (timeout relative, NULL: none).
fn sem_wait_ops(id: c_int, ops: *mut libc::sembuf, n: size_t, t: *const timespec) -> c_int {
    let timed = !t.is_null();
    // SAFETY (all three): the caller's contract.
    let real_call = || unsafe {
        if timed {
            real::semtimedop(id, ops, n, t)
        } else {
            real::semop(id, ops, n)
        }
    };
    if !parking() {
        return real_call();
    }
    let deadline = if timed {
        // SAFETY: non-null, readable by the caller's contract.
        let ts = unsafe { *t };
        if ts.tv_sec < 0 || !(0..1_000_000_000).contains(&ts.tv_nsec) {
            return real_call(); // the kernel's EINVAL
        }
        Some(now_ns().saturating_add(timespec_ns(&ts)))
    } else {
        None
    };
    let caller_errno = errno();
    // One try that cannot wait: the kernel checks every argument (EFAULT,
    // EINVAL, E2BIG...) and answers EAGAIN where the call would wait.
    // SAFETY: the caller's contract.
    let r = unsafe { real::semtimedop(id, ops, n, &ZERO) };
    if r == 0 {
        set_errno(caller_errno);
        return 0;
    }
    if errno() != libc::EAGAIN {
        return r;
    }
    // SAFETY: the kernel has just read these `n` operations.
    let given = unsafe { std::slice::from_raw_parts(ops, n) };
    let nowait = given
        .iter()
        .filter(|o| o.sem_flg as c_int & libc::IPC_NOWAIT != 0)
        .count();
    if nowait == n {
        return r; // natively too: EAGAIN at once
    }
    if nowait > 0 {
        set_errno(caller_errno);
        return mixed_on_pool(id, ops, n, t, deadline);
    }
    set_errno(caller_errno);
    // SAFETY: the caller's operations, checked by the kernel above.
    sysv_wait(libc::EAGAIN, libc::EAGAIN, deadline, || unsafe {
        real::semtimedop(id, ops, n, &ZERO) as isize
    }) as c_int
}

/// A `semop`/`semtimedop` whose operations mix IPC_NOWAIT and waiting
/// ones, made whole on the blocking pool. A signal for the caller cuts it
/// short: EINTR, never restarted (signal(7), System V IPC). A cut after
/// which no handler ran is made again, with the time left before
/// `deadline` (monotonic ns) for a timed one.
fn mixed_on_pool(
    id: c_int,
    ops: *mut libc::sembuf,
    n: size_t,
    t: *const timespec,
    deadline: Option<u64>,
) -> c_int {
    use crate::sched::blocking::{run_blocking_restartable, OnHandler};
    let mut left = ZERO;
    let (p, tp, lp) = (
        SendPtr(ops),
        SendPtr(t as *mut timespec),
        SendPtr(&mut left as *mut timespec),
    );
    run_blocking_restartable(OnHandler::Eintr, move |again| {
        let mut tp = tp.get();
        if let (true, Some(d)) = (again, deadline) {
            let rest = d.saturating_sub(now_ns());
            // SAFETY: `left` lives on the caller's stack until we return.
            unsafe {
                *lp.get() = timespec {
                    tv_sec: (rest / 1_000_000_000) as libc::time_t,
                    tv_nsec: (rest % 1_000_000_000) as libc::c_long,
                };
            }
            tp = lp.get();
        }
        // SAFETY: the caller's operations and timeout, which outlive the
        // parked call.
        unsafe {
            if tp.is_null() {
                real::semop(id, p.get(), n) as isize
            } else {
                real::semtimedop(id, p.get(), n, tp) as isize
            }
        }
    }) as c_int
}

#[no_mangle]
pub unsafe extern "C" fn semop(id: c_int, ops: *mut libc::sembuf, n: size_t) -> c_int {
    sem_wait_ops(id, ops, n, std::ptr::null())
}

#[no_mangle]
pub unsafe extern "C" fn semtimedop(
    id: c_int,
    ops: *mut libc::sembuf,
    n: size_t,
    t: *const timespec,
) -> c_int {
    sem_wait_ops(id, ops, n, t)
}

/// A POSIX queue call: `attempt(deadline)` is the timed call; parks on
/// the queue's fd in `dir` until it answers. `abs` is the caller's absolute
/// CLOCK_REALTIME timeout (NULL: none).
fn mq_call(
    q: mqd_t,
    dir: Dir,
    abs: *const timespec,
    attempt: impl Fn(*const timespec) -> isize,
) -> isize {
    let fallback = || attempt(abs);
    if !parking() {
        return fallback();
    }
    let Some(e) = fdtable::get(q) else {
        return fallback();
    };
    let deadline = if abs.is_null() {
        None
    } else {
        // SAFETY: non-null, readable by the caller's contract.
        let ts = unsafe { *abs };
        if !(0..1_000_000_000).contains(&ts.tv_nsec) {
            return fail(libc::EINVAL) as isize;
        }
        Some(sched::sync::Deadline::Realtime(timespec_ns(&ts)).monotonic())
    };
    // The call is made on `q` itself: a queue whose descriptor dup2
    // replaces under the park is not followed to its kept file
    // (docs/ARCHITECTURE.md §5.10).
    let io = nonblocking_loop(q, e, dir, &mut Deadline::at(deadline), |_, _| {
        let r = attempt(&PAST);
        if r < 0 && errno() == libc::ETIMEDOUT {
            set_errno(libc::EAGAIN);
        }
        r
    });
    match io {
        Io::Done(r) => {
            if r < 0 && errno() == libc::EAGAIN && deadline.is_some_and(|d| now_ns() >= d) {
                set_errno(libc::ETIMEDOUT);
            }
            r
        }
        Io::Blocking => fallback(),
    }
}

#[no_mangle]
pub unsafe extern "C" fn mq_timedreceive(
    q: mqd_t,
    p: *mut c_char,
    len: size_t,
    prio: *mut c_uint,
    abs: *const timespec,
) -> ssize_t {
    // SAFETY: the caller's contract.
    mq_call(q, Dir::Read, abs, |t| unsafe {
        real::mq_timedreceive(q, p, len, prio, t)
    })
}

#[no_mangle]
pub unsafe extern "C" fn mq_receive(
    q: mqd_t,
    p: *mut c_char,
    len: size_t,
    prio: *mut c_uint,
) -> ssize_t {
    // SAFETY: the caller's contract.
    unsafe { mq_timedreceive(q, p, len, prio, std::ptr::null()) }
}

#[no_mangle]
pub unsafe extern "C" fn mq_timedsend(
    q: mqd_t,
    p: *const c_char,
    len: size_t,
    prio: c_uint,
    abs: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract.
    mq_call(q, Dir::Write, abs, |t| unsafe {
        real::mq_timedsend(q, p, len, prio, t) as isize
    }) as c_int
}

#[no_mangle]
pub unsafe extern "C" fn mq_send(q: mqd_t, p: *const c_char, len: size_t, prio: c_uint) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { mq_timedsend(q, p, len, prio, std::ptr::null()) }
}
