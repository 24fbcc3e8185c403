//! The FIFO of ready tasks in a worker's run queue (`run_queue.rs`): a
//! ring of slots whose count is a power of two, so that a push or a pop
//! is one masked index, a load and a store. A yield pushes and pops once
//! each; `VecDeque`'s, whose capacity need not be a power of two, wrapped
//! with a compare and a conditional move and reloaded its buffer, head,
//! length and capacity for each (30 instructions a switch, against 20
//! here: callgrind, co_bench_micro pingpong).
//!
//! Free slots hold `None` and taken ones `Some`: a pop takes the value
//! out (`Option::take`, a load and a store of a null for an `Arc`), so
//! nothing is read that was not written and no `unsafe` moves values.

pub struct Fifo<T> {
    /// `mask + 1` slots; the `len` values from `head` (masked) on are
    /// `Some`, the rest `None`.
    slots: Box<[Option<T>]>,
    mask: usize,
    /// Where the oldest value sits, unmasked (wraps).
    head: usize,
    len: usize,
}

impl<T> Fifo<T> {
    /// Room for `n` values before the first growth (rounded up to a power
    /// of two, at least 2).
    pub fn with_capacity(n: usize) -> Self {
        let n = n.max(2).next_power_of_two();
        Fifo {
            slots: std::iter::repeat_with(|| None).take(n).collect(),
            mask: n - 1,
            head: 0,
            len: 0,
        }
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    fn slot(&mut self, i: usize) -> &mut Option<T> {
        let k = i & self.mask;
        debug_assert!(k < self.slots.len());
        // SAFETY: `slots` has `mask + 1` entries (`with_capacity`, `grow`
        // keep it so), and `k <= mask`.
        unsafe { self.slots.get_unchecked_mut(k) }
    }

    #[inline(always)]
    pub fn push_back(&mut self, t: T) {
        if self.len > self.mask {
            self.grow();
        }
        let slot = self.slot(self.head.wrapping_add(self.len));
        // The slot is free (`None`): written without a drop of what it held
        // (a test and a branch per push); were it not, its value would
        // leak, never be dropped twice.
        let old = slot.replace(t);
        debug_assert!(old.is_none(), "a free slot of the FIFO held a value");
        std::mem::forget(old);
        self.len += 1;
    }

    #[inline(always)]
    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let head = self.head;
        self.head = head.wrapping_add(1);
        self.len -= 1;
        self.slot(head).take()
    }

    /// The newest value (a worker handing its latest wake-ups to another:
    /// `balance.rs`).
    pub fn pop_back(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        let at = self.head.wrapping_add(self.len);
        self.slot(at).take()
    }

    /// The value `i` places from the front, if there are that many.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&T> {
        if i >= self.len {
            return None;
        }
        self.slots[self.head.wrapping_add(i) & self.mask].as_ref()
    }

    /// Twice the slots, the values moved in order to the front.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let n = self.slots.len() * 2;
        let mut slots: Box<[Option<T>]> = std::iter::repeat_with(|| None).take(n).collect();
        for (k, s) in slots.iter_mut().enumerate().take(self.len) {
            *s = self.slots[self.head.wrapping_add(k) & self.mask].take();
        }
        self.slots = slots;
        self.mask = n - 1;
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn fifo_order_across_wraps_and_growth() {
        let mut f = Fifo::with_capacity(2);
        let mut want = std::collections::VecDeque::new();
        let mut next = 0;
        // Pushes outnumber pops two to one for a while, then the queue
        // drains: the ring wraps at every size it grows through.
        for round in 0..200 {
            let pushes = if round < 120 { 2 } else { 0 };
            for _ in 0..pushes {
                f.push_back(next);
                want.push_back(next);
                next += 1;
            }
            assert_eq!(f.pop_front(), want.pop_front());
            assert_eq!(f.len(), want.len());
            assert_eq!(f.get(0), want.front());
            assert_eq!(f.get(f.len()), None);
        }
        while let Some(v) = want.pop_front() {
            assert_eq!(f.pop_front(), Some(v));
        }
        assert!(f.is_empty());
        assert_eq!(f.pop_front(), None);
    }

    #[test]
    fn pop_back_takes_the_newest_across_wraps() {
        let mut f = Fifo::with_capacity(4);
        for i in 0..3 {
            f.push_back(i);
        }
        assert_eq!(f.pop_front(), Some(0));
        f.push_back(3);
        f.push_back(4); // wraps
        assert_eq!(f.pop_back(), Some(4));
        assert_eq!(f.pop_back(), Some(3));
        f.push_back(5);
        assert_eq!(f.pop_front(), Some(1));
        assert_eq!(f.pop_front(), Some(2));
        assert_eq!(f.pop_front(), Some(5));
        assert_eq!(f.pop_back(), None);
        assert!(f.is_empty());
    }

    #[test]
    fn values_are_dropped_once() {
        let v = Rc::new(());
        {
            let mut f = Fifo::with_capacity(2);
            for _ in 0..5 {
                f.push_back(v.clone());
            }
            drop(f.pop_front());
            assert_eq!(Rc::strong_count(&v), 5);
        }
        assert_eq!(Rc::strong_count(&v), 1);
    }
}
