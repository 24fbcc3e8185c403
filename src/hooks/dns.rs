//! `getaddrinfo`, `getnameinfo`, `gethostbyname`, `gethostbyname2`,
//! `gethostbyname_r`, `gethostbyname2_r`, `gethostbyaddr`.
//!
//! Name resolution reads files and may wait seconds on a DNS server, inside
//! libc, with no fd corun could park on. In a coroutine each call runs on
//! the blocking pool while the coroutine parks (the results are the same
//! as a call made straight through).
//!
//! Except a call whose answer needs neither: `getaddrinfo` of a numeric
//! host (or none) and a numeric port (or none), without AI_CANONNAME, and
//! `getnameinfo` asked for a numeric host and service (NI_NUMERICHOST,
//! NI_NUMERICSERV), or for only one of them, numeric. glibc answers
//! those from the arguments, asking at most the kernel (AI_ADDRCONFIG's
//! netlink query, which the kernel answers at once), so they run inline.
//! A proxy resolving each request's "127.0.0.1" (privoxy) paid a hand-off
//! to a pool thread and back per request.
//!
//! The non-reentrant forms (`gethostbyname`, `gethostbyaddr`) return
//! libc's static storage, valid until the next such call in the process:
//! exactly the hazard a threaded program already has when two threads
//! resolve at once, and no worse under corun.

use std::ffi::{c_char, c_int, c_void, CStr};

use libc::{addrinfo, hostent, sockaddr, socklen_t};

use crate::sched::blocking::run_blocking;

mod real {
    use libc::{addrinfo, hostent, size_t, sockaddr, socklen_t};
    use std::ffi::{c_char, c_int, c_void};
    crate::sys::real::real_fns! {
        fn getaddrinfo(node: *const c_char, service: *const c_char, hints: *const addrinfo,
            res: *mut *mut addrinfo) -> c_int;
        fn getnameinfo(sa: *const sockaddr, salen: socklen_t, host: *mut c_char, hostlen: socklen_t,
            serv: *mut c_char, servlen: socklen_t, flags: c_int) -> c_int;
        fn gethostbyname(name: *const c_char) -> *mut hostent;
        fn gethostbyname2(name: *const c_char, af: c_int) -> *mut hostent;
        fn gethostbyaddr(addr: *const c_void, len: socklen_t, ty: c_int) -> *mut hostent;
        fn gethostbyname_r(name: *const c_char, ret: *mut hostent, buf: *mut c_char, len: size_t,
            result: *mut *mut hostent, h_errnop: *mut c_int) -> c_int;
        fn gethostbyname2_r(name: *const c_char, af: c_int, ret: *mut hostent, buf: *mut c_char,
            len: size_t, result: *mut *mut hostent, h_errnop: *mut c_int) -> c_int;
    }
}

/// Pointers that cross to a helper thread while their owner is parked.
#[derive(Clone, Copy)]
struct Ptrs([usize; 6]);

/// Runs `call` with `ptrs` on the blocking pool (which carries errno back)
/// and carries h_errno, which libc also keeps per thread, back too.
fn offload<R: Send + Copy>(ptrs: Ptrs, call: impl FnOnce(Ptrs) -> R + Send) -> R {
    let (r, he) = run_blocking(move || {
        let r = call(ptrs);
        // SAFETY: __h_errno_location returns this thread's h_errno.
        (r, unsafe { *__h_errno_location() })
    });
    // SAFETY: as above, for the calling thread.
    unsafe { *__h_errno_location() = he };
    r
}

extern "C" {
    fn __h_errno_location() -> *mut c_int;
    fn inet_pton(af: c_int, src: *const c_char, dst: *mut c_void) -> c_int;
}

/// Whether `s` is a numeric IPv4 or IPv6 address as getaddrinfo reads one
/// (no scope: "%eth0" names an interface, a lookup).
fn numeric_host(s: &CStr) -> bool {
    let b = s.to_bytes();
    if b.is_empty() || b.contains(&b'%') {
        return false;
    }
    let mut buf = [0u8; 16];
    // SAFETY: `s` is NUL-terminated; `buf` holds an in6_addr (16 bytes),
    // larger than an in_addr.
    unsafe {
        inet_pton(libc::AF_INET, s.as_ptr(), buf.as_mut_ptr().cast()) == 1
            || inet_pton(libc::AF_INET6, s.as_ptr(), buf.as_mut_ptr().cast()) == 1
    }
}

/// Whether getaddrinfo answers from its arguments alone (and the kernel):
/// no host or a numeric one, no service or a numeric one, no canonical
/// name asked for.
///
/// # Safety
/// The caller's getaddrinfo contract: `node` and `service` NULL or
/// NUL-terminated, `hints` NULL or readable.
unsafe fn answered_inline(
    node: *const c_char,
    service: *const c_char,
    hints: *const addrinfo,
) -> bool {
    // SAFETY: the caller's contract.
    let flags = if hints.is_null() {
        0
    } else {
        unsafe { (*hints).ai_flags }
    };
    if flags & libc::AI_CANONNAME != 0 {
        return false;
    }
    // SAFETY: the caller's contract (NUL-terminated when not NULL).
    let host_ok = node.is_null()
        || flags & libc::AI_NUMERICHOST != 0
        || numeric_host(unsafe { CStr::from_ptr(node) });
    // SAFETY: as above.
    let serv_ok = service.is_null()
        || flags & libc::AI_NUMERICSERV != 0
        || unsafe { CStr::from_ptr(service) }
            .to_bytes()
            .iter()
            .all(u8::is_ascii_digit);
    host_ok && serv_ok
}

#[no_mangle]
pub unsafe extern "C" fn getaddrinfo(
    node: *const c_char,
    service: *const c_char,
    hints: *const addrinfo,
    res: *mut *mut addrinfo,
) -> c_int {
    // SAFETY: the caller's getaddrinfo contract.
    if unsafe { answered_inline(node, service, hints) } {
        // SAFETY: as above.
        return unsafe { real::getaddrinfo(node, service, hints, res) };
    }
    let p = Ptrs([
        node as usize,
        service as usize,
        hints as usize,
        res as usize,
        0,
        0,
    ]);
    offload(p, |p| {
        // SAFETY: the caller's getaddrinfo contract; the caller is parked.
        unsafe {
            real::getaddrinfo(
                p.0[0] as *const c_char,
                p.0[1] as *const c_char,
                p.0[2] as *const addrinfo,
                p.0[3] as *mut *mut addrinfo,
            )
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn getnameinfo(
    sa: *const sockaddr,
    salen: socklen_t,
    host: *mut c_char,
    hostlen: socklen_t,
    serv: *mut c_char,
    servlen: socklen_t,
    flags: c_int,
) -> c_int {
    // Each part asked for numeric, or not asked for (privoxy asks for the
    // host alone, NI_NUMERICHOST and no service buffer, twice a request).
    let host_numeric = host.is_null() || hostlen == 0 || flags & libc::NI_NUMERICHOST != 0;
    let serv_numeric = serv.is_null() || servlen == 0 || flags & libc::NI_NUMERICSERV != 0;
    if host_numeric && serv_numeric {
        // Formatting only: no file, no DNS.
        // SAFETY: the caller's getnameinfo contract.
        return unsafe { real::getnameinfo(sa, salen, host, hostlen, serv, servlen, flags) };
    }
    let p = Ptrs([sa as usize, host as usize, serv as usize, 0, 0, 0]);
    offload(p, |p| {
        // SAFETY: the caller's getnameinfo contract; the caller is parked.
        unsafe {
            real::getnameinfo(
                p.0[0] as *const sockaddr,
                salen,
                p.0[1] as *mut c_char,
                hostlen,
                p.0[2] as *mut c_char,
                servlen,
                flags,
            )
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn gethostbyname(name: *const c_char) -> *mut hostent {
    let p = Ptrs([name as usize, 0, 0, 0, 0, 0]);
    // SAFETY: the caller's contract; the caller is parked.
    offload(p, |p| unsafe {
        real::gethostbyname(p.0[0] as *const c_char) as usize
    }) as *mut hostent
}

#[no_mangle]
pub unsafe extern "C" fn gethostbyname2(name: *const c_char, af: c_int) -> *mut hostent {
    let p = Ptrs([name as usize, 0, 0, 0, 0, 0]);
    // SAFETY: the caller's contract; the caller is parked.
    offload(p, |p| unsafe {
        real::gethostbyname2(p.0[0] as *const c_char, af) as usize
    }) as *mut hostent
}

#[no_mangle]
pub unsafe extern "C" fn gethostbyaddr(
    addr: *const c_void,
    len: socklen_t,
    ty: c_int,
) -> *mut hostent {
    let p = Ptrs([addr as usize, 0, 0, 0, 0, 0]);
    // SAFETY: the caller's contract; the caller is parked.
    offload(p, |p| unsafe {
        real::gethostbyaddr(p.0[0] as *const c_void, len, ty) as usize
    }) as *mut hostent
}

#[no_mangle]
pub unsafe extern "C" fn gethostbyname_r(
    name: *const c_char,
    ret: *mut hostent,
    buf: *mut c_char,
    len: libc::size_t,
    result: *mut *mut hostent,
    h_errnop: *mut c_int,
) -> c_int {
    let p = Ptrs([
        name as usize,
        ret as usize,
        buf as usize,
        result as usize,
        h_errnop as usize,
        0,
    ]);
    offload(p, |p| {
        // SAFETY: the caller's contract; the caller is parked.
        unsafe {
            real::gethostbyname_r(
                p.0[0] as *const c_char,
                p.0[1] as *mut hostent,
                p.0[2] as *mut c_char,
                len,
                p.0[3] as *mut *mut hostent,
                p.0[4] as *mut c_int,
            )
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn gethostbyname2_r(
    name: *const c_char,
    af: c_int,
    ret: *mut hostent,
    buf: *mut c_char,
    len: libc::size_t,
    result: *mut *mut hostent,
    h_errnop: *mut c_int,
) -> c_int {
    let p = Ptrs([
        name as usize,
        ret as usize,
        buf as usize,
        result as usize,
        h_errnop as usize,
        0,
    ]);
    offload(p, |p| {
        // SAFETY: the caller's contract; the caller is parked.
        unsafe {
            real::gethostbyname2_r(
                p.0[0] as *const c_char,
                af,
                p.0[1] as *mut hostent,
                p.0[2] as *mut c_char,
                len,
                p.0[3] as *mut *mut hostent,
                p.0[4] as *mut c_int,
            )
        }
    })
}
