//! Wake-ups posted from signal handlers: `sem_post` is async-signal-safe,
//! but a handler may have interrupted this very thread holding a bucket
//! lock of the table (`sync/mod.rs`), so it cannot wake there. It notes
//! the word in a fixed table instead (no lock, no allocation) and a worker
//! makes the wake at its next pass (`sigdispatch::request_work`).

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use super::wake_all;

/// Words to wake, posted from signal handlers (0: free slot).
static LATER: [AtomicUsize; 256] = [const { AtomicUsize::new(0) }; 256];

/// `wake` for a signal handler (`sem_post` is async-signal-safe): the
/// handler may have interrupted this very thread holding a bucket lock, so
/// it only notes the word in a fixed table (no lock, no allocation) and a
/// worker wakes every sleeper on it at its next pass (sleepers re-check
/// their word, so waking all of them is never wrong). Falls back to
/// `wake_all` when the table is full of other words.
pub fn wake_later(word: &AtomicU32) {
    let a = word.as_ptr() as usize;
    let mut placed = false;
    for s in &LATER {
        let cur = s.load(Ordering::Acquire);
        if cur == a
            || (cur == 0
                && s.compare_exchange(0, a, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok())
        {
            placed = true;
            break;
        }
    }
    if placed {
        crate::sched::sigdispatch::request_work();
    } else {
        wake_all(word);
    }
}

/// Makes the wake-ups noted by `wake_later` (a worker, normal context).
pub fn run_later() {
    for s in &LATER {
        if s.load(Ordering::Relaxed) == 0 {
            continue;
        }
        let a = s.swap(0, Ordering::AcqRel);
        if a != 0 {
            // SAFETY: the address of an AtomicU32 a program's sem_post
            // named: a semaphore in use is alive (destroying one that a
            // handler still posts is undefined natively too).
            wake_all(unsafe { &*(a as *const AtomicU32) });
        }
    }
}
