//! corun's own mutex, condition variable, semaphore and wait group
//! (`corun_mutex_t`...): the futex algorithms on words of the program's
//! memory, parked through the table of `sync` that coroutines and native
//! threads share, so one object serves both.
//!
//! Cheaper than the pthread path because nothing is decoded: a pthread
//! object under corun is glibc's layout (kind, owner, recursion count,
//! robust list, checked once against glibc), interposed at every call; here
//! a mutex is one word with the three states of Drepper's "Futexes are
//! tricky" (0 free, 1 locked, 2 locked with waiters), a short spin before
//! parking (two workers on two CPUs often hand a lock over within it), and
//! the wake-up only when someone may wait.
//!
//! Waits that may be long (condition, semaphore, wait group) are
//! cancellation points: a coroutine's cancel token ends them with
//! `Cancelled` (`token::cancel_point` before each park). One that was
//! woken as it was cancelled passes the wake on, so no signal or post is
//! lost with it. Locking a mutex is not (as with pthreads): critical
//! sections are short.

use std::sync::atomic::{AtomicI32, AtomicU32, Ordering::SeqCst};

use super::sync::{wait, wait_cancelable, wake, wake_all, Deadline, WaitResult};
use super::token;

/// Why a wait failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    TimedOut,
    Cancelled,
    /// Nothing to take (a try).
    WouldBlock,
    /// A count would overflow or go negative.
    Invalid,
}

fn until(deadline: Option<u64>) -> Option<Deadline> {
    deadline.map(Deadline::Monotonic)
}

// ------------------------------------------------------------------ mutex

/// Takes the mutex if it is free.
#[inline]
pub fn mutex_trylock(m: &AtomicU32) -> bool {
    m.compare_exchange(0, 1, SeqCst, SeqCst).is_ok()
}

/// Locks, parking (or sleeping) while another holds it, until `deadline`.
pub fn mutex_lock(m: &AtomicU32, deadline: Option<u64>) -> Result<(), Error> {
    if mutex_trylock(m) {
        return Ok(());
    }
    for _ in 0..100 {
        std::hint::spin_loop();
        if m.load(SeqCst) == 0 && mutex_trylock(m) {
            return Ok(());
        }
    }
    let mut c = m.swap(2, SeqCst);
    while c != 0 {
        if wait(m, 2, until(deadline)) == WaitResult::TimedOut {
            return Err(Error::TimedOut);
        }
        c = m.swap(2, SeqCst);
    }
    Ok(())
}

/// Unlocks; wakes one waiter if there may be one.
#[inline]
pub fn mutex_unlock(m: &AtomicU32) {
    if m.swap(0, SeqCst) == 2 {
        wake(m, 1);
    }
}

// -------------------------------------------------------------- condition

/// A condition variable: a sequence bumped by every signal, and a count
/// of waiters so a signal with nobody waiting costs no wake.
pub struct Cond<'a> {
    pub seq: &'a AtomicU32,
    pub waiters: &'a AtomicU32,
}

impl Cond<'_> {
    /// Unlocks `m`, waits for a signal, locks `m` again (also on error).
    pub fn wait(&self, m: &AtomicU32, deadline: Option<u64>) -> Result<(), Error> {
        if token::cancel_point() {
            return Err(Error::Cancelled);
        }
        let s = self.seq.load(SeqCst);
        self.waiters.fetch_add(1, SeqCst);
        mutex_unlock(m);
        let r = wait_cancelable(self.seq, s, until(deadline));
        self.waiters.fetch_sub(1, SeqCst);
        let _ = mutex_lock(m, None);
        if r == WaitResult::TimedOut {
            return Err(Error::TimedOut);
        }
        if token::cancelled() {
            // The wake may have been a signal: hand it on.
            self.signal();
            return Err(Error::Cancelled);
        }
        Ok(())
    }

    pub fn signal(&self) {
        self.seq.fetch_add(1, SeqCst);
        if self.waiters.load(SeqCst) != 0 {
            wake(self.seq, 1);
        }
    }

    pub fn broadcast(&self) {
        self.seq.fetch_add(1, SeqCst);
        if self.waiters.load(SeqCst) != 0 {
            wake_all(self.seq);
        }
    }
}

// -------------------------------------------------------------- semaphore

/// A counting semaphore.
pub struct Sem<'a> {
    pub value: &'a AtomicU32,
    pub waiters: &'a AtomicU32,
}

impl Sem<'_> {
    pub fn try_wait(&self) -> bool {
        let mut v = self.value.load(SeqCst);
        while v > 0 {
            match self.value.compare_exchange(v, v - 1, SeqCst, SeqCst) {
                Ok(_) => return true,
                Err(x) => v = x,
            }
        }
        false
    }

    /// Takes one unit, waiting for a post until `deadline`.
    pub fn wait(&self, deadline: Option<u64>) -> Result<(), Error> {
        loop {
            if self.try_wait() {
                return Ok(());
            }
            if token::cancel_point() {
                return Err(Error::Cancelled);
            }
            self.waiters.fetch_add(1, SeqCst);
            let r = wait_cancelable(self.value, 0, until(deadline));
            self.waiters.fetch_sub(1, SeqCst);
            if r == WaitResult::TimedOut {
                return if self.try_wait() {
                    Ok(())
                } else {
                    Err(Error::TimedOut)
                };
            }
            if token::cancelled() {
                if self.value.load(SeqCst) != 0 {
                    wake(self.value, 1);
                }
                return Err(Error::Cancelled);
            }
        }
    }

    /// Adds one unit; wakes a waiter if there may be one.
    pub fn post(&self) -> Result<(), Error> {
        let mut v = self.value.load(SeqCst);
        loop {
            if v == u32::MAX {
                return Err(Error::Invalid);
            }
            match self.value.compare_exchange(v, v + 1, SeqCst, SeqCst) {
                Ok(_) => break,
                Err(x) => v = x,
            }
        }
        if self.waiters.load(SeqCst) != 0 {
            wake(self.value, 1);
        }
        Ok(())
    }
}

// ------------------------------------------------------------- wait group

/// A wait group: a counter, and a generation bumped when it reaches zero
/// (what waiters sleep on).
pub struct WaitGroup<'a> {
    pub count: &'a AtomicI32,
    pub gen: &'a AtomicU32,
    pub waiters: &'a AtomicU32,
}

impl WaitGroup<'_> {
    /// Adds `delta` (negative: done); the counter may not go negative.
    pub fn add(&self, delta: i32) -> Result<(), Error> {
        let old = self.count.fetch_add(delta, SeqCst);
        let new = old.checked_add(delta);
        if new.is_none_or(|n| n < 0) {
            self.count.fetch_sub(delta, SeqCst);
            return Err(Error::Invalid);
        }
        if new == Some(0) && delta != 0 {
            self.gen.fetch_add(1, SeqCst);
            if self.waiters.load(SeqCst) != 0 {
                wake_all(self.gen);
            }
        }
        Ok(())
    }

    /// Waits until the counter is zero.
    pub fn wait(&self, deadline: Option<u64>) -> Result<(), Error> {
        loop {
            let g = self.gen.load(SeqCst);
            if self.count.load(SeqCst) == 0 {
                return Ok(());
            }
            if token::cancel_point() {
                return Err(Error::Cancelled);
            }
            self.waiters.fetch_add(1, SeqCst);
            let r = if self.count.load(SeqCst) == 0 {
                WaitResult::Mismatch
            } else {
                wait_cancelable(self.gen, g, until(deadline))
            };
            self.waiters.fetch_sub(1, SeqCst);
            if r == WaitResult::TimedOut && self.count.load(SeqCst) != 0 {
                return Err(Error::TimedOut);
            }
            if token::cancelled() && self.count.load(SeqCst) != 0 {
                return Err(Error::Cancelled);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::thread;

    fn ms(n: u64) -> Option<u64> {
        Some(crate::sys::now_ns() + n * 1_000_000)
    }

    #[test]
    fn mutex_excludes_threads() {
        let m = Arc::new(AtomicU32::new(0));
        let n = Arc::new(AtomicU32::new(0));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let (m, n) = (m.clone(), n.clone());
                thread::spawn(move || {
                    for _ in 0..20_000 {
                        mutex_lock(&m, None).unwrap();
                        // A non-atomic increment made of two steps.
                        let v = n.load(SeqCst);
                        n.store(v + 1, SeqCst);
                        mutex_unlock(&m);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(n.load(SeqCst), 80_000);
        assert!(mutex_trylock(&m));
        assert!(!mutex_trylock(&m));
        assert_eq!(mutex_lock(&m, ms(5)), Err(Error::TimedOut));
        mutex_unlock(&m);
    }

    #[test]
    fn cond_signal_and_timeout() {
        let m = Arc::new(AtomicU32::new(0));
        let (seq, w) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
        let flag = Arc::new(AtomicU32::new(0));
        let h = {
            let (m, seq, w, flag) = (m.clone(), seq.clone(), w.clone(), flag.clone());
            thread::spawn(move || {
                let c = Cond {
                    seq: &seq,
                    waiters: &w,
                };
                mutex_lock(&m, None).unwrap();
                while flag.load(SeqCst) == 0 {
                    c.wait(&m, None).unwrap();
                }
                mutex_unlock(&m);
            })
        };
        thread::sleep(std::time::Duration::from_millis(10));
        let c = Cond {
            seq: &seq,
            waiters: &w,
        };
        mutex_lock(&m, None).unwrap();
        flag.store(1, SeqCst);
        c.signal();
        mutex_unlock(&m);
        h.join().unwrap();
        mutex_lock(&m, None).unwrap();
        assert_eq!(c.wait(&m, ms(5)), Err(Error::TimedOut));
        assert_eq!(m.load(SeqCst), 1, "locked again after a timeout");
        mutex_unlock(&m);
        c.broadcast();
    }

    #[test]
    fn semaphore_counts() {
        let (v, w) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
        let s = Sem {
            value: &v,
            waiters: &w,
        };
        assert!(!s.try_wait());
        assert_eq!(s.wait(ms(3)), Err(Error::TimedOut));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let (v, w) = (v.clone(), w.clone());
                thread::spawn(move || {
                    let s = Sem {
                        value: &v,
                        waiters: &w,
                    };
                    for _ in 0..1000 {
                        s.wait(None).unwrap();
                    }
                })
            })
            .collect();
        for _ in 0..4000 {
            s.post().unwrap();
        }
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(v.load(SeqCst), 0);
        v.store(u32::MAX, SeqCst);
        assert_eq!(s.post(), Err(Error::Invalid));
    }

    #[test]
    fn wait_group() {
        let (c, g, w) = (
            Arc::new(AtomicI32::new(0)),
            Arc::new(AtomicU32::new(0)),
            Arc::new(AtomicU32::new(0)),
        );
        let wg = WaitGroup {
            count: &c,
            gen: &g,
            waiters: &w,
        };
        wg.wait(None).unwrap();
        assert_eq!(wg.add(-1), Err(Error::Invalid));
        wg.add(8).unwrap();
        assert_eq!(wg.wait(ms(3)), Err(Error::TimedOut));
        let done = Arc::new(AtomicU32::new(0));
        for _ in 0..8 {
            let (c, g, w, done) = (c.clone(), g.clone(), w.clone(), done.clone());
            thread::spawn(move || {
                thread::sleep(std::time::Duration::from_millis(5));
                done.fetch_add(1, SeqCst);
                WaitGroup {
                    count: &c,
                    gen: &g,
                    waiters: &w,
                }
                .add(-1)
                .unwrap();
            });
        }
        wg.wait(None).unwrap();
        assert_eq!(done.load(SeqCst), 8);
    }
}
