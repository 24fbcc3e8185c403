//! Storage for the coroutines' own TLS blocks (`tls.rs`): slots of
//! mappings of ours rather than malloc's chunks.
//!
//! # Why
//!
//! A block is the static TLS (each module's block just below the thread
//! pointer, then, further down, the reserve ld.so keeps for libraries
//! loaded later) and glibc's thread descriptor above it: 4.7 KiB with
//! libcorun preloaded. A coroutine writes about 3 KiB of it: its modules'
//! TLS images (libcorun's 504 bytes, libc's 144), the descriptor's header,
//! thread-list links, tid, robust-list head and rseq area (up to ~2.4 KiB
//! above the thread pointer). `_dl_allocate_tls(NULL)` takes the block from
//! malloc and clears the whole descriptor: blocks lie end to end in the
//! heap, and every page of them is resident, 4.8 KiB a coroutine (an idle
//! keep-alive connection of threaded_http cost 22.2 KiB of RSS, 17.2
//! with CORUN_TLS=worker).
//!
//! Here each block gets a slot of fresh zero pages (what glibc's clearing
//! would leave) and `_dl_allocate_tls(tp)` only makes the DTV and copies
//! the modules' images. The thread pointer sits `TP_IN_PAGE` bytes into a
//! page, so that what a coroutine writes falls in that one page; the
//! reserve below and the rest of the descriptor above stay untouched, and
//! cost nothing until something writes them (a library loaded later with
//! static TLS, the resolver's state). A slot spans the whole static TLS
//! size on both sides of the thread pointer, whatever the descriptor's
//! size, so nothing glibc places there can reach another block.
//!
//! Slots are never unmapped (as stacks' slabs are not): a block that ends
//! goes back to `tls.rs`'s pool; one the pool cannot keep is cleared
//! (`madvise`) and its slot handed out again.

use std::ffi::c_void;
use std::sync::OnceLock;

/// Where the thread pointer sits in its page: room below it for the
/// modules' TLS, above it for the descriptor's fields a coroutine writes.
const TP_IN_PAGE: usize = 1024;
/// Slots mapped at once.
const SLOTS_PER_MAP: usize = 256;

/// How slots are cut.
#[derive(Clone, Copy)]
struct Layout {
    /// Bytes of one slot (whole pages).
    slot: usize,
    /// Offset of the thread pointer in its slot.
    tp_off: usize,
}

/// Slots handed out so far come from `next..end` of the last mapping;
/// `free` holds cleared slots (their thread pointers).
struct Slots {
    next: usize,
    end: usize,
    free: Vec<usize>,
}

static LAYOUT: OnceLock<Option<Layout>> = OnceLock::new();
static SLOTS: crate::sys::ForkMutex<Slots> = crate::sys::ForkMutex::new(Slots {
    next: 0,
    end: 0,
    free: Vec::new(),
});

type StaticInfo = unsafe extern "C" fn(*mut usize, *mut usize);

fn layout() -> Option<Layout> {
    *LAYOUT.get_or_init(|| {
        // SAFETY: a NUL-terminated name; RTLD_DEFAULT searches every object.
        let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"_dl_get_tls_static_info".as_ptr()) };
        if f.is_null() {
            return None;
        }
        // SAFETY: ld.so's `void _dl_get_tls_static_info(size_t *, size_t *)`.
        let f = unsafe { std::mem::transmute::<*mut c_void, StaticInfo>(f) };
        let (mut size, mut align) = (0usize, 0usize);
        // SAFETY: two out-parameters.
        unsafe { f(&mut size, &mut align) };
        let page = crate::sys::page_size();
        if size == 0 || align == 0 || !TP_IN_PAGE.is_multiple_of(align) {
            return None;
        }
        // The whole static size below and above: the static TLS lies
        // below, the descriptor (smaller than the whole) above.
        let tp_off = size.next_multiple_of(page) + TP_IN_PAGE;
        let slot = (tp_off + size).next_multiple_of(page);
        Some(Layout { slot, tp_off })
    })
}

/// Whether blocks come from here (decided once; if not, from malloc).
pub fn in_use() -> bool {
    layout().is_some()
}

/// The thread pointer of a zeroed slot, or None if none could be mapped.
pub fn take() -> Option<usize> {
    let l = layout()?;
    let mut s = crate::sched::fdtable::lock(SLOTS.get());
    if let Some(tp) = s.free.pop() {
        return Some(tp);
    }
    if s.next == s.end {
        let len = l.slot * SLOTS_PER_MAP;
        // SAFETY: a fresh private anonymous mapping, nothing else at the
        // address the kernel picks.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        s.next = p as usize;
        s.end = p as usize + len;
    }
    let base = s.next;
    s.next += l.slot;
    Some(base + l.tp_off)
}

/// Takes back the slot of `tp` (a block from `take`, its DTV freed): its
/// pages are dropped, and it is handed out again zeroed.
pub fn give_back(tp: usize) {
    let Some(l) = layout() else { return };
    let base = tp - l.tp_off;
    // SAFETY: the slot is ours and nobody uses it any more; its range
    // stays mapped and reads back as zeroes.
    unsafe { libc::madvise(base as *mut c_void, l.slot, libc::MADV_DONTNEED) };
    crate::sched::fdtable::lock(SLOTS.get()).free.push(tp);
}

/// In a forked child: the lock may have been held by another thread at
/// the fork.
pub fn after_fork_child() {
    SLOTS.unlock_after_fork(|| Slots {
        next: 0,
        end: 0,
        free: Vec::new(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_hold_the_static_size_on_both_sides() {
        let Some(l) = layout() else { return };
        let page = crate::sys::page_size();
        assert_eq!(l.tp_off % page, TP_IN_PAGE);
        assert!(l.slot.is_multiple_of(page));
        let a = take().unwrap();
        let b = take().unwrap();
        assert_eq!(b - a, l.slot);
        // Fresh zeroes, writable at the thread pointer.
        // SAFETY: our slot's thread pointer word.
        unsafe {
            assert_eq!(*(a as *const usize), 0);
            *(a as *mut usize) = 7;
        }
        give_back(a);
        assert_eq!(take(), Some(a));
        // SAFETY: as above; cleared by give_back.
        assert_eq!(unsafe { *(a as *const usize) }, 0);
        give_back(a);
        give_back(b);
    }
}
