//! A worker's local run queue: tasks that have run before and are ready to
//! run again. FIFO, so a coroutine that yields goes behind everyone who was
//! ready before it. Only the owning worker touches it; tasks woken from
//! other threads arrive through the worker's inbox first (`worker.rs`).

use std::collections::VecDeque;

pub struct RunQueue<T> {
    q: VecDeque<T>,
}

impl<T> Default for RunQueue<T> {
    fn default() -> Self {
        RunQueue {
            q: VecDeque::with_capacity(256),
        }
    }
}

impl<T> RunQueue<T> {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn push(&mut self, t: T) {
        self.q.push_back(t);
    }

    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        self.q.pop_front()
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_order() {
        let mut q = RunQueue::new();
        for i in 0..5 {
            q.push(i);
        }
        assert_eq!(q.len(), 5);
        let first = q.pop().unwrap();
        q.push(first); // a yield goes to the back
        let got: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(got, vec![1, 2, 3, 4, 0]);
        assert!(q.is_empty());
    }
}
