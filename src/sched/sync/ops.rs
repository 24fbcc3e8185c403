//! The futex commands beyond wait and wake, on the one table of
//! `sched::sync`: FUTEX_REQUEUE (`requeue_parked`) and FUTEX_WAKE_OP
//! (`wake_two`), for the coroutines in the table, and FUTEX_WAITV
//! (`park_on_any`); `hooks::syscall` adds the kernel's part for native
//! threads and other processes.
//!
//! The first two hold two buckets' locks at once, taken in table order
//! (`lock_pair`), so two such calls on the same two words cannot deadlock.
//! A FUTEX_WAITV waiter has one slot per word, all with the same park
//! token: the first wake to reach any of them resumes it (later wakes pass
//! over its other slots: it is no longer asleep); on resuming it takes
//! them back and reports the lowest index whose slot a wake took, as the
//! kernel does.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::MutexGuard;

use super::{
    any_parked, bucket, lock, lock_with_room, park, wake_parked, Batch, Deadline, Slot, WaitResult,
    Woken, BATCH, MATCH_ANY, PARKED,
};

/// At most this many words in one FUTEX_WAITV (the kernel's limit).
pub const WAITV_MAX: usize = 128;

/// Locks the buckets of `a` and `b` in table order (one lock when they
/// share a bucket: the second guard is then None).
fn lock_pair(
    a: usize,
    b: usize,
) -> (
    MutexGuard<'static, Vec<Slot>>,
    Option<MutexGuard<'static, Vec<Slot>>>,
) {
    let (ba, bb) = (bucket(a), bucket(b));
    if std::ptr::eq(ba, bb) {
        return (lock(ba), None);
    }
    if (ba as *const _ as usize) < (bb as *const _ as usize) {
        let ga = lock(ba);
        (ga, Some(lock(bb)))
    } else {
        let gb = lock(bb);
        (lock(ba), Some(gb))
    }
}

/// FUTEX_REQUEUE for the coroutines: if any sleeps on `from`, then under
/// the locks of both words' buckets and if `check()` holds (the CMP of
/// FUTEX_CMP_REQUEUE), wakes up to `n_wake` of them and moves up to
/// `n_move` more to `to`. None: `check()` failed. Some((0, 0)) also when
/// no coroutine sleeps on `from` (the kernel then has the whole call).
pub fn requeue_parked(
    from: usize,
    to: usize,
    n_wake: usize,
    n_move: usize,
    check: impl Fn() -> bool,
) -> Option<(usize, usize)> {
    if !any_parked() {
        return Some((0, 0));
    }
    let mut batch = Batch::new();
    let (mut woken, mut moved) = (0, 0);
    let mut checked = false;
    loop {
        // Room for the next moves in `to`'s bucket, made with no lock held.
        let want = n_move.saturating_sub(moved).min(BATCH);
        if want > 0 {
            drop(lock_with_room(bucket(to), want));
        }
        let (mut g1, mut g2) = lock_pair(from, to);
        if !checked {
            if !g1.iter().any(|s| s.addr == from) {
                return Some((0, 0));
            }
            if !check() {
                return None;
            }
            checked = true;
        }
        woken += batch.take(&mut g1, from, MATCH_ANY, n_wake - woken);
        // A full batch may have left sleepers to wake: wake it, come back.
        let mut again = batch.full();
        if !again {
            // Move the next sleepers (oldest first) while `to`'s bucket has room.
            let mut i = 0;
            while i < g1.len() && moved < n_move {
                if g1[i].addr != from || !g1[i].waiter.is_live() {
                    i += 1;
                    continue;
                }
                match g2.as_mut() {
                    None => {
                        // Same bucket: the slot stays, under its new word.
                        g1[i].addr = to;
                        // SAFETY: see `Slot`; we hold the slot's bucket lock.
                        unsafe { (*g1[i].at).store(to, Ordering::Release) };
                        i += 1;
                    }
                    Some(g2) if g2.len() < g2.capacity() => {
                        let mut s = g1.remove(i);
                        s.addr = to;
                        // SAFETY: as above; we hold both buckets' locks.
                        unsafe { (*s.at).store(to, Ordering::Release) };
                        g2.push(s);
                    }
                    Some(_) => {
                        again = true;
                        break;
                    }
                }
                moved += 1;
            }
        }
        drop(g2);
        drop(g1);
        batch.wake();
        if !again {
            return Some((woken, moved));
        }
    }
}

/// FUTEX_WAKE_OP for the coroutines. Under the locks of both words'
/// buckets, `op(parked)` runs once, told whether any coroutine sleeps on
/// `a1` or `a2`. It returns Err(r) when it made the whole call itself (no
/// coroutine concerned), or Ok(cond): then up to `n1` coroutines of `a1`
/// and, if `cond`, up to `n2` of `a2` are woken. Returns the counts woken
/// and `cond`.
pub fn wake_two<R>(
    a1: usize,
    n1: usize,
    a2: usize,
    n2: usize,
    op: impl FnOnce(bool) -> Result<bool, R>,
) -> Result<(usize, usize, bool), R> {
    let mut batch = Batch::new();
    let (mut g1, g2) = lock_pair(a1, a2);
    let parked = any_parked() && {
        let on = |g: &Vec<Slot>| g.iter().any(|s| s.addr == a1 || s.addr == a2);
        on(&g1) || g2.as_deref().is_some_and(on)
    };
    let cond = op(parked)?;
    // `g1` is a1's bucket (see `lock_pair`).
    let mut k1 = batch.take(&mut g1, a1, MATCH_ANY, n1);
    let more1 = batch.full();
    drop(g2);
    drop(g1);
    batch.wake();
    if more1 {
        k1 += wake_parked(a1, n1 - k1, MATCH_ANY);
    }
    // Everyone on a2 who saw the old value queued before `op` changed it.
    let k2 = if cond {
        wake_parked(a2, n2, MATCH_ANY)
    } else {
        0
    };
    Ok((k1, k2, cond))
}

/// FUTEX_WAITV for the calling coroutine: parks while every word holds its
/// value (each compared under its bucket's lock, in order) until a wake of
/// any of them, or the deadline. Ok(i): the lowest index a wake took.
/// Err(Mismatch): a word differed (nobody woke another first);
/// Err(TimedOut); Err(Woken): resumed with no slot taken (spurious: the
/// caller starts again). At most `WAITV_MAX` words.
pub fn park_on_any(
    words: &[(&AtomicU32, u32)],
    deadline: Option<Deadline>,
) -> Result<usize, WaitResult> {
    let words = &words[..words.len().min(WAITV_MAX)];
    // Each slot's own record of its word (see `Slot::at`).
    let ats: [AtomicUsize; WAITV_MAX] = [const { AtomicUsize::new(0) }; WAITV_MAX];
    for (at, (w, _)) in ats.iter().zip(words) {
        at.store(w.as_ptr() as usize, Ordering::Relaxed);
    }
    PARKED.fetch_add(1, Ordering::SeqCst);
    if let Some((w, _)) = words.first() {
        crate::sched::waitdesc::describe_default(
            crate::sched::waitdesc::Cause::Futex,
            w.as_ptr() as u64,
        );
    }
    let mut queued = 0;
    let woken = park(
        |w| {
            for (i, (word, val)) in words.iter().enumerate() {
                let addr = word.as_ptr() as usize;
                let mut g = lock_with_room(bucket(addr), 1);
                if word.load(Ordering::SeqCst) != *val {
                    return false;
                }
                g.push(Slot {
                    addr,
                    bits: MATCH_ANY,
                    at: &ats[i],
                    waiter: w.clone(),
                });
                queued = i + 1;
            }
            true
        },
        deadline.map(Deadline::monotonic),
    );
    // Take back every slot still queued; the lowest one missing was woken.
    let mut taken = None;
    for (i, at) in ats[..queued].iter().enumerate() {
        let mut cur = words[i].0.as_ptr() as usize;
        loop {
            let mut g = lock(bucket(cur));
            if let Some(k) = g
                .iter()
                .position(|s| s.addr == cur && std::ptr::eq(s.at, at))
            {
                let slot = g.remove(k);
                drop(g);
                drop(slot);
                break;
            }
            let next = at.load(Ordering::Acquire);
            drop(g);
            if next == cur {
                taken.get_or_insert(i);
                break;
            }
            cur = next;
        }
    }
    PARKED.fetch_sub(1, Ordering::SeqCst);
    match (taken, woken) {
        (Some(i), _) => Ok(i),
        (None, Woken::NotParked) => Err(WaitResult::Mismatch),
        (None, Woken::TimedOut) => Err(WaitResult::TimedOut),
        // A signal handler ran (it ran in the park): start again.
        (None, Woken::Event | Woken::Signal) => Err(WaitResult::Woken),
    }
}
