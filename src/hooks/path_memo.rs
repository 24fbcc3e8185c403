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
//!
//! Cost: Apache asks about 8 paths per request, so the memo is kept cheap
//! (it was 3% of an Apache child's CPU with a byte-by-byte hash, a fine
//! clock read per question and a thread-local access per lookup):
//!
//! - time is CLOCK_MONOTONIC_COARSE, a vDSO read of the last tick with no
//!   TSC read, taken once per `key` and carried in the `Key`. The 10 ms of
//!   `REGULAR_TTL_NS` are therefore 10 ms plus up to one tick (1-4 ms);
//! - the hash reads the path 8 bytes at a time (within the page, see
//!   above), finding the NUL and the slashes with bit tricks;
//! - `key` looks up the path's and its parent's entries in the same
//!   thread-local access; the `Key` answers the questions from that copy.

use std::cell::RefCell;
use std::ffi::{c_char, c_int};

use crate::sched::waitdesc::coarse_now_ns;

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

impl Memo {
    fn entry(&self, key: u64) -> Entry {
        let e = self.entries[key as usize % ENTRIES];
        if e.key == key {
            e
        } else {
            Entry::default()
        }
    }
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

/// A path's identity in the memo (a hash of dirfd and the path, and of
/// dirfd and the path up to its last component, for walks through it),
/// with what the memo knew of both when the key was made.
#[derive(Clone, Copy)]
pub(crate) struct Key {
    path: u64,
    /// When the key was made (coarse clock).
    now: u64,
    /// The path's entry then (zeroes: none).
    seen: Entry,
    /// When the parent was last found to be a regular file (0: never).
    parent_regular_at: u64,
}

const K1: u64 = 0x9e37_79b9_7f4a_7c15;
const K2: u64 = 0xd6e8_feb8_6659_fd93;
const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const SLASHES: u64 = 0x2f2f_2f2f_2f2f_2f2f;

/// Multiplies and folds the 128-bit product: every input bit reaches
/// every output bit.
#[inline]
fn fold(x: u64, k: u64) -> u64 {
    let m = (x as u128).wrapping_mul(k as u128);
    (m as u64) ^ ((m >> 64) as u64)
}

/// 0x80 in each byte of `x` that is zero, 0 elsewhere (exact, no borrow
/// from one byte into the next).
#[inline]
fn zero_bytes(x: u64) -> u64 {
    !(((x & LOW7) + LOW7) | x | LOW7)
}

/// The first `n` bytes (0-7) of a little-endian word.
#[inline]
fn first_bytes(w: u64, n: usize) -> u64 {
    if n == 0 {
        0
    } else {
        w & (u64::MAX >> (64 - 8 * n))
    }
}

/// The hash of a prefix of `len` bytes: `h` covers its whole words, `tail`
/// holds the rest (its first `len % 8` bytes, zero above).
#[inline]
fn finish(h: u64, tail: u64, len: usize) -> u64 {
    fold(fold(h ^ tail, K1) ^ len as u64, K2)
}

/// The word at `addr`, when fewer than 8 bytes are left before `end`: the
/// bytes there, then 0xff (neither NUL nor '/') up to 8.
///
/// # Safety
/// `addr..end` is readable.
unsafe fn short_word(addr: usize, end: usize) -> u64 {
    let mut b = [0xffu8; 8];
    for (i, d) in b.iter_mut().enumerate().take(end - addr) {
        // SAFETY: below `end`, per the contract.
        *d = unsafe { *((addr + i) as *const u8) };
    }
    u64::from_le_bytes(b)
}

/// Hashes the NUL-terminated string at `start`, reading no further than
/// `end`: (hash of the string, hash of it up to the last '/' that ends a
/// component), or None if no NUL comes before `end`.
///
/// # Safety
/// `start..end` is readable.
unsafe fn hash_path(seed: u64, start: usize, end: usize) -> Option<(u64, Option<u64>)> {
    let mut h = seed;
    let mut at_slash = None;
    // 0x80 in byte 0 when the byte before the current word is a '/' (or
    // is before the start: a leading '/' ends no component).
    let mut carry = 0x80u64;
    let mut off = 0usize;
    while start + off < end {
        let addr = start + off;
        let full = end - addr >= 8;
        let w = if full {
            // SAFETY: 8 bytes below `end`, per the contract.
            unsafe { (addr as *const u64).read_unaligned() }
        } else {
            // SAFETY: per the contract.
            unsafe { short_word(addr, end) }
        };
        let zeros = zero_bytes(w);
        let nul = (zeros != 0).then(|| zeros.trailing_zeros() as usize / 8);
        let mut slashes = zero_bytes(w ^ SLASHES);
        if let Some(n) = nul {
            slashes = first_bytes(slashes, n);
        }
        // A '/' right after a '/' ends no component.
        let ends = slashes & !((slashes << 8) | carry);
        if ends != 0 {
            let j = (63 - ends.leading_zeros() as usize) / 8;
            at_slash = Some(finish(h, first_bytes(w, j), off + j));
        }
        if let Some(n) = nul {
            return Some((finish(h, first_bytes(w, n), off + n), at_slash));
        }
        if !full {
            return None; // the bytes up to `end` hold no NUL
        }
        carry = (slashes >> 56) & 0x80;
        h = fold(h ^ w, K1);
        off += 8;
    }
    None
}

/// The key of `path`, if the memo may read it now (see the top comment).
pub(crate) fn key(dirfd: c_int, path: *const c_char) -> Option<Key> {
    let start = path as usize;
    let page = start & !(PAGE - 1);
    let now = coarse_now_ns();
    MEMO.with(|m| {
        let m = m.borrow();
        let readable = m
            .pages
            .iter()
            .any(|&(p, at)| p == page && p != 0 && now.wrapping_sub(at) < CACHED_TTL_NS);
        if !readable {
            return None;
        }
        // SAFETY: `start..page + PAGE` lies in a page the kernel read a
        // path from a moment ago (checked above).
        let (path, parent) = unsafe { hash_path(fold(dirfd as u64, K2), start, page + PAGE) }?;
        Some(Key {
            path,
            now,
            seen: m.entry(path),
            parent_regular_at: parent.map_or(0, |p| m.entry(p).regular_at),
        })
    })
}

/// The kernel has just read `path` without a fault: its page may be read.
pub(crate) fn path_was_read(path: *const c_char) {
    let page = path as usize & !(PAGE - 1);
    let now = coarse_now_ns();
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

/// `at` (0: never) lies less than `ttl` before `now`.
fn within(at: u64, now: u64, ttl: u64) -> bool {
    at != 0 && now.saturating_sub(at) < ttl
}

impl Key {
    /// The path was found in the dentry cache.
    pub(crate) fn note_cached(self) {
        let now = self.now;
        update(self.path, |e| e.cached_at = now);
    }

    /// The path (symlinks followed) is a regular file, found cached.
    pub(crate) fn note_regular(self) {
        let now = self.now;
        update(self.path, |e| {
            e.cached_at = now;
            e.regular_at = now;
        });
    }

    /// Found in the dentry cache less than a second ago.
    pub(crate) fn cached_recently(self) -> bool {
        within(self.seen.cached_at, self.now, CACHED_TTL_NS)
    }

    /// Found to be a regular file less than 10 ms ago.
    pub(crate) fn regular_recently(self) -> bool {
        within(self.seen.regular_at, self.now, REGULAR_TTL_NS)
    }

    /// The path up to its last component was a regular file a moment ago:
    /// a walk through it fails at that component.
    pub(crate) fn parent_regular_recently(self) -> bool {
        within(self.parent_regular_at, self.now, CACHED_TTL_NS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy of a path in a 64-byte aligned buffer, which never crosses
    /// a page: `key` reads no further than the page `path_was_read` saw,
    /// and a literal in .rodata may straddle two (where depends on the
    /// build: `cached_is_not_regular` failed after unrelated changes).
    #[repr(C, align(64))]
    struct OnePage([u8; 64]);

    impl OnePage {
        fn ptr(&self) -> *const c_char {
            self.0.as_ptr().cast()
        }
    }

    fn in_one_page(s: &std::ffi::CStr) -> Box<OnePage> {
        let mut b = Box::new(OnePage([0; 64]));
        let bytes = s.to_bytes_with_nul();
        b.0[..bytes.len()].copy_from_slice(bytes);
        b
    }

    #[test]
    fn unread_pages_are_not_read() {
        let p = in_one_page(c"/srv/www/index.html");
        assert!(key(libc::AT_FDCWD, p.ptr()).is_none());
        path_was_read(p.ptr());
        assert!(key(libc::AT_FDCWD, p.ptr()).is_some());
    }

    #[test]
    fn parent_key_is_the_files_key() {
        let file = in_one_page(c"/srv/www/index.html");
        let walk = in_one_page(c"/srv/www/index.html/.htaccess");
        let walk2 = in_one_page(c"/srv/www/index.html//.htaccess");
        for p in [&file, &walk, &walk2] {
            path_was_read(p.ptr());
        }
        let f = key(libc::AT_FDCWD, file.ptr()).unwrap();
        let w = key(libc::AT_FDCWD, walk.ptr()).unwrap();
        assert!(!w.parent_regular_recently());
        f.note_regular();
        // A key answers from what the memo knew when it was made.
        assert!(!w.parent_regular_recently());
        let w = key(libc::AT_FDCWD, walk.ptr()).unwrap();
        let w2 = key(libc::AT_FDCWD, walk2.ptr()).unwrap();
        assert!(w.parent_regular_recently() && w2.parent_regular_recently());
        let f = key(libc::AT_FDCWD, file.ptr()).unwrap();
        assert!(f.regular_recently() && f.cached_recently());
        // Another dirfd is another path.
        let other = key(3, file.ptr()).unwrap();
        assert!(!other.cached_recently());
    }

    #[test]
    fn cached_is_not_regular() {
        let p = in_one_page(c"/srv/www/a-directory");
        path_was_read(p.ptr());
        key(libc::AT_FDCWD, p.ptr()).unwrap().note_cached();
        let k = key(libc::AT_FDCWD, p.ptr()).unwrap();
        assert!(k.cached_recently());
        assert!(!k.regular_recently());
    }

    /// What `hash_path` must find, byte by byte: the length of the string,
    /// and where its last component-ending '/' is.
    fn reference(s: &[u8]) -> (usize, Option<usize>) {
        let mut at = None;
        for i in 1..s.len() {
            if s[i] == b'/' && s[i - 1] != b'/' {
                at = Some(i);
            }
        }
        (s.len(), at)
    }

    /// Hashes `s` placed at `off` in a page-sized buffer that ends where
    /// the reading must stop.
    fn hash_at(buf: &mut [u8; PAGE], off: usize, s: &[u8]) -> Option<(u64, Option<u64>)> {
        buf.fill(b'x');
        buf[off..off + s.len()].copy_from_slice(s);
        if off + s.len() < PAGE {
            buf[off + s.len()] = 0;
        }
        let start = buf.as_ptr() as usize + off;
        // SAFETY: the buffer is readable up to its end.
        unsafe { hash_path(7, start, buf.as_ptr() as usize + PAGE) }
    }

    #[test]
    fn word_hash_agrees_with_the_bytes() {
        let paths: [&[u8]; 9] = [
            b"/",
            b"a",
            b"/tmp/corun-test.AbCdEf/servers/htdocs/index.html",
            b"/tmp/corun-test.AbCdEf/servers/htdocs/index.html/.htaccess",
            b"/tmp//x///y.html//.htaccess",
            b"rel/ative/pa/th/",
            b"12345678/1234567/123456789/",
            b"////////",
            b"abcdefg/hijklmno/pqrstuvw/xyz0123/456789ab",
        ];
        let mut buf = Box::new([0u8; PAGE]);
        for p in paths {
            let (len, slash) = reference(p);
            let mut seen = None;
            // Every alignment, and placements that end at or near the end
            // of the readable bytes.
            let offs = (0..16).chain((PAGE - len - 9)..(PAGE - len));
            for off in offs {
                let (h, parent) = hash_at(&mut buf, off, p).expect("NUL in reach");
                if let Some(s) = seen {
                    assert_eq!(s, (h, parent), "{:?} at {off}", std::str::from_utf8(p));
                }
                seen = Some((h, parent));
                // The parent's key is the key of the path up to that '/'.
                match slash {
                    Some(j) => assert_eq!(parent, Some(hash_at(&mut buf, off, &p[..j]).unwrap().0)),
                    None => assert_eq!(parent, None),
                }
            }
            // No NUL before the end: no key.
            assert!(hash_at(&mut buf, PAGE - len, p).is_none());
        }
        // Different paths, different keys.
        let a = hash_at(&mut buf, 3, b"/srv/a.html").unwrap().0;
        let b = hash_at(&mut buf, 3, b"/srv/b.html").unwrap().0;
        let c = hash_at(&mut buf, 3, b"/srv/a.htm").unwrap().0;
        assert!(a != b && a != c && b != c);
    }
}
