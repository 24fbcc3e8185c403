//! The end of a thread's robust mutexes: what Linux does at a thread's
//! exit for the list it registered with `set_robust_list`, done by corun
//! for a coroutine's own list.
//!
//! # Why
//!
//! glibc links every robust mutex a thread holds into a list whose head is
//! in the thread's descriptor (`struct pthread`'s `robust_head`), and tells
//! the kernel where that head is once per kernel thread. When the thread
//! exits, the kernel walks the list and marks each mutex the thread still
//! holds FUTEX_OWNER_DIED, waking a waiter: the next locker gets
//! EOWNERDEAD. A coroutine with a descriptor of its own (`tls.rs`) has its
//! own list, which the kernel does not know; without this walk a mutex its
//! thread died holding stayed locked by the worker's tid for ever.
//!
//! # How
//!
//! The kernel's algorithm (kernel/futex/core.c, `exit_robust_list`): the
//! head is `{ next, futex_offset, list_op_pending }`; each entry's lock
//! word is at the entry plus `futex_offset`; bit 0 of a link marks a PI
//! mutex; the walk stops back at the head, or after 2,048 entries (a
//! corrupt list must not hang the exit). A word whose owner bits are not
//! the dying thread's tid is left alone; one that is gets
//! `(word & FUTEX_WAITERS) | FUTEX_OWNER_DIED`, and one waiter is woken if
//! there were any. The pending entry (a lock or unlock cut short) is done
//! last, as the kernel does.
//!
//! Not covered: a process that dies (exit, a signal) with coroutines
//! holding robust mutexes. The kernel walks only its threads' registered
//! lists then, and those are the workers' (README, Known limits).

use std::sync::atomic::{AtomicU32, Ordering};

const FUTEX_WAITERS: u32 = 0x8000_0000;
const FUTEX_OWNER_DIED: u32 = 0x4000_0000;
const FUTEX_TID_MASK: u32 = 0x3fff_ffff;
/// The kernel's ROBUST_LIST_LIMIT.
const LIMIT: usize = 2048;

/// Marks every mutex on the robust list at `head` that thread `tid` still
/// holds as its owner's death would, and empties the list.
///
/// # Safety
/// `head` is the robust list head of a glibc descriptor whose thread has
/// ended (nothing links or unlinks entries any more), in this process.
pub unsafe fn owner_died(head: usize, tid: i32) {
    // SAFETY: the head's three words, per the contract.
    let (first, offset, pending) = unsafe {
        (
            *(head as *const usize),
            *((head + 8) as *const isize),
            *((head + 16) as *const usize) & !1,
        )
    };
    let mut entry = first & !1;
    let mut n = 0;
    while entry != head && entry != 0 && n < LIMIT {
        // SAFETY: an entry glibc linked: a live mutex's list word.
        let next = unsafe { *(entry as *const usize) } & !1;
        if entry != pending {
            // SAFETY: the entry's lock word, per glibc's futex offset.
            unsafe { word_died(entry.wrapping_add_signed(offset), tid) };
        }
        entry = next;
        n += 1;
    }
    if pending != 0 {
        // SAFETY: as above, the entry whose operation was cut short.
        unsafe { word_died(pending.wrapping_add_signed(offset), tid) };
    }
    // SAFETY: the contract; an empty list points at its head.
    unsafe {
        *(head as *mut usize) = head;
        *((head + 16) as *mut usize) = 0;
    }
}

/// The kernel's `handle_futex_death` for one lock word.
///
/// # Safety
/// `addr` is a mutex's 4-byte aligned lock word.
unsafe fn word_died(addr: usize, tid: i32) {
    if addr == 0 || !addr.is_multiple_of(4) {
        return;
    }
    // SAFETY: per the contract, a live lock word shared with other threads
    // and processes, which change it atomically.
    let w = unsafe { &*(addr as *const AtomicU32) };
    let mut v = w.load(Ordering::Relaxed);
    loop {
        if v & FUTEX_TID_MASK != tid as u32 {
            return;
        }
        let died = (v & FUTEX_WAITERS) | FUTEX_OWNER_DIED;
        match w.compare_exchange(v, died, Ordering::SeqCst, Ordering::Relaxed) {
            Ok(_) => break,
            Err(now) => v = now,
        }
    }
    if v & FUTEX_WAITERS != 0 {
        // A shared (not PRIVATE) wake, as the kernel's: it reaches glibc's
        // waits in other processes and in native threads (a coroutine's
        // wait for a robust mutex is glibc's trylock between naps).
        // SAFETY: FUTEX_WAKE of one waiter on a valid word.
        unsafe { crate::sys::real::syscall!(libc::SYS_futex, addr, libc::FUTEX_WAKE, 1) };
    }
}
