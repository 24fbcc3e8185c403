//! Files kept for calls parked on an fd that `dup2`/`dup3` replaces
//! (docs/ARCHITECTURE.md §5.10).
//!
//! Natively a thread blocked in `read(5)` holds a reference to the *file*,
//! not to the number: another thread's `dup2(p[0], 5)` gives number 5 to a
//! new file and the read goes on with the old one. A coroutine parked on
//! fd 5 comes back and would retry on the number. So before a replacing
//! dup2, the hook asks `keep_for_parked`: if calls are parked on the fd,
//! the old file gets a private, close-on-exec duplicate high in the fd
//! range (where runtime fds live: the program's next `open` gets the
//! number it would natively), marked as a runtime fd (the program cannot
//! close it; `close_range` spares it). The replacement's `reset`
//! (`FdEntry::reset`) hands it to the calls parked then (`hand_over`: as
//! many claims as parked calls); each such call, woken by the generation
//! change, takes a claim (`leave`) and finishes on the kept fd; the last
//! one to let go of it closes it (`KeptFile`'s drop).
//!
//! Counting: a call enters (`enter`) after its attempt failed with EAGAIN,
//! for the generation it saw, and leaves after its park. The count is one
//! atomic word with the generation it counts for (`FdEntry::parked`):
//! `reset`, under the entry's waiter lock, bumps the generation, then
//! swaps in an empty count of the new one and hands the old count out as
//! claims; a call's increment or decrement is a compare-exchange on a
//! word of its own generation, so it lands either before that swap
//! (counted, or its share given back) or fails, and the call then sees
//! the new generation: every call counted at the replacement finds its
//! claim, and a call that entered after it does not count. Neither takes
//! the lock unless the generation moved.
//! A `close` (no kept file) hands nothing: those calls fail with EBADF.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::fdtable::{self, lock, FdEntry, Waiters};

/// A duplicate of a replaced file, held by the calls still using it.
pub struct KeptFile {
    fd: i32,
}

impl KeptFile {
    /// The fd the calls go on with.
    pub fn fd(&self) -> i32 {
        self.fd
    }

    /// Its entry (allocated when it was made).
    pub fn entry(&self) -> &'static FdEntry {
        fdtable::get(self.fd).expect("kept fds are below MAX_FD")
    }
}

impl Drop for KeptFile {
    fn drop(&mut self) {
        let e = self.entry();
        e.runtime.store(false, Ordering::Relaxed);
        fdtable::forget(self.fd);
        let gen = fdtable::generation(self.fd);
        let saved = crate::sys::errno();
        // SAFETY: raw close of the duplicate this value owns.
        unsafe { crate::sys::real::syscall!(libc::SYS_close, self.fd) };
        fdtable::forget_after_close(self.fd, gen);
        crate::sys::set_errno(saved);
    }
}

/// A kept file in the replaced fd's entry, until every call it was kept
/// for has claimed it.
pub struct Kept {
    /// The generation that was replaced.
    gen: u32,
    file: Arc<KeptFile>,
    /// Calls still to claim it (set by `hand_over`; 0 before).
    claims: u32,
}

/// `fd` is about to be replaced (dup2/dup3 onto it): if calls are parked on
/// it, keep its file for them. Best effort: without room for a duplicate
/// they fail with EBADF, as before.
pub fn keep_for_parked(fd: i32) {
    let Some(e) = fdtable::peek(fd) else { return };
    let gen = {
        let w = lock(&e.waiters);
        let gen = e.gen.load(Ordering::Acquire);
        if count_of(e.parked.load(Ordering::Acquire), gen) == 0
            || w.kept.iter().any(|k| k.gen == gen)
        {
            return;
        }
        gen
    };
    let saved = crate::sys::errno();
    let k = crate::sys::dup_high(fd, 0);
    crate::sys::set_errno(saved);
    let Some(ke) = fdtable::get(k) else { return };
    ke.reset();
    ke.policy.copy_from(&e.policy);
    ke.policy.shared.store(true, Ordering::Relaxed);
    e.policy.shared.store(true, Ordering::Relaxed);
    fdtable::mark_runtime(k, ke);
    let file = Arc::new(KeptFile { fd: k });
    let mut w = lock(&e.waiters);
    if e.gen.load(Ordering::Acquire) == gen {
        w.kept.push(Kept {
            gen,
            file,
            claims: 0,
        });
    }
    // Else the fd changed meanwhile: `file` closes as it drops (after the
    // lock: its own entry's lock is taken then).
    drop(w);
}

/// The replacement did not happen (dup2 failed): drop what
/// `keep_for_parked` kept for the current generation.
pub fn discard(fd: i32) {
    let Some(e) = fdtable::peek(fd) else { return };
    let gone: Vec<Kept> = {
        let mut w = lock(&e.waiters);
        let gen = e.gen.load(Ordering::Acquire);
        let (gone, stay) = std::mem::take(&mut w.kept)
            .into_iter()
            .partition(|k| k.gen == gen);
        w.kept = stay;
        gone
    };
    drop(gone);
}

/// Under `w`'s lock, as generation `old` ends (`FdEntry::reset`): a file
/// kept for it is owed to the calls parked now. Returns what nobody will
/// claim, to be dropped (closed) after the lock is let go.
pub(super) fn hand_over(w: &mut Waiters, e: &FdEntry, old: u32) -> Vec<Kept> {
    let word = e
        .parked
        .swap(u64::from(old.wrapping_add(1)) << 32, Ordering::AcqRel);
    let parked = count_of(word, old);
    if w.kept.is_empty() {
        return Vec::new();
    }
    for k in w.kept.iter_mut().filter(|k| k.gen == old) {
        k.claims = parked;
    }
    let (gone, stay) = std::mem::take(&mut w.kept)
        .into_iter()
        .partition(|k| k.gen == old && k.claims == 0);
    w.kept = stay;
    gone
}

/// The count of generation `gen` in a `FdEntry::parked` word (0 when the
/// word is of another generation).
fn count_of(word: u64, gen: u32) -> u32 {
    if (word >> 32) as u32 == gen {
        word as u32
    } else {
        0
    }
}

/// A call that saw generation `gen` is about to park on `e`; false if the
/// fd changed since (the caller tries again on what the number is now).
pub fn enter(e: &FdEntry, gen: u32) -> bool {
    // Before the count: from here on, resets take the lock.
    super::lone::note_fd_wait();
    // The word first, then the generation: a word of a newer generation
    // was swapped in after that generation was stored (`reset`), so the
    // check below sees it and this call does not count.
    let mut word = e.parked.load(Ordering::Acquire);
    loop {
        if e.gen.load(Ordering::Acquire) != gen {
            return false;
        }
        let next = (u64::from(gen) << 32) | u64::from(count_of(word, gen) + 1);
        match e
            .parked
            .compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => return true,
            Err(now) => word = now,
        }
    }
}

/// The call's park ended: if the fd was replaced meanwhile and its file
/// kept, the call's share of it.
pub fn leave(e: &FdEntry, gen: u32) -> Option<Arc<KeptFile>> {
    let mut word = e.parked.load(Ordering::Acquire);
    while (word >> 32) as u32 == gen {
        // Still counted in `gen`: the replacement (if any) has not handed
        // the count out yet; take this call's share back.
        let next = word - u64::from(word as u32 > 0);
        match e
            .parked
            .compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => return None,
            Err(now) => word = now,
        }
    }
    let mut w = lock(&e.waiters);
    let i = w.kept.iter().position(|k| k.gen == gen && k.claims > 0)?;
    let k = &mut w.kept[i];
    k.claims -= 1;
    let file = k.file.clone();
    if k.claims == 0 {
        // Our clone keeps it open: nothing closes under the lock.
        w.kept.swap_remove(i);
    }
    Some(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipe() -> [i32; 2] {
        let mut p = [0; 2];
        // SAFETY: a valid two-int array.
        assert_eq!(unsafe { libc::pipe(p.as_mut_ptr()) }, 0);
        p
    }

    fn is_open(fd: i32) -> bool {
        // SAFETY: F_GETFD has no memory argument.
        unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
    }

    #[test]
    fn parked_calls_share_the_kept_file_and_the_last_closes_it() {
        let a = pipe();
        let b = pipe();
        let e = fdtable::get(a[0]).unwrap();
        let g = e.gen.load(Ordering::Acquire);
        assert!(enter(e, g));
        assert!(enter(e, g));
        keep_for_parked(a[0]);
        // The real dup2 and the bookkeeping the hook does after it.
        // SAFETY: plain integers.
        assert_eq!(unsafe { crate::sys::real::dup2(b[0], a[0]) }, a[0]);
        e.reset();
        assert!(
            !enter(e, g),
            "a call of the old generation no longer enters"
        );
        let k1 = leave(e, g).expect("first claim");
        let k2 = leave(e, g).expect("second claim");
        assert!(leave(e, g).is_none(), "only the calls parked then");
        assert_eq!(k1.fd(), k2.fd());
        let kfd = k1.fd();
        assert!(fdtable::is_runtime(kfd));
        // The kept fd reads the old pipe.
        // SAFETY: valid buffers of the given sizes.
        unsafe {
            assert_eq!(libc::write(a[1], b"x".as_ptr().cast(), 1), 1);
            let mut c = 0u8;
            assert_eq!(libc::read(kfd, (&mut c as *mut u8).cast(), 1), 1);
            assert_eq!(c, b'x');
        }
        drop(k1);
        assert!(is_open(kfd));
        drop(k2);
        assert!(!is_open(kfd));
        assert!(!fdtable::is_runtime(kfd));
        for fd in [a[0], a[1], b[0], b[1]] {
            // SAFETY: our own fds.
            unsafe { libc::close(fd) };
        }
    }

    #[test]
    fn nothing_is_kept_without_parked_calls_or_on_close() {
        let a = pipe();
        let e = fdtable::get(a[0]).unwrap();
        let g = e.gen.load(Ordering::Acquire);
        keep_for_parked(a[0]);
        assert!(lock(&e.waiters).kept.is_empty());
        assert!(enter(e, g));
        // A close: nothing kept, the call gets nothing (EBADF).
        e.reset();
        assert!(leave(e, g).is_none());
        assert_eq!(count_of(e.parked.load(Ordering::Acquire), g), 0);
        // A kept file whose dup2 failed goes at once.
        let g = e.gen.load(Ordering::Acquire);
        assert!(enter(e, g));
        keep_for_parked(a[0]);
        let kfd = lock(&e.waiters).kept[0].file.fd();
        discard(a[0]);
        assert!(!is_open(kfd));
        assert_eq!(leave(e, g).map(|k| k.fd()), None);
        for fd in a {
            // SAFETY: our own fds.
            unsafe { libc::close(fd) };
        }
    }
}
