//! Paths this thread found in the kernel's caches a moment ago.
//!
//! `cached.rs` answers `open` and the `stat` family from the dentry cache
//! (`openat2` with RESOLVE_CACHED) instead of handing them to the blocking
//! pool. That check has a price in syscalls. Per request of a static file,
//! Apache (strace -c, one child) made natively 12.7 syscalls and under
//! corun 17.5:
//!
//! - `stat(file)`: an O_PATH open, the stat on that fd, a close (3, not 1);
//! - `open(file)`: the open with O_NONBLOCK, an fstat to see a regular file,
//!   an F_SETFL to take O_NONBLOCK off again (3, not 1);
//! - `open("file/.htaccess")`: the cached walk answers EAGAIN through a
//!   non-directory, and `parent_answer` asks about "file/" (2, not 1).
//!
//! A thread that asks about the same path again within a moment asks about
//! something that is still cached, as a rule. This memo remembers, per
//! thread (corun's thread-locals are per coroutine, docs/ARCHITECTURE.md
//! §9), the last few paths found cached, and those found to be regular
//! files:
//!
//! - a path found cached less than `CACHED_TTL_NS` ago is stat'ed directly,
//!   one syscall. Should its dentries have been evicted in that second, the
//!   stat reads the disk from the worker: a stall of one disk read, never a
//!   wait on something that may not come (a FIFO, a lock);
//! - a path found to be a regular file less than `REGULAR_TTL_NS` ago is
//!   opened without the O_NONBLOCK dance, still with RESOLVE_CACHED (a true
//!   miss still goes to the pool). Should another process put a FIFO or a
//!   device at that path within those 10 ms, the open would block the
//!   worker: the window is kept that short for that reason;
//! - a walk through a path known as a regular file asks about the parent
//!   first ("file/": ENOTDIR), one syscall; the kernel gives the answer.
//!
//! Reading the program's path before the kernel has: a bad pointer must
//! give EFAULT, as natively, not a fault in corun. The memo reads a path
//! only inside a page the kernel read a path from (successfully) less than
//! `CACHED_TTL_NS` ago, and only up to that page's end. A page the program
//! unmapped in that time and then passed a pointer into would fault; no
//! program gets EFAULT on purpose from a page it used for a path a moment
//! before.

use std::cell::RefCell;
use std::ffi::{c_char, c_int};

use crate::sys::now_ns;

/// How long a path found in the dentry cache counts as cached.
const CACHED_TTL_NS: u64 = 1_000_000_000;
/// How long a path found to be a regular file counts as one (see above).
const REGULAR_TTL_NS: u64 = 10_000_000;
const ENTRIES: usize = 8;
const PAGES: usize = 4;
const PAGE: usize = 4096;

#[derive(Clone, Copy, Default)]
struct Entry {
    key: u64,
    cached_at: u64,
    regular_at: u64,
}

struct Memo {
    entries: [Entry; ENTRIES],
    /// Pages the kernel read a path from, and when.
    pages: [(usize, u64); PAGES],
    next_page: usize,
}

std::thread_local! {
    static MEMO: RefCell<Memo> = const {
        RefCell::new(Memo {
            entries: [Entry { key: 0, cached_at: 0, regular_at: 0 }; ENTRIES],
            pages: [(0, 0); PAGES],
            next_page: 0,
        })
    };
}

/// A path's identity in the memo: a hash of dirfd and the path, and of
/// dirfd and the path up to its last component (for walks through it).
#[derive(Clone, Copy)]
pub(crate) struct Key {
    path: u64,
    parent: Option<u64>,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv(mut h: u64, b: u8) -> u64 {
    h ^= b as u64;
    h.wrapping_mul(FNV_PRIME)
}

fn seed(dirfd: c_int) -> u64 {
    dirfd
        .to_le_bytes()
        .iter()
        .fold(FNV_OFFSET, |h, &b| fnv(h, b))
}

/// The key of `path`, if the memo may read it now (see the top comment).
pub(crate) fn key(dirfd: c_int, path: *const c_char) -> Option<Key> {
    let start = path as usize;
    let page = start & !(PAGE - 1);
    let now = now_ns();
    let readable = MEMO.with(|m| {
        m.borrow()
            .pages
            .iter()
            .any(|&(p, at)| p == page && p != 0 && now.wrapping_sub(at) < CACHED_TTL_NS)
    });
    if !readable {
        return None;
    }
    let mut h = seed(dirfd);
    // The hash as it was at the last '/' that ends a component.
    let mut at_slash = None;
    let mut prev_slash = false;
    for addr in start..page + PAGE {
        // SAFETY: `addr` lies in a page the kernel read a path from a
        // moment ago (checked above), below that page's end.
        let c = unsafe { *(addr as *const u8) };
        if c == 0 {
            return Some(Key {
                path: h,
                parent: at_slash,
            });
        }
        if c == b'/' && !prev_slash && addr != start {
            at_slash = Some(h);
        }
        prev_slash = c == b'/';
        h = fnv(h, c);
    }
    None // runs past the page: not ours to read
}

/// The kernel has just read `path` without a fault: its page may be read.
pub(crate) fn path_was_read(path: *const c_char) {
    let page = path as usize & !(PAGE - 1);
    let now = now_ns();
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if let Some(slot) = m.pages.iter_mut().find(|(p, _)| *p == page) {
            slot.1 = now;
            return;
        }
        let i = m.next_page;
        m.pages[i] = (page, now);
        m.next_page = (i + 1) % PAGES;
    });
}

fn update(key: u64, f: impl FnOnce(&mut Entry)) {
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        let e = &mut m.entries[key as usize % ENTRIES];
        if e.key != key {
            *e = Entry {
                key,
                ..Entry::default()
            };
        }
        f(e);
    });
}

fn entry(key: u64) -> Option<Entry> {
    MEMO.with(|m| {
        let e = m.borrow().entries[key as usize % ENTRIES];
        (e.key == key).then_some(e)
    })
}

impl Key {
    /// The path was found in the dentry cache.
    pub(crate) fn note_cached(self) {
        let now = now_ns();
        update(self.path, |e| e.cached_at = now);
    }

    /// The path (symlinks followed) is a regular file, found cached.
    pub(crate) fn note_regular(self) {
        let now = now_ns();
        update(self.path, |e| {
            e.cached_at = now;
            e.regular_at = now;
        });
    }

    /// Found in the dentry cache less than a second ago.
    pub(crate) fn cached_recently(self) -> bool {
        entry(self.path).is_some_and(|e| {
            e.cached_at != 0 && now_ns().saturating_sub(e.cached_at) < CACHED_TTL_NS
        })
    }

    /// Found to be a regular file less than 10 ms ago.
    pub(crate) fn regular_recently(self) -> bool {
        entry(self.path).is_some_and(|e| {
            e.regular_at != 0 && now_ns().saturating_sub(e.regular_at) < REGULAR_TTL_NS
        })
    }

    /// The path up to its last component was a regular file a moment ago:
    /// a walk through it fails at that component.
    pub(crate) fn parent_regular_recently(self) -> bool {
        self.parent.is_some_and(|p| {
            entry(p).is_some_and(|e| {
                e.regular_at != 0 && now_ns().saturating_sub(e.regular_at) < CACHED_TTL_NS
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unread_pages_are_not_read() {
        let p = c"/srv/www/index.html";
        assert!(key(libc::AT_FDCWD, p.as_ptr()).is_none());
        path_was_read(p.as_ptr());
        assert!(key(libc::AT_FDCWD, p.as_ptr()).is_some());
    }

    #[test]
    fn parent_key_is_the_files_key() {
        let file = c"/srv/www/index.html";
        let walk = c"/srv/www/index.html/.htaccess";
        let walk2 = c"/srv/www/index.html//.htaccess";
        for p in [file, walk, walk2] {
            path_was_read(p.as_ptr());
        }
        let f = key(libc::AT_FDCWD, file.as_ptr()).unwrap();
        let w = key(libc::AT_FDCWD, walk.as_ptr()).unwrap();
        let w2 = key(libc::AT_FDCWD, walk2.as_ptr()).unwrap();
        assert_eq!(w.parent, Some(f.path));
        assert_eq!(w2.parent, Some(f.path));
        assert!(!w.parent_regular_recently());
        f.note_regular();
        assert!(w.parent_regular_recently() && w2.parent_regular_recently());
        assert!(f.regular_recently() && f.cached_recently());
        // Another dirfd is another path.
        let other = key(3, file.as_ptr()).unwrap();
        assert!(!other.cached_recently());
    }

    #[test]
    fn cached_is_not_regular() {
        let p = c"/srv/www/a-directory";
        path_was_read(p.as_ptr());
        let k = key(libc::AT_FDCWD, p.as_ptr()).unwrap();
        k.note_cached();
        assert!(k.cached_recently());
        assert!(!k.regular_recently());
    }
}
