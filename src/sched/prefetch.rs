//! Prefetching the memory of the tasks that run next, while this one runs.
//!
//! At 10,000 connections on one worker each coroutine runs once every
//! ~10,000 tasks: by its turn, the lines it touches first have left the
//! caches, and the pages its stack and TLS live on have left the TLB. The
//! first of them is the switch itself: a perf profile of threaded_http at
//! 10,000 connections put two thirds of `park_until_ready`'s samples (7.5%
//! of the server's CPU) on the first instruction after the switch into the
//! coroutine, which waits for the load of its saved stack. The tasks that
//! run next are known in advance (the local run queue is FIFO), and the
//! task that runs now makes system calls that take microseconds: enough for
//! the loads of the next one to arrive meanwhile.
//!
//! So before the scheduler runs a task it asks for, in two stages (each
//! stage's addresses are read from memory the previous stage fetched, so
//! that finding an address does not itself wait for memory):
//! - the `Task` of the task after next (its fields are what `run_task`
//!   and the park path read first);
//! - for the next task (whose `Task` was fetched one run ago): the lines
//!   around the stack pointer it saved when it suspended (the switch
//!   frame and the frames of the park and the hook above it), its thread
//!   pointer's line (the TCB: stack guard, DTV pointer) and the lines of
//!   its copies of corun's and libc's thread-locals (`CURRENT` and the
//!   signal depths, errno) and its DTV (which `__tls_get_addr` reads
//!   for each access to corun's), found at the same offsets from its thread
//!   pointer as the worker's own (static TLS, variant II);
//! - the buffers of its last read and write through the hooks (a
//!   connection's coroutine reads each request into the same buffer and
//!   builds each reply in the same buffer, on its stack pages far above
//!   the saved stack pointer: the kernel's copy of the request and the
//!   program's first write of the reply were the next misses).
//!
//! A prefetch never faults and changes nothing the program sees: a stale
//! address (a task that ended, a block recycled) costs a wasted line at
//! most. Nothing here runs while the run queue holds fewer than
//! `MIN_READY` entries: a few coroutines that yield or ping-pong keep
//! their lines in the caches, and paid for the prefetches (eight yielding
//! pthreads: 67 to 80 ns per yield).

use std::sync::atomic::{AtomicUsize, Ordering};

use super::run_queue::RunQueue;
use super::task::{Task, TaskRef};
use super::worker::Worker;

/// Cache line size assumed (x86_64).
const LINE: usize = 64;
/// Lines of a `Task` fetched (it spans several).
const TASK_LINES: usize = std::mem::size_of::<Task>().div_ceil(LINE) + 1;
/// Stack fetched around the saved stack pointer: below it the switch
/// frame (callee-saved registers and the return address), above it the
/// frames of the park and the hook that called it.
const STACK_BELOW: usize = 2 * LINE;
const STACK_ABOVE: usize = 8 * LINE;

/// Ready tasks needed for the prefetch to run. With fewer, each comes
/// round within a few switches and its lines are still in the caches:
/// eight pthreads yielding on one worker paid 15 ns more per yield (80 ns
/// against 67, CPU time) for prefetches of lines already there.
const MIN_READY: usize = 16;
/// Lines fetched at the start of the last read's and write's buffers.
const IO_LINES: [usize; 2] = [2, 4];

/// What a task leaves for the prefetch of its next turn.
#[derive(Default)]
pub struct Hints {
    /// The buffers of its last read and write through the hooks (`IoBuf`).
    io_bufs: [AtomicUsize; 2],
    /// Its thread block's DTV (0: none), which every `__tls_get_addr` of
    /// corun's thread-locals reads (its own array, one per block).
    dtv: AtomicUsize,
}

impl Hints {
    /// The task's thread block was made: its DTV is at `dtv`.
    pub(super) fn set_dtv(&self, dtv: usize) {
        self.dtv.store(dtv, Ordering::Relaxed);
    }
}

/// Which of a task's last I/O buffers (`note_io_buffer`).
#[derive(Clone, Copy)]
pub enum IoBuf {
    Read = 0,
    Write = 1,
}

/// The running coroutine reads into or writes from `buf` (a hook calls
/// this on the way to the kernel): its next turn is likely to use the same
/// buffer, which the scheduler then prefetches.
#[inline]
pub fn note_io_buffer(which: IoBuf, buf: usize) {
    if let Some(t) = super::park::current() {
        t.hints.io_bufs[which as usize].store(buf, Ordering::Relaxed);
    }
}

/// Asks the CPU to bring the line of `addr` into its caches. Never faults.
#[inline(always)]
fn prefetch(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing the program sees and
    // does not fault on any address, mapped or not.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(addr as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

/// Asks for every line of task `t` (and its `Arc` counts, just before it).
/// A worker that steals never-run tasks (`Worker::move_never_run`) does
/// this for the whole batch before it touches any of them: the spawner's
/// CPU wrote those lines, and taken one by one each was a miss the thief
/// waited for in turn (the claim word's load was 42% of the steal's
/// samples, and the first run's reads of the rest made `start_coroutine`
/// three times as costly as on the spawner's worker: 100,000 sleepers, 2
/// workers, perf). Asked for together, the misses overlap.
#[inline]
pub(super) fn prefetch_task(t: &Task) {
    let p = t as *const Task as usize;
    for i in 0..TASK_LINES {
        prefetch(p.wrapping_sub(LINE) + i * LINE);
    }
}

/// `prefetch`, for a line about to be written: asks for it exclusive
/// (`prefetchw`), so the store does not wait for another CPU to give it up.
#[inline(always)]
fn prefetch_write(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as `prefetch`: a hint that never faults and writes nothing
    // (`_MM_HINT_ET0` compiles to a plain prefetcht0 unless the crate is
    // built for `prfchw`; a CPU without the instruction takes it as a NOP).
    unsafe {
        std::arch::asm!("prefetchw [{}]", in(reg) addr, options(nostack, preserves_flags, readonly))
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

/// Offsets of the worker thread's thread-locals from its thread pointer,
/// which every thread block made like glibc's has at the same offsets.
#[derive(Clone, Copy, Default)]
pub(super) struct TlsOffsets {
    /// corun's `CURRENT` (and the thread-locals laid out beside it).
    corun: isize,
    /// libc's errno.
    errno: isize,
}

impl TlsOffsets {
    /// Offsets on the calling thread, whose thread pointer is `tp`.
    pub(super) fn of_this_thread(tp: usize, current_slot: usize) -> TlsOffsets {
        // SAFETY: __errno_location has no preconditions.
        let errno = unsafe { libc::__errno_location() } as usize;
        TlsOffsets {
            corun: current_slot.wrapping_sub(tp) as isize,
            errno: errno.wrapping_sub(tp) as isize,
        }
    }

    /// errno's slot of the thread whose corun words (`static_tls::words`)
    /// are at `words`: both blocks sit at fixed offsets from the thread
    /// pointer, the same on every thread (a yield saves and restores errno
    /// without the two calls of `__errno_location`).
    #[inline(always)]
    pub(super) fn errno_at(&self, words: usize) -> *mut i32 {
        debug_assert!(
            self.errno != self.corun,
            "offsets set when the worker attached"
        );
        words.wrapping_add_signed(self.errno - self.corun) as *mut i32
    }
}

impl Worker {
    /// Fetches what the next two ready tasks will touch first (see above).
    /// Called by the scheduler just before it runs a task. The length
    /// test is inlined at every switch, the prefetches are not.
    #[inline(always)]
    pub(super) fn prefetch_next(&self, rq: &RunQueue<TaskRef>) {
        if rq.len() >= MIN_READY {
            self.prefetch_ready(rq);
        }
    }

    /// `prefetch_next` with the queue's length known (`n`).
    #[inline(always)]
    pub(super) fn prefetch_next_of(&self, rq: &RunQueue<TaskRef>, n: usize) {
        if n >= MIN_READY {
            self.prefetch_ready(rq);
        }
    }

    #[inline(never)]
    fn prefetch_ready(&self, rq: &RunQueue<TaskRef>) {
        if let Some(t) = rq.ready(1) {
            let p = std::sync::Arc::as_ptr(t) as usize;
            // The Arc's counts sit before the Task: start a line early.
            for i in 0..TASK_LINES {
                prefetch(p.wrapping_sub(LINE) + i * LINE);
            }
        }
        if let Some(t) = rq.ready(0) {
            self.prefetch_task_memory(t);
        }
    }

    /// The saved stack and the thread block of `t`, read from its `Task`.
    #[inline]
    fn prefetch_task_memory(&self, t: &Task) {
        let sp = t.debug.saved_sp();
        if sp != 0 {
            let mut a = sp.wrapping_sub(STACK_BELOW) & !(LINE - 1);
            while a < sp.wrapping_add(STACK_ABOVE) {
                prefetch(a);
                a += LINE;
            }
        }
        for (buf, lines) in t.hints.io_bufs.iter().zip(IO_LINES) {
            let b = buf.load(Ordering::Relaxed) & !(LINE - 1);
            if b != 0 {
                for i in 0..lines {
                    prefetch(b + i * LINE);
                }
            }
        }
        // The records beside its own in the registry's list, which its end
        // writes (`debugreg::unlink`): a task that wakes from a sleep often
        // ends in that run, and 30,000 sleeping tasks' records had left
        // the caches by then (the store drain at the end's first locked
        // instruction was a third of `finish`'s samples, 100,000 sleepers).
        for n in t.debug.neighbours() {
            if n != 0 {
                prefetch_write(n);
            }
        }
        let tp = t.ident.tp.get();
        if tp != 0 {
            let off = self.local.tls_offsets.get();
            prefetch(tp);
            prefetch(tp.wrapping_add_signed(off.corun));
            prefetch(tp.wrapping_add_signed(off.errno));
            prefetch(t.hints.dtv.load(Ordering::Relaxed));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctx::tls::thread_pointer;

    /// Where `CURRENT` and errno are on the calling thread.
    fn slots() -> (usize, usize, usize) {
        let current = super::super::worker::CURRENT::addr();
        // SAFETY: __errno_location has no preconditions.
        let errno = unsafe { libc::__errno_location() } as usize;
        (thread_pointer(), current, errno)
    }

    /// The offsets learned on one thread find another thread's own
    /// thread-locals from its thread pointer: what the prefetch of a
    /// coroutine's TLS lines relies on.
    #[test]
    fn offsets_from_one_thread_hold_on_another() {
        let (tp, current, _) = slots();
        let off = TlsOffsets::of_this_thread(tp, current);
        let (otp, ocurrent, oerrno) = std::thread::spawn(slots).join().unwrap();
        assert_ne!(otp, tp);
        assert_eq!(otp.wrapping_add_signed(off.corun), ocurrent);
        assert_eq!(otp.wrapping_add_signed(off.errno), oerrno);
    }

    #[test]
    fn a_task_notes_nothing_outside_a_coroutine() {
        // No running task: the note is dropped, and nothing faults.
        note_io_buffer(IoBuf::Read, 0x1000);
        prefetch(0);
        prefetch(usize::MAX);
    }
}
