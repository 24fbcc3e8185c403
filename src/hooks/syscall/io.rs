//! Raw system calls that wait for an fd, a timer or a child, made from a
//! coroutine through `syscall(2)` (`syscall(SYS_read, ...)`): each goes to
//! corun's hook of the libc name, which parks where the call would block,
//! as it does for the libc wrapper. Made raw, the call slept in the kernel
//! with its worker: with one worker (the default on one CPU, or under
//! `taskset`) the thread that would have written to the pipe never ran,
//! and a raw `poll` gave 0 after its whole timeout where it gave 1 after
//! 50 ms natively.
//!
//! The results are the system call's as `syscall(2)` gives them: -1 and
//! errno on failure (`clock_nanosleep`, whose libc function returns the
//! error, is converted). The calls whose raw arguments differ from the
//! libc function's are unpacked (`pselect6`'s sigmask pair; `ppoll` and
//! `epoll_pwait`'s sigset size, which the libc functions take as given);
//! a `waitid` asking for resource usage (its raw fifth argument) stays the
//! kernel's. Like the libc wrappers, the hooks are cancellation points,
//! which `syscall(2)` itself is not.

use std::ffi::{c_int, c_long, c_void};

use libc::{sigset_t, timespec};

/// The numbers `call` takes (also in the trampoline of `mod.rs`).
pub(super) const NUMBERS: [c_long; 26] = [
    libc::SYS_read,
    libc::SYS_write,
    libc::SYS_readv,
    libc::SYS_writev,
    libc::SYS_pread64,
    libc::SYS_pwrite64,
    libc::SYS_recvfrom,
    libc::SYS_sendto,
    libc::SYS_recvmsg,
    libc::SYS_sendmsg,
    libc::SYS_accept,
    libc::SYS_accept4,
    libc::SYS_connect,
    libc::SYS_poll,
    libc::SYS_ppoll,
    libc::SYS_select,
    libc::SYS_pselect6,
    libc::SYS_epoll_wait,
    libc::SYS_epoll_pwait,
    libc::SYS_nanosleep,
    libc::SYS_clock_nanosleep,
    libc::SYS_wait4,
    libc::SYS_waitid,
    libc::SYS_pause,
    libc::SYS_msgrcv,
    libc::SYS_msgsnd,
];

/// Bit `n` set for each of those numbers below 64 (the trampoline tests
/// them with one `bt`).
pub(super) const LOW_MASK: u64 = {
    let mut m = 0u64;
    let mut i = 0;
    while i < NUMBERS.len() {
        if NUMBERS[i] < 64 {
            m |= 1 << NUMBERS[i];
        }
        i += 1;
    }
    m
};

/// The call `n` with arguments `a`, by its hook; None: the kernel's
/// (a form the hooks do not take).
pub(super) fn call(n: c_long, a: [c_long; 6]) -> Option<c_long> {
    use crate::hooks::{epoll, ipc, poll, pread, process, rw, sendrecv, signal, sleep, socket};
    let p = |i: usize| a[i] as *mut c_void;
    let fd = a[0] as c_int;
    // SAFETY: the program's own call, its arguments as it gave them to the
    // kernel, passed to the hook of the same call, which takes them as the
    // kernel does (the pointer casts below restate the kernel's types).
    let r: c_long = unsafe {
        match n {
            libc::SYS_read => rw::read(fd, p(1), a[2] as usize) as c_long,
            libc::SYS_write => rw::write(fd, p(1), a[2] as usize) as c_long,
            libc::SYS_readv => rw::readv(fd, a[1] as *const libc::iovec, a[2] as c_int) as c_long,
            libc::SYS_writev => rw::writev(fd, a[1] as *const libc::iovec, a[2] as c_int) as c_long,
            libc::SYS_pread64 => pread::pread64(fd, p(1), a[2] as usize, a[3]) as c_long,
            libc::SYS_pwrite64 => pread::pwrite64(fd, p(1), a[2] as usize, a[3]) as c_long,
            libc::SYS_recvfrom => sendrecv::recvfrom(
                fd,
                p(1),
                a[2] as usize,
                a[3] as c_int,
                a[4] as *mut libc::sockaddr,
                a[5] as *mut libc::socklen_t,
            ) as c_long,
            libc::SYS_sendto => sendrecv::sendto(
                fd,
                p(1),
                a[2] as usize,
                a[3] as c_int,
                a[4] as *const libc::sockaddr,
                a[5] as libc::socklen_t,
            ) as c_long,
            libc::SYS_recvmsg => {
                sendrecv::recvmsg(fd, a[1] as *mut libc::msghdr, a[2] as c_int) as c_long
            }
            libc::SYS_sendmsg => {
                sendrecv::sendmsg(fd, a[1] as *const libc::msghdr, a[2] as c_int) as c_long
            }
            libc::SYS_accept => socket::accept(
                fd,
                a[1] as *mut libc::sockaddr,
                a[2] as *mut libc::socklen_t,
            ) as c_long,
            libc::SYS_accept4 => socket::accept4(
                fd,
                a[1] as *mut libc::sockaddr,
                a[2] as *mut libc::socklen_t,
                a[3] as c_int,
            ) as c_long,
            libc::SYS_connect => {
                socket::connect(fd, a[1] as *const libc::sockaddr, a[2] as libc::socklen_t)
                    as c_long
            }
            libc::SYS_poll => poll::poll(
                a[0] as *mut libc::pollfd,
                a[1] as libc::nfds_t,
                a[2] as c_int,
            ) as c_long,
            libc::SYS_ppoll => poll::ppoll(
                a[0] as *mut libc::pollfd,
                a[1] as libc::nfds_t,
                a[2] as *const timespec,
                a[3] as *const sigset_t,
            ) as c_long,
            libc::SYS_select => poll::select(
                fd,
                a[1] as *mut libc::fd_set,
                a[2] as *mut libc::fd_set,
                a[3] as *mut libc::fd_set,
                a[4] as *mut libc::timeval,
            ) as c_long,
            libc::SYS_pselect6 => {
                // The kernel's sixth argument: { const sigset_t *, size_t }.
                let mask = if a[5] == 0 {
                    std::ptr::null()
                } else {
                    *(a[5] as *const *const sigset_t)
                };
                poll::pselect(
                    fd,
                    a[1] as *mut libc::fd_set,
                    a[2] as *mut libc::fd_set,
                    a[3] as *mut libc::fd_set,
                    a[4] as *const timespec,
                    mask,
                ) as c_long
            }
            libc::SYS_epoll_wait => epoll::epoll_wait(
                fd,
                a[1] as *mut libc::epoll_event,
                a[2] as c_int,
                a[3] as c_int,
            ) as c_long,
            libc::SYS_epoll_pwait => epoll::epoll_pwait(
                fd,
                a[1] as *mut libc::epoll_event,
                a[2] as c_int,
                a[3] as c_int,
                a[4] as *const sigset_t,
            ) as c_long,
            libc::SYS_nanosleep => {
                sleep::nanosleep(a[0] as *const timespec, a[1] as *mut timespec) as c_long
            }
            libc::SYS_clock_nanosleep => {
                let e = sleep::clock_nanosleep(
                    a[0] as libc::clockid_t,
                    a[1] as c_int,
                    a[2] as *const timespec,
                    a[3] as *mut timespec,
                );
                if e != 0 {
                    crate::sys::set_errno(e);
                    -1
                } else {
                    0
                }
            }
            libc::SYS_wait4 => process::wait4(
                a[0] as libc::pid_t,
                a[1] as *mut c_int,
                a[2] as c_int,
                a[3] as *mut libc::rusage,
            ) as c_long,
            libc::SYS_waitid if a[4] == 0 => process::waitid(
                a[0] as libc::idtype_t,
                a[1] as libc::id_t,
                a[2] as *mut libc::siginfo_t,
                a[3] as c_int,
            ) as c_long,
            libc::SYS_pause => signal::pause() as c_long,
            libc::SYS_msgrcv => ipc::msgrcv(fd, p(1), a[2] as usize, a[3], a[4] as c_int) as c_long,
            libc::SYS_msgsnd => ipc::msgsnd(fd, p(1), a[2] as usize, a[3] as c_int) as c_long,
            _ => return None,
        }
    };
    Some(r)
}
