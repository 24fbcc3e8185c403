//! Interposed libc functions, one file per family, each named for the libc
//! calls it holds:
//!
//! | file          | interposes |
//! |---------------|------------|
//! | `rw.rs`       | read, write, readv, writev, __read_chk |
//! | `pread.rs`    | pread(64), pwrite(64), __pread(64)_chk, preadv(64)v2, pwritev(64)v2 |
//! | `sendrecv.rs` | recv, recvfrom, recvmsg, send, sendto, sendmsg, __recv_chk, __recvfrom_chk |
//! | `mmsg.rs`     | recvmmsg, sendmmsg |
//! | `socket.rs`   | socket, socketpair, accept, accept4, connect, shutdown, setsockopt, getsockopt |
//! | `listener.rs` | (no symbol) accept on a listener another process may share goes to the blocking pool, for `socket.rs` |
//! | `fd_mode.rs`  | (no symbol) an fd's kind and O_NONBLOCK wish, whether a call on it parks or is the program's own non-blocking call |
//! | `sock_timeout.rs`| (no symbol) SO_RCVTIMEO/SO_SNDTIMEO of a socket and the deadline of one call, for the I/O hooks |
//! | `tty_read.rs` | (no symbol) a terminal read with VMIN = 0 ends at VTIME: the deadline `rw.rs` and `stdio.rs` wait to |
//! | `sendfile.rs` | sendfile, sendfile64, splice |
//! | `poll.rs`     | poll, ppoll, select, pselect, __poll_chk, __ppoll_chk |
//! | `epoll.rs`    | epoll_wait, epoll_pwait, epoll_pwait2, epoll_create, epoll_create1 |
//! | `epoll_solo.rs`| (no symbol) a coroutine alone on its worker waits in its own epoll set, for `epoll.rs` |
//! | `sleep.rs`    | sleep, usleep, nanosleep, clock_nanosleep |
//! | `fdctl.rs`    | close, close_range, closefrom, fclose, freopen(64), dup, dup2, dup3, fcntl, fcntl64, ioctl, flock, lockf(64), pipe, pipe2 |
//! | `file.rs`     | open(64), openat(64), creat, fsync, fdatasync, stat(64), lstat(64), fstatat(64), statx (blocking pool) |
//! | `cached.rs`   | (no symbol) open and stat answered from the kernel's dentry cache inline, for `file.rs` |
//! | `path_memo.rs`| (no symbol) paths this thread found cached a moment ago, for `cached.rs` |
//! | `stdio.rs`    | fgets(_unlocked), fgetc(_unlocked), getc(_unlocked), _IO_getc, getchar(_unlocked), fread(_unlocked), getline, getdelim, __getdelim, __uflow, __underflow (wait for data first); `stdio_scanf.rs`: scanf, fscanf, vscanf, vfscanf and their __isoc99_/__isoc23_ forms; `stdio_bulk.rs`: an fwrite of a buffer's size or more, written in parked pieces under the FILE's lock; `stdio_write.rs`: fwrite(_unlocked), fputs(_unlocked), puts, fputc(_unlocked), putc(_unlocked), _IO_putc, putchar(_unlocked), __overflow, fflush(_unlocked), printf, fprintf, vprintf, vfprintf, dprintf, vdprintf and their __*_chk forms (wait until the fd takes data first) |
//! | `clock.rs`    | clock_gettime, clock_getres (a coroutine thread's CPU clock) |
//! | `own_fds.rs`  | opendir, fdopendir, readdir, readdir64, closedir, fstat(64), __fxstat(64) (corun's own fds out of sight) |
//! | `ipc.rs`      | msgrcv, msgsnd, semop, semtimedop, mq_receive, mq_timedreceive, mq_send, mq_timedsend |
//! | `open.rs`     | creat64, __open(64)_2, __openat(64)_2, eventfd, timerfd_create, signalfd, inotify_init(1), memfd_create |
//! | `process.rs`  | fork, vfork, waitpid, wait, wait3, wait4, waitid, posix_spawn(p); `process/`: clone, prctl (PR_SET_SECCOMP; PR_SET_NAME, PR_GET_NAME in `pthread/name.rs`; PR_SET_TIMERSLACK, PR_GET_TIMERSLACK in `pthread/slack_ioprio.rs`), system, popen, pclose |
//! | `sigaction.rs`| sigaction, signal, bsd_signal, sysv_signal, longjmp, _longjmp, siglongjmp, __longjmp_chk; `sigaction/`: sigaltstack, __sigsetjmp, setjmp |
//! | `sigdeliver.rs`| (no symbol) the trampoline around every handler, and delivery in the coroutine that takes a signal |
//! | `filelock.rs` | flockfile, ftrylockfile, funlockfile (counted: no preemption while the program holds a FILE lock) |
//! | `sigpreempt.rs`| (no symbol) SIGURG, corun's preemption signal, as `sigaction` and `signal` report it |
//! | `sigmask.rs`  | pthread_sigmask, sigprocmask, sigpending, sigblock, sigsetmask, siggetmask, sighold, sigrelse |
//! | `ucontext.rs` | getcontext, setcontext, swapcontext (and a makecontext function's return to uc_link): the coroutine's mask |
//! | `signal.rs`   | sigwait, sigwaitinfo, sigtimedwait, sigsuspend, pause, sched_yield |
//! | `dns.rs`      | getaddrinfo, getnameinfo, gethostbyname(2)(_r), gethostbyaddr |
//! | `start.rs`    | __libc_start_main |
//! | `cancel.rs`   | pthread_cancel, pthread_setcancelstate, pthread_setcanceltype, pthread_testcancel, __pthread_register_cancel(_defer), __pthread_unregister_cancel(_restore), __pthread_unwind_next |
//! | `io_uring.rs` | __io_uring_get_cqe, io_uring_wait_cqes, io_uring_submit_and_wait(_timeout), io_uring_queue_init_params, io_uring_queue_exit, io_uring_submit, io_uring_register_ring_fd (liburing) |
//! | `syscall/`    | syscall (SYS_futex, SYS_futex_waitv: waits park, wakes reach coroutines and threads; SYS_fork, SYS_clone(3), SYS_seccomp: `process.rs`; SYS_gettid, SYS_tgkill, SYS_tkill, SYS_rt_tgsigqueueinfo: `pthread/tid.rs`; SYS_close, SYS_dup2, SYS_dup3, SYS_close_range: `fdctl.rs`; SYS_io_getevents, SYS_io_pgetevents: the blocking pool; SYS_rt_sigprocmask: `sigmask.rs`; SYS_rt_sigpending, SYS_rt_sigtimedwait, SYS_rt_sigsuspend, SYS_sigaltstack, SYS_rt_sigaction: `syscall/signals.rs`; SYS_ioprio_set, SYS_ioprio_get: `pthread/slack_ioprio.rs`) |
//! | `aio.rs`      | aio_suspend(64), lio_listio(64) with LIO_WAIT (wait parked for glibc's AIO helper threads) |
//! | `gai.rs`      | gai_suspend (wait parked for getaddrinfo_a's helper threads) |
//! | `c11threads.rs`| thrd_create, thrd_join, thrd_exit, thrd_detach, thrd_current, thrd_equal, thrd_sleep, thrd_yield, mtx_lock, mtx_timedlock, mtx_trylock, mtx_unlock, cnd_wait, cnd_timedwait, cnd_signal, cnd_broadcast, call_once, tss_create, tss_get, tss_set, tss_delete (on the pthread hooks) |
//! | `pthread/`    | pthread_* taking a pthread_t (create, join, keys, names, kill...); `tid.rs`: gettid, tgkill, sched_[gs]etaffinity (kept per thread: `affinity.rs`); `sched_attr.rs`: sched_[gs]etscheduler, sched_[gs]etparam, [gs]etpriority, SYS_sched_[gs]etattr (kept per thread) |
//!
//! Every hook begins with the same test: is the caller a coroutine? If not
//! (the runtime is not up, a native thread, runtime code itself, an atexit
//! handler) the hook is an exact passthrough to the real function: same
//! result, same errno, for the cost of one thread-local load.
//!
//! Lone entries: in a process where nothing parks (`sched/lone.rs`: no
//! coroutine but the first was ever spawned, no cancel token; an nginx or
//! lighttpd worker, a forked PostgreSQL backend) the hooks an event loop
//! calls per request (`read`, `write`, `readv`, `writev`, `recv`,
//! `recvfrom`, `recvmsg`, `send`, `sendto`, `sendmsg`, `pread64`,
//! `pwrite64`, `sendfile`, `epoll_wait`, `epoll_pwait` without a mask,
//! `open`, `openat`) test that one byte and go to libc by a tail jump,
//! the rest of the hook in a function apart, so that the common path
//! saves no registers and builds no frame. `close` and `open` forget the
//! fd's entry without its waiter lock while no call ever waited on an fd
//! (`FdEntry::reset_lone`). callgrind, per call, native / before / with
//! them: recv 17 / 55 / 24, close 9 / 128 / 46, open 36 / 152 / 66.
//!
//! With other coroutines around (Redis's background threads, memcached's
//! four event loops on two workers), an fd the program made non-blocking
//! itself is asked first, from its cached entry (`program_nonblocking`):
//! `write`, `writev`, `send`, `sendto`, `sendmsg` (and any MSG_DONTWAIT
//! send) then go to libc from their entry the same way, the reads through
//! a small function that only notes an EAGAIN (`nb_read_as_is`).
//!
//! In a coroutine, a call that could block is made non-blocking *per call*,
//! never by leaving O_NONBLOCK on the open file description (docs/ARCHITECTURE.md §5.1):
//!
//! | fd kind (fstat, once per fd)       | how one attempt is made non-blocking |
//! |------------------------------------|--------------------------------------|
//! | socket                             | MSG_DONTWAIT                         |
//! | pipe, FIFO, eventfd                | preadv2/pwritev2 with RWF_NOWAIT     |
//! | regular file, block device         | none: the call is made as is         |
//! | anything else (tty, timerfd...)    | poll with zero timeout, then the call (a tty with VMIN = 0: until VTIME, `tty_read.rs`)|
//!
//! The attempt comes first (the fast path is the one syscall the program
//! would have made); only on EAGAIN does the coroutine park on the
//! netpoller, then retry. A program that asked for O_NONBLOCK itself gets its
//! EAGAIN back. The program's wish is tracked per fd from `fcntl`, `ioctl`
//! FIONBIO, `socket`/`accept4`/`pipe2` flags, and otherwise asked of the
//! kernel once (again after any F_SETFL/FIONBIO anywhere: `NB_EPOCH`).
//! SO_RCVTIMEO/SO_SNDTIMEO are looked up at the first EAGAIN of a call
//! (`Deadline`), from what `setsockopt` recorded or, for a socket corun
//! did not see configured or one shared with a dup, from the kernel; they
//! end the wait as the kernel would.
//!
//! # Safety
//! Every exported function has the contract of the libc function it
//! replaces; the pointers it receives are passed on unchanged or used as
//! that contract allows.

#![allow(clippy::missing_safety_doc)]

pub mod aio;
pub mod c11threads;
pub mod cached;
pub mod cancel;
pub mod clock;
pub mod dns;
mod drained;
pub mod epoll;
mod epoll_solo;
pub mod fdctl;
pub mod file;
pub mod filelock;
pub mod gai;
pub mod io_uring;
pub mod ipc;
pub mod listener;
pub mod mmsg;
pub mod open;
pub mod own_fds;
pub mod path_memo;
pub mod poll;
pub mod pread;
pub mod process;
pub mod pthread;
pub mod pthread_sync;
pub mod rw;
mod scanf_format;
pub mod sendfile;
pub mod sendrecv;
pub mod sigaction;
pub mod sigdeliver;
pub mod sigmask;
pub mod signal;
pub mod sigpreempt;
pub mod sleep;
mod sock_timeout;
pub mod socket;
pub mod start;
pub mod stdio;
pub mod stdio_bulk;
pub mod stdio_scanf;
pub mod stdio_wide;
pub mod stdio_write;
#[cfg(target_arch = "x86_64")]
pub mod syscall;
mod tty_read;
pub mod ucontext;
mod unwind_link;
mod variadic;

mod fd_mode;

pub(crate) use fd_mode::*;
pub(crate) use sock_timeout::{sock_timeout, timeval_ns, Deadline, TIMEO_NONE};

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::sched::fdkeep::{self, KeptFile};
use crate::sched::fdtable::{self, Dir, FdEntry};
use crate::sched::signals::Interruptible;
use crate::sched::{park_until_ready, FdWait};
use crate::sys::{errno, set_errno};

/// What a non-blocking loop ended with.
pub(crate) enum Io {
    /// The call's result (errno set when negative).
    Done(isize),
    /// The fd cannot be waited on (regular file): make the blocking call.
    Blocking,
}

/// The fd a blocking call works on: the caller's, or, once `dup2`/`dup3`
/// replaced that number while the call was parked, the duplicate of the
/// file the call started with (`sched::fdkeep`), as natively the call goes
/// on with its file.
pub(crate) struct At<'a> {
    pub(crate) fd: i32,
    pub(crate) e: &'a FdEntry,
    kept: Option<Arc<KeptFile>>,
}

impl<'a> At<'a> {
    pub(crate) fn new(fd: i32, e: &'a FdEntry) -> Self {
        At { fd, e, kept: None }
    }

    /// Goes on with the kept file.
    fn switch(&mut self, k: Arc<KeptFile>) {
        self.fd = k.fd();
        self.e = k.entry();
        self.kept = Some(k);
    }
}

/// `nonblocking_loop_at` on `fd` for one call.
pub(crate) fn nonblocking_loop(
    fd: i32,
    e: &FdEntry,
    dir: Dir,
    deadline: &mut Deadline,
    attempt: impl FnMut(i32, &FdEntry) -> isize,
) -> Io {
    nonblocking_loop_at(&mut At::new(fd, e), dir, deadline, attempt)
}

/// Makes `attempt(fd, entry)` (a non-blocking form of the call on that fd)
/// until it does not return EAGAIN, parking on the netpoller in between.
/// On timeout, returns -1/EAGAIN as SO_RCVTIMEO/SO_SNDTIMEO would; on
/// close, -1/EBADF; when the coroutine's cancel token is cancelled,
/// -1/ECANCELED. A signal handler that ran in the coroutine while it
/// waited makes it fail with EINTR, unless every such handler had
/// SA_RESTART and the socket has no timeout (signal(7): then the call goes
/// on waiting). A success leaves errno as the caller had it, as the
/// blocking call does, whatever the attempts before it failed with. The fd
/// replaced by dup2/dup3 during a park: the call goes on with its file
/// (`at` switches to the kept duplicate, `sched::fdkeep`).
pub(crate) fn nonblocking_loop_at(
    at: &mut At<'_>,
    dir: Dir,
    deadline: &mut Deadline,
    mut attempt: impl FnMut(i32, &FdEntry) -> isize,
) -> Io {
    let caller_errno = errno();
    let mut intr: Option<Interruptible> = None;
    loop {
        let (fd, e) = (at.fd, at.e);
        let seen = e.snapshot(dir);
        let r = attempt(fd, e);
        if r >= 0 {
            set_errno(caller_errno);
            return Io::Done(r);
        }
        let err = errno();
        if err != libc::EAGAIN || user_nonblocking(fd, e) {
            if err == libc::EAGAIN {
                // The program's own O_NONBLOCK: a loop of such attempts may
                // wait for a thread of this worker (`sched/slice.rs`).
                crate::sched::slice::yield_if_slice_spent();
            }
            return Io::Done(r);
        }
        let i = intr.get_or_insert_with(Interruptible::begin);
        if let Some(restart) = i.check() {
            if !restart || deadline.ends_in_eintr(fd, e, dir) {
                set_errno(libc::EINTR);
                return Io::Done(-1);
            }
            *i = Interruptible::begin();
        }
        if crate::sched::token::cancel_point() {
            set_errno(libc::ECANCELED);
            return Io::Done(-1);
        }
        if !e.policy.same_file(fd, seen.gen) {
            // Replaced behind corun's back: forget the old file (its
            // waiters fail with EBADF) and try the new one.
            e.reset();
            continue;
        }
        if !fdkeep::enter(e, seen.gen) {
            // Closed or replaced since the attempt: try what the number
            // is now (a closed fd fails with EBADF by itself).
            continue;
        }
        let waited = park_until_ready(fd, dir, seen, deadline.get(fd, e, dir));
        if let Some(k) = fdkeep::leave(e, seen.gen) {
            at.switch(k);
            continue;
        }
        match waited {
            FdWait::Ready => continue,
            FdWait::Closed => {
                set_errno(libc::EBADF);
                return Io::Done(-1);
            }
            FdWait::TimedOut => {
                let r = attempt(fd, e);
                if r >= 0 {
                    set_errno(caller_errno);
                }
                return Io::Done(r);
            }
            FdWait::NotPollable(_) => return Io::Blocking,
        }
    }
}

/// How a blocking "write everything" made of non-blocking attempts ended.
pub(crate) enum Written {
    /// The call's result: the count written, or -1 with errno set.
    Done(isize),
    /// corun cannot wait on this fd: the bytes from this offset on must be
    /// written by the blocking call itself (0: the whole call).
    Rest(usize),
}

/// A blocking write on a stream, out of non-blocking attempts: the one loop
/// behind `write`, `writev`, `send`, `sendto` and `sendmsg`.
/// `attempt(done)` makes one non-blocking attempt for the bytes from offset
/// `done` on (None: corun has no way to for this fd). Partial results add up
/// to `total`, parking in between; the program's own O_NONBLOCK stops after
/// the first. Once some bytes are out, an error returns the count so far,
/// and a connection found failed (POLLERR/POLLHUP) is left alone so its
/// error stays pending for the next call, as the kernel's blocking write
/// does. Attempts after a partial write must not raise SIGPIPE. A handler
/// that ran during a partial attempt (a tty write on the blocking pool
/// that a signal cut short) ends the write with the count so far, as
/// natively (signal(7): a slow device's call that transferred data).
pub(crate) fn write_all(
    fd: i32,
    e: &FdEntry,
    total: usize,
    attempt: impl FnMut(i32, &FdEntry, usize) -> Option<isize>,
) -> Written {
    write_all_from(fd, e, total, 0, errno(), attempt)
}

/// `write_all` of a write whose first `done` bytes an attempt of the
/// caller's sent already, `caller_errno` being errno as the program had
/// it before that attempt.
pub(crate) fn write_all_from(
    fd: i32,
    e: &FdEntry,
    total: usize,
    mut done: usize,
    caller_errno: i32,
    mut attempt: impl FnMut(i32, &FdEntry, usize) -> Option<isize>,
) -> Written {
    let mut deadline = Deadline::default();
    let handlers = crate::sched::signals::handlers_run();
    // The whole write goes to one file, even when the number is replaced
    // between two parts.
    let mut at = At::new(fd, e);
    // A count returned leaves errno alone, even after an error that ended
    // a partial write.
    let count = |n: usize| {
        set_errno(caller_errno);
        Written::Done(n as isize)
    };
    loop {
        let mut rest = false;
        let mut failed = false;
        let io = nonblocking_loop_at(&mut at, Dir::Write, &mut deadline, |fd, e| {
            if done > 0 && stream_socket_failed(fd, e) {
                failed = true;
                return 0;
            }
            attempt(fd, e, done).unwrap_or_else(|| {
                rest = true;
                0
            })
        });
        let r = match io {
            Io::Done(_) if failed => return count(done),
            Io::Done(_) if rest => return Written::Rest(done),
            Io::Done(r) => r,
            Io::Blocking => return Written::Rest(done),
        };
        if r < 0 {
            return if done > 0 {
                count(done)
            } else {
                Written::Done(-1)
            };
        }
        done += r as usize;
        if done >= total
            || r == 0
            || user_nonblocking(at.fd, at.e)
            || crate::sched::signals::handlers_run() != handlers
        {
            return count(done);
        }
    }
}

/// After a partial write: is `fd` a socket whose connection failed?
fn stream_socket_failed(fd: i32, e: &FdEntry) -> bool {
    fd_kind(fd, e) == fdtable::KIND_SOCKET
        && poll_now(fd, libc::POLLOUT) & (libc::POLLERR | libc::POLLHUP) != 0
}

/// MSG_NOSIGNAL once part of a write is out: the blocking call would have
/// returned the partial count without a signal. Also while the coroutine
/// blocks SIGPIPE: the kernel would send it to the worker thread, where
/// another coroutine may not block it (and die of it, at SIG_DFL);
/// `sent_or_epipe` then makes it pending for this coroutine, as it would
/// be for this thread natively.
pub(crate) fn nosignal_after(done: usize) -> i32 {
    if done > 0 || blocks_sigpipe() {
        libc::MSG_NOSIGNAL
    } else {
        0
    }
}

fn blocks_sigpipe() -> bool {
    crate::sched::current().is_some_and(|t| {
        t.ident.sigmask.load(Ordering::Relaxed) & crate::sched::sigmask::bit(libc::SIGPIPE) != 0
    })
}

/// After a send attempt made with `nosignal_after(done)`: an EPIPE that
/// natively raised SIGPIPE (nothing sent yet, the caller did not ask for
/// MSG_NOSIGNAL) leaves SIGPIPE pending for the coroutine that blocks it.
pub(crate) fn sent_or_epipe(r: isize, done: usize, caller_flags: i32) -> isize {
    if r < 0 && done == 0 && caller_flags & libc::MSG_NOSIGNAL == 0 && errno() == libc::EPIPE {
        if let Some(t) = crate::sched::current() {
            if t.ident.sigmask.load(Ordering::Relaxed) & crate::sched::sigmask::bit(libc::SIGPIPE)
                != 0
            {
                let saved = errno();
                let mut info = crate::sched::siginfo::bare(libc::SIGPIPE);
                // SAFETY: getpid/getuid have no preconditions.
                let (pid, uid) = unsafe { (libc::getpid(), libc::getuid()) };
                info[2] = (pid as u32 as u64) | ((uid as u64) << 32);
                crate::sched::signals::give(&t, libc::SIGPIPE, &info);
                set_errno(saved);
            }
        }
    }
    r
}

/// `poll(fd, events, 0)`: the fd's revents now.
pub(crate) fn poll_now(fd: i32, events: i16) -> i16 {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd; the real poll (the hook would park).
    if unsafe { crate::sys::real::poll(&mut p, 1, 0) } > 0 {
        p.revents
    } else {
        0
    }
}

/// The fd is ready now for `events` (or in error).
pub(crate) fn ready_now(fd: i32, events: i16) -> bool {
    poll_now(fd, events) != 0
}

/// Sets errno to EAGAIN and returns -1 (an attempt that found nothing).
pub(crate) fn eagain() -> isize {
    set_errno(libc::EAGAIN);
    -1
}

/// At the entry of a call that is a cancellation point in glibc (read,
/// write, open, close...): a request already due acts here, before the
/// call, even when the call would not wait. glibc's wrappers test for a
/// pending request before the system call, so natively a thread that only
/// reads files (netdata's proc plugin, /proc files in a loop) ends at its
/// next such call; acting only at the next wait let it run on, leave its
/// loop by itself and meet the request in its cleanup handler.
#[inline]
pub(crate) fn cancel_entry() {
    if let Some(t) = crate::sched::current() {
        crate::sched::identity::cancel_point(&t.ident);
    }
}

/// At the entry of read, write, readv, writev, pread and pwrite:
/// `cancel_entry`, and a turn for the others when the caller has held its
/// worker for a slice without a switch (`sched::slice`). Natively the
/// kernel preempts a thread that loops on such calls (a file, /dev/null,
/// a pipe or socket that always has room or data); corun's preemption
/// refuses a thread whose pc is in glibc or corun, where such a loop
/// spends its time, so a sleeper on its worker waited up to seconds.
#[inline]
pub(crate) fn rw_entry() {
    cancel_entry();
    crate::sched::slice::yield_if_slice_spent();
}
