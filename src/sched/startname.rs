//! What a user recognises as where a thread started (docs/ARCHITECTURE.md
//! §11): the watchdog's "started at ..." and the dump's start column.
//!
//! A C thread names its start routine. Language runtimes start every
//! thread with one trampoline of theirs, whose name says nothing; the
//! callable it runs is in its argument (`Task::start_arg`):
//!
//! - libstdc++'s `execute_native_thread_routine(void *p)`: `p` is a
//!   `std::thread::_State *`, a polymorphic object whose vtable holds its
//!   destructors, then `_M_run` (Itanium C++ ABI: the vtable pointer is the
//!   object's first word, and points at the first virtual function). The
//!   `_M_run` of `_State_impl<_Invoker<tuple<F, Args...>>>` is named after
//!   `F`: the lambda (`main::{lambda()#1}`) or the function type. For a
//!   function pointer, the pointer itself is in the object: the first word
//!   after the vtable pointer that is the exact address of a function names
//!   it.
//! - Rust std's `thread_start(void *p)`: `p` is a `Box<Box<dyn FnOnce()>>`,
//!   a (data, vtable) pair whose vtable holds drop, size, align, then
//!   `call_once`, named after std's closure and, in its generic
//!   arguments, the program's (`spawn_unchecked_::<main::{closure#0}, ..>`).
//!   The box is freed as soon as the thread runs, so the vtable pointer
//!   must be taken at `pthread_create` (`creation_arg`: the first of the
//!   argument's words that points into the program's object; current std
//!   keeps the thread handle next to the closure), and only once the
//!   trampoline is known: `pthread_create` cannot afford a symbol lookup,
//!   nor read an argument that may be any integer. `pthread_create` posts
//!   a start routine it has not just seen, and the watchdog classifies it
//!   at its next sample (`learn_pending`), as it does the start of each
//!   running coroutine (`learn`); once a Rust trampoline is known, later
//!   threads started there keep their vtable pointer.
//!
//! Every read of the program's memory here goes through `process_vm_readv`
//! (a bad address is an error, not a fault), and a vtable is trusted only
//! if it is in the program's own object with a plausible size and alignment.
//!
//! Runs on the watchdog's or the dump's thread: allocates, reads files.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use crate::sys::ForkMutex;

use super::symbols::{self, describe, function_name, object_of, short};

/// The address of Rust std's thread trampoline, once seen (0: not yet).
static RUST_TRAMPOLINE: AtomicUsize = AtomicUsize::new(0);
/// The address range of the object holding it (its vtables are there).
static RUST_OBJECT: (AtomicUsize, AtomicUsize) = (AtomicUsize::new(0), AtomicUsize::new(0));
/// The start routine of the last `pthread_create`, and one not classified
/// yet (0: none), for `learn_pending`.
static LAST_SEEN: AtomicUsize = AtomicUsize::new(0);
static PENDING: AtomicUsize = AtomicUsize::new(0);
/// Start addresses already classified by `learn`.
static LEARNT: ForkMutex<Option<HashSet<usize>>> = ForkMutex::new(None);

/// In a forked child: the lock of `LEARNT`, if a parent thread held it.
pub fn after_fork_child() {
    LEARNT.unlock_after_fork(|| None);
    super::symbols::after_fork_child();
}

/// What `pthread_create` keeps of `arg` for a thread started at `start`
/// (`Task::start_arg`): for Rust's trampoline, the closure's vtable
/// pointer (the box holding it is freed when the thread runs); otherwise
/// `arg` itself. One load and compare for other threads.
#[inline]
pub fn creation_arg(start: usize, arg: usize) -> usize {
    let known = RUST_TRAMPOLINE.load(Relaxed);
    if start != known && start != LAST_SEEN.load(Relaxed) {
        // A start routine not seen just before: the watchdog classifies it
        // at its next sample (`learn_pending`).
        LAST_SEEN.store(start, Relaxed);
        PENDING.store(start, Relaxed);
    }
    if start != 0 && start == known {
        // SAFETY: Rust's thread_start is always given a live
        // Box<Box<dyn FnOnce()>>, a (data, vtable) pair, owned by the new
        // thread, which has not run yet.
        let (lo, hi) = (RUST_OBJECT.0.load(Relaxed), RUST_OBJECT.1.load(Relaxed));
        for i in 0..3 {
            // SAFETY: the argument is std's allocation of at least three
            // words (a Box<dyn FnOnce()> and what std keeps with it, e.g.
            // the Thread handle), owned by the new thread that has not run.
            let w = unsafe { *(arg as *const usize).add(i) };
            if (lo..hi).contains(&w) {
                return w;
            }
        }
        return 0;
    }
    arg
}

/// Classifies the start routine `pthread_create` last saw anew (watchdog
/// thread, at each sample).
pub fn learn_pending() {
    let p = PENDING.swap(0, Relaxed);
    if p != 0 {
        learn(p);
    }
}

/// Classifies the start routine `start` once (watchdog thread): a Rust
/// trampoline is remembered for `creation_arg`.
pub fn learn(start: usize) {
    if start == 0 || RUST_TRAMPOLINE.load(Relaxed) != 0 {
        return;
    }
    {
        let mut g = crate::sched::fdtable::lock(LEARNT.get());
        if !g.get_or_insert_with(HashSet::new).insert(start) {
            return;
        }
    }
    if is_rust_trampoline(start) {
        if let Some((lo, hi)) = object_range(start) {
            RUST_OBJECT.0.store(lo, Relaxed);
            RUST_OBJECT.1.store(hi, Relaxed);
            RUST_TRAMPOLINE.store(start, Relaxed);
        }
    }
}

/// The lowest and highest address of the loaded segments of the object
/// holding `addr`.
fn object_range(addr: usize) -> Option<(usize, usize)> {
    struct Find {
        addr: usize,
        range: Option<(usize, usize)>,
    }
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid info and our `Find`.
        let (info, find) = unsafe { (&*info, &mut *(data as *mut Find)) };
        let (mut lo, mut hi) = (usize::MAX, 0);
        for i in 0..info.dlpi_phnum as usize {
            // SAFETY: dlpi_phdr has dlpi_phnum entries.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            if ph.p_type == libc::PT_LOAD {
                let start = info.dlpi_addr as usize + ph.p_vaddr as usize;
                lo = lo.min(start);
                hi = hi.max(start + ph.p_memsz as usize);
            }
        }
        if (lo..hi).contains(&find.addr) {
            find.range = Some((lo, hi));
            return 1;
        }
        0
    }
    let mut find = Find { addr, range: None };
    // SAFETY: the callback only reads what the loader passes it.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut find as *mut Find).cast()) };
    find.range
}

fn is_rust_trampoline(start: usize) -> bool {
    function_name(start).is_some_and(|n| n.contains("std::") && n.ends_with("::thread_start"))
}

/// Reads one word of this process at `addr`, or None if it is not mapped
/// readable (no fault: the kernel copies it).
fn read_word(addr: usize) -> Option<usize> {
    if addr == 0 || !addr.is_multiple_of(std::mem::size_of::<usize>()) {
        return None;
    }
    let mut v: usize = 0;
    let local = libc::iovec {
        iov_base: (&mut v as *mut usize).cast(),
        iov_len: std::mem::size_of::<usize>(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: std::mem::size_of::<usize>(),
    };
    // SAFETY: the local buffer is a live usize; the remote range is only
    // read by the kernel, which fails with EFAULT where it is not mapped.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    (n == std::mem::size_of::<usize>() as isize).then_some(v)
}

/// The name to show for a thread started at `start` with argument `arg`
/// (0, 0 for `main`).
pub fn start_name(start: usize, arg: usize) -> String {
    if start == 0 {
        return "main".to_string();
    }
    let Some((object, _)) = object_of(start) else {
        return format!("{start:#x}");
    };
    let trampoline = function_name(start);
    if short(&object).starts_with("libstdc++") {
        if let Some(n) = cxx_callable(arg) {
            return n;
        }
    }
    if let Some(t) = trampoline.filter(|_| is_rust_trampoline(start)) {
        let closure = if start == RUST_TRAMPOLINE.load(Relaxed) {
            rust_closure(arg, &object)
        } else {
            None
        };
        return closure.unwrap_or_else(|| format!("Rust std::thread of {} ({t})", short(&object)));
    }
    describe(start)
}

/// The callable of a libstdc++ `std::thread` whose `_State` is at `state`.
fn cxx_callable(state: usize) -> Option<String> {
    let vptr = read_word(state)?;
    let run = read_word(vptr + 2 * std::mem::size_of::<usize>())?;
    // A function pointer stored in the state object names the function.
    for i in 1..6 {
        let Some(w) = read_word(state + i * std::mem::size_of::<usize>()) else {
            break;
        };
        if w == 0 || w == run {
            continue;
        }
        if let Some(n) = exact_function(w) {
            return Some(format!("std::thread running {n}"));
        }
    }
    let name = match function_name(run) {
        Some(n) => callable_of_run(&n),
        None => describe(run),
    };
    Some(format!("std::thread running {name}"))
}

/// The name of the function that starts exactly at `addr` in the main
/// program or a library, if any.
fn exact_function(addr: usize) -> Option<String> {
    let (object, off) = object_of(addr)?;
    if short(&object).starts_with("libstdc++") || short(&object).starts_with("libc.so") {
        return None;
    }
    let name = function_name(addr)?;
    // Only a function's first byte: the start of the named symbol.
    let before = function_name(addr.checked_sub(1)?);
    (before.as_deref() != Some(name.as_str()) && off > 0).then_some(name)
}

/// `F` out of `std::thread::_State_impl<std::thread::_Invoker<std::tuple<F>
/// > >::_M_run()`, or the whole name if it is not of that shape.
fn callable_of_run(run: &str) -> String {
    const HEAD: &str = "std::thread::_State_impl<std::thread::_Invoker<std::tuple<";
    match run
        .strip_prefix(HEAD)
        .and_then(|r| r.rfind("> > >::_M_run()").map(|e| &r[..e]))
    {
        Some(f) => f.to_string(),
        None => run.to_string(),
    }
}

/// The closure of a Rust std thread whose closure vtable is at `vtable`,
/// named with the program's object and the closest symbol.
fn rust_closure(vtable: usize, object: &str) -> Option<String> {
    let (vt_object, _) = object_of(vtable)?;
    if vt_object != object {
        return None;
    }
    let size = read_word(vtable + std::mem::size_of::<usize>())?;
    let align = read_word(vtable + 2 * std::mem::size_of::<usize>())?;
    let call = read_word(vtable + 3 * std::mem::size_of::<usize>())?;
    if !align.is_power_of_two() || align > 4096 || size > 1 << 20 {
        return None;
    }
    let (call_object, off) = object_of(call)?;
    if call_object != object {
        return None;
    }
    // A crate built with v0 mangling names the program's closure in the
    // generic arguments of std's; with legacy mangling only the address
    // says which closure it is (`addr2line -i -e object offset`).
    let near = symbols::function_name(call).unwrap_or_default();
    Some(match user_closure(&near) {
        Some(f) => format!("Rust std::thread of {} running {f}", short(object)),
        None => format!(
            "Rust std::thread of {}, closure at {}+{off:#x}",
            short(object),
            short(object)
        ),
    })
}

/// The program's closure in the name of std's: the first generic
/// argument of `spawn_unchecked_::<F, T>`.
fn user_closure(name: &str) -> Option<String> {
    const KEY: &str = "spawn_unchecked_::<";
    let at = name.find(KEY)?;
    let rest = &name[at + KEY.len()..];
    let mut depth = 0;
    for (i, c) in rest.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' if depth > 0 => depth -= 1,
            ',' | '>' if depth == 0 => return Some(rest[..i].to_string()),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lambda_out_of_m_run() {
        assert_eq!(
            callable_of_run(
                "std::thread::_State_impl<std::thread::_Invoker<std::tuple<main::{lambda()#1}> > >::_M_run()"
            ),
            "main::{lambda()#1}"
        );
        assert_eq!(callable_of_run("other"), "other");
    }

    #[test]
    fn program_closure_out_of_std_closure() {
        assert_eq!(
            user_closure("<<std::thread::Builder>::spawn_unchecked_::<rust_threads::main::{closure#0}, u64>::{closure#1} as core::ops::function::FnOnce<()>>::call_once::{shim:vtable#0}"),
            Some("rust_threads::main::{closure#0}".to_string())
        );
        assert_eq!(user_closure("core::ops::function::FnOnce::call_once"), None);
    }

    #[test]
    fn unreadable_words_are_none() {
        assert_eq!(read_word(0), None);
        assert_eq!(read_word(8), None);
        let x: usize = 42;
        assert_eq!(read_word(&x as *const usize as usize), Some(42));
    }
}
