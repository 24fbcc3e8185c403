//! Threads of runtimes that schedule themselves: kernel threads, as
//! natively.
//!
//! A Go program built with cgo creates its Ms (the kernel threads its
//! scheduler runs goroutines on) with `pthread_create`, and then waits in
//! them with its own inline `futex` and `epoll_wait` system calls, which
//! no hook sees. As coroutines, an M asleep in such a wait held its worker,
//! and the M that would wake it could not run: a 30-line cgo program hung
//! under corun (`go_cgo` test). Go already multiplexes goroutines onto few
//! threads; its threads gain nothing from corun.
//!
//! GCC's OpenMP runtime (libgomp) is the other such runtime: its team
//! threads wait at barriers and for work with inline `futex` system calls
//! (its config/linux/x86/futex.h). With more team threads than workers,
//! `#pragma omp parallel` hung under corun: the members asleep in the
//! kernel held every worker, and the ones that would wake them never ran.
//! A team thread does the program's computing, which a coroutine would
//! only serialise.
//!
//! So `pthread_create` makes a kernel thread when the start routine lives
//! in an object that carries one of these runtimes: it defines one of
//! `MARKERS` (Go's `x_cgo_init`: a program, or a `-buildmode=c-shared`
//! library loaded by a C program; libgomp's `GOMP_parallel`). The
//! thread that starts a team (often `main`, a coroutine) also waits in
//! libgomp's own futex calls, holding its worker meanwhile; the team's
//! members are kernel threads, so the team always finishes.
//! The answer is kept per object (by its load address), for a few objects,
//! and the last start routine asked about is remembered: a program that
//! creates many threads pays one comparison per create.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Symbols whose definition marks an object as a runtime that schedules
/// its own threads.
const MARKERS: [&std::ffi::CStr; 2] = [c"x_cgo_init", c"GOMP_parallel"];

/// The last start routine asked about, and the answer (bit 0: foreign).
static LAST: AtomicUsize = AtomicUsize::new(0);
/// Objects asked about: (load address, foreign).
static OBJECTS: Mutex<Vec<(usize, bool)>> = Mutex::new(Vec::new());

/// Whether a thread starting at `start` belongs to a runtime that
/// schedules itself (see the top of this file).
pub(crate) fn schedules_itself(start: usize) -> bool {
    let last = LAST.load(Ordering::Relaxed);
    if last & !1 == start {
        return last & 1 == 1;
    }
    let foreign = object_of(start).is_some_and(cached_answer);
    if start & 1 == 0 {
        LAST.store(start | foreign as usize, Ordering::Relaxed);
    }
    foreign
}

/// Whether code at `pc` belongs to a runtime that schedules itself (the
/// watchdog asks where a sleeping worker sleeps).
pub(crate) fn is_foreign_code(pc: usize) -> bool {
    object_of(pc).is_some_and(cached_answer)
}

/// The load address and file name of the object holding `addr`.
fn object_of(addr: usize) -> Option<(usize, *const libc::c_char)> {
    // SAFETY: a zeroed Dl_info is a valid out-buffer; dladdr only reads
    // the loader's tables.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::dladdr(addr as *const c_void, &mut info) } == 0 {
        return None;
    }
    Some((info.dli_fbase as usize, info.dli_fname))
}

fn cached_answer((base, name): (usize, *const libc::c_char)) -> bool {
    let mut objects = crate::sched::fdtable::lock(&OBJECTS);
    if let Some(&(_, f)) = objects.iter().find(|(b, _)| *b == base) {
        return f;
    }
    let foreign = MARKERS.iter().any(|m| defines(base, name, m));
    if objects.len() < 64 {
        objects.push((base, foreign));
    }
    foreign
}

/// Whether the object loaded at `base` (file `name`) defines `marker`:
/// looked up in the global scope (the program and what it links), then in
/// the object itself (a library dlopen'ed RTLD_LOCAL).
fn defines(base: usize, name: *const libc::c_char, marker: &std::ffi::CStr) -> bool {
    let defined_here = |sym: *mut c_void| {
        !sym.is_null() && object_of(sym as usize).is_some_and(|(b, _)| b == base)
    };
    // SAFETY: dlsym reads the loader's symbol tables.
    if defined_here(unsafe { libc::dlsym(libc::RTLD_DEFAULT, marker.as_ptr()) }) {
        return true;
    }
    // SAFETY: dladdr's name is NUL-terminated and owned by the loader.
    if name.is_null() || unsafe { *name } == 0 {
        return false;
    }
    // SAFETY: RTLD_NOLOAD only finds an object already loaded (adding a
    // reference, dropped below); dlsym reads its symbol table.
    unsafe {
        let h = libc::dlopen(name, libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        if h.is_null() {
            return false;
        }
        let found = defined_here(libc::dlsym(h, marker.as_ptr()));
        libc::dlclose(h);
        found
    }
}
