//! A coroutine: a corosensei coroutine on a pooled, guarded stack (or on
//! the stack a program gave its thread, `GuardedStack::program`).
//!
//! The scheduler resumes a coroutine; the coroutine runs until it suspends
//! itself through its `Yielder` (to park) or returns. Nothing crosses the
//! switch but control: wake-up reasons live in the task, not in the switch.

use super::overflow::Running;
use super::stack::GuardedStack;

/// The handle a running coroutine suspends itself with.
pub type Yielder = corosensei::Yielder<(), ()>;

/// What `resume` came back with.
#[derive(Debug, PartialEq, Eq)]
pub enum Resumed {
    /// The coroutine suspended itself and may be resumed again.
    Suspended,
    /// The body returned; the stack may be recovered.
    Finished,
}

pub struct Coroutine {
    inner: corosensei::Coroutine<(), (), (), GuardedStack>,
    stack_top: usize,
    guard: (usize, usize),
    /// What the overflow handler reports while this coroutine runs
    /// (`overflow::set_running`); it does not move once the coroutine is
    /// stored where it stays.
    record: Running,
}

impl Coroutine {
    /// Prepares `body` to run on `stack`; nothing runs until `resume`.
    /// `id` names the coroutine in an overflow report.
    pub fn new<F>(id: u64, stack: GuardedStack, body: F) -> Coroutine
    where
        F: FnOnce(&Yielder) + 'static,
    {
        let stack_top = stack.top();
        let guard = stack.guard_range();
        // A program's stack has no guard of corun's: a fault below it is
        // the program's (SBCL's own guard pages), never reported here.
        let overflow_guard = if stack.is_program() { (0, 0) } else { guard };
        Coroutine {
            inner: corosensei::Coroutine::with_stack(stack, move |y: &Yielder, ()| body(y)),
            stack_top,
            guard,
            record: Running::new(id, overflow_guard, stack_top),
        }
    }

    /// The record `overflow::set_running` takes while this coroutine runs:
    /// valid as long as the coroutine stays where it is.
    #[inline]
    pub fn overflow_record(&self) -> *const Running {
        &self.record
    }

    /// Runs the coroutine until it suspends or finishes.
    #[inline]
    pub fn resume(&mut self) -> Resumed {
        match self.inner.resume(()) {
            corosensei::CoroutineResult::Yield(()) => Resumed::Suspended,
            corosensei::CoroutineResult::Return(()) => Resumed::Finished,
        }
    }

    /// Gives the stack of a finished (or abandoned) coroutine back.
    pub fn into_stack(self) -> GuardedStack {
        self.inner.into_stack()
    }

    /// Forgets a suspended coroutine's frames without running their
    /// destructors (`pthread_exit`: C frames cannot be unwound).
    ///
    /// # Safety
    /// No frame on the coroutine's stack may own anything that needs dropping.
    pub unsafe fn abandon(&mut self) {
        // SAFETY: upheld by the caller.
        unsafe { self.inner.force_reset() }
    }

    /// The guard page's address range and the top of the stack.
    pub fn bounds(&self) -> ((usize, usize), usize) {
        (self.guard, self.stack_top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    #[test]
    fn suspend_resume_finish() {
        let hits = Rc::new(Cell::new(0));
        let h = hits.clone();
        let stack = GuardedStack::map_slab(64 * 1024).unwrap().pop().unwrap();
        let mut co = Coroutine::new(1, stack, move |y| {
            h.set(1);
            y.suspend(());
            h.set(2);
        });
        assert_eq!(hits.get(), 0);
        assert_eq!(co.resume(), Resumed::Suspended);
        assert_eq!(hits.get(), 1);
        assert_eq!(co.resume(), Resumed::Finished);
        assert_eq!(hits.get(), 2);
        let s = co.into_stack();
        assert_eq!(s.usable_size(), 64 * 1024);
    }
}
