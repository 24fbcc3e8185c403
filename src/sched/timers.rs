//! Timers: a FIFO of deadlines that come in order, beside a 4-ary min-heap
//! for the others, both with cheap cancellation.
//!
//! Each worker owns one. A coroutine that sleeps, or waits with a timeout,
//! inserts its deadline; the worker's poll sleeps until the earliest one
//! (with nanosecond resolution, see `sys::epoll`). A wait that ends early
//! (the fd became ready) cancels its timer at once: a server that polls with
//! a 30 s timeout at 100k requests/s must not pile up millions of dead
//! entries, which a lazily-cleaned heap would.
//!
//! Entries live in a slab; the heap holds each entry's deadline next to its
//! slab index, and each slab slot remembers its heap position so `cancel`
//! can remove it from the middle. A `TimerId` carries a generation so a
//! cancel after the timer fired (and its slot was reused) does nothing.
//!
//! Why this shape: with 100,000 sleepers on a worker, popping the expired
//! timers was 325 instructions per timer in callgrind, most of them
//! comparisons that read each candidate's deadline from its slab slot (a
//! slot anywhere in 5 MB, bounds-checked) and three-way swaps. Here the
//! deadlines compared sit in the heap itself, four children to a cache line
//! (16-byte entries), a sift moves a hole instead of swapping (one write
//! per level, plus the moved entry's position), and the heap is half as
//! deep as a binary one.
//!
//! Most deadlines come in order: each is "now" plus a duration the
//! program uses again and again (100,000 coroutines that each sleep 1 ms,
//! a server's 30 s poll timeout). A deadline no earlier than the last one
//! queued in order goes to the back of `run`, a FIFO already sorted: no
//! sift, and the expired ones leave from its front, in the order they
//! came, so their entries and slots are read as they were written (a pop
//! from the heap's root moved one entry per level and wrote each one's
//! slot, lines far apart in a heap of 100,000: 214 of the 3,100
//! instructions of a sleeper on 1 worker, and cache misses). The others go
//! to the heap; a pop takes the earlier of the two fronts. A cancelled
//! timer in the middle of `run` leaves a dead entry there, skipped when it
//! reaches the front; once dead entries are more than half of `run`, it is
//! compacted (its slots renumbered), so a server whose waits end early
//! keeps it at most twice as long as its live timers.

use std::collections::VecDeque;

/// Handle returned by `insert`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerId {
    slot: u32,
    gen: u32,
}

/// Children per heap node.
const ARITY: usize = 4;
/// `Slot::pos` of a free slot.
const FREE: u32 = u32::MAX;
/// `Slot::pos` of a timer in `run`: this bit, and its sequence number
/// there (`SEQ_MASK` bits, so that no such pos is FREE).
const IN_RUN: u32 = 1 << 31;
const SEQ_MASK: u32 = (1 << 30) - 1;
/// `Entry::slot` of a cancelled entry left in `run`.
const DEAD: u32 = u32::MAX;
/// Dead entries `run` may hold before a compaction is considered.
const DEAD_MIN: usize = 64;

#[derive(Clone, Copy)]
struct Entry {
    deadline: u64,
    slot: u32,
}

struct Slot<T> {
    gen: u32,
    /// Position in `heap`, `IN_RUN | sequence number` in `run`, or FREE.
    pos: u32,
    value: Option<T>,
}

pub struct Timers<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    heap: Vec<Entry>,
    /// Timers queued in deadline order; the front entry is never dead.
    run: VecDeque<Entry>,
    /// Sequence number of `run`'s front entry (wrapping in SEQ_MASK).
    run_head: u32,
    /// Dead entries in `run`.
    run_dead: usize,
}

impl<T> Default for Timers<T> {
    fn default() -> Self {
        Timers {
            slots: Vec::new(),
            free: Vec::new(),
            heap: Vec::new(),
            run: VecDeque::new(),
            run_head: 0,
            run_dead: 0,
        }
    }
}

impl<T> Timers<T> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.heap.len() + self.run.len() - self.run_dead
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.run.is_empty()
    }

    /// The earliest deadline, if any.
    pub fn next_deadline(&self) -> Option<u64> {
        match (self.heap.first(), self.run.front()) {
            (Some(h), Some(r)) => Some(h.deadline.min(r.deadline)),
            (h, r) => h.or(r).map(|e| e.deadline),
        }
    }

    pub fn insert(&mut self, deadline: u64, value: T) -> TimerId {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Slot {
                    gen: 0,
                    pos: FREE,
                    value: None,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let s = &mut self.slots[slot as usize];
        s.value = Some(value);
        let id = TimerId { slot, gen: s.gen };
        if self.run.back().is_none_or(|b| b.deadline <= deadline) {
            s.pos = IN_RUN | (self.run_head.wrapping_add(self.run.len() as u32) & SEQ_MASK);
            self.run.push_back(Entry { deadline, slot });
            return id;
        }
        let pos = self.heap.len();
        self.heap.push(Entry { deadline, slot });
        self.sift_up(pos, Entry { deadline, slot });
        id
    }

    /// Removes a pending timer; None if it already fired or was cancelled.
    pub fn cancel(&mut self, id: TimerId) -> Option<T> {
        let s = self.slots.get(id.slot as usize)?;
        if s.gen != id.gen || s.pos == FREE {
            return None;
        }
        let pos = s.pos;
        if pos & IN_RUN != 0 {
            let i = (pos & SEQ_MASK).wrapping_sub(self.run_head) & SEQ_MASK;
            return Some(self.remove_from_run(i as usize));
        }
        Some(self.remove_at(pos as usize))
    }

    /// Pops one timer whose deadline is at or before `now`.
    pub fn pop_expired(&mut self, now: u64) -> Option<T> {
        let from_run = match (self.heap.first(), self.run.front()) {
            (None, None) => return None,
            (Some(h), Some(r)) => r.deadline <= h.deadline,
            (h, _) => h.is_none(),
        };
        if from_run {
            if self.run.front()?.deadline > now {
                return None;
            }
            return Some(self.remove_from_run(0));
        }
        if self.heap.first()?.deadline > now {
            return None;
        }
        Some(self.remove_at(0))
    }

    /// Takes the live entry `i` places from `run`'s front out: the front
    /// and the back leave (with the dead entries they uncover), one in the
    /// middle is marked dead.
    fn remove_from_run(&mut self, i: usize) -> T {
        let slot = self.run[i].slot;
        if i == 0 {
            self.run.pop_front();
            self.run_head = self.run_head.wrapping_add(1) & SEQ_MASK;
            while self.run.front().is_some_and(|e| e.slot == DEAD) {
                self.run.pop_front();
                self.run_head = self.run_head.wrapping_add(1) & SEQ_MASK;
                self.run_dead -= 1;
            }
        } else if i + 1 == self.run.len() {
            self.run.pop_back();
            while self.run.back().is_some_and(|e| e.slot == DEAD) {
                self.run.pop_back();
                self.run_dead -= 1;
            }
        } else {
            self.run[i].slot = DEAD;
            self.run_dead += 1;
            if self.run_dead > DEAD_MIN && 2 * self.run_dead > self.run.len() {
                self.compact_run();
            }
        }
        self.free_slot(slot)
    }

    /// Drops `run`'s dead entries and renumbers the live ones' slots.
    #[cold]
    fn compact_run(&mut self) {
        self.run.retain(|e| e.slot != DEAD);
        self.run_dead = 0;
        self.run_head = 0;
        for (i, e) in self.run.iter().enumerate() {
            self.slots[e.slot as usize].pos = IN_RUN | (i as u32 & SEQ_MASK);
        }
    }

    /// Frees the slot of a timer taken out, and gives its value.
    fn free_slot(&mut self, slot: u32) -> T {
        let s = &mut self.slots[slot as usize];
        s.pos = FREE;
        s.gen = s.gen.wrapping_add(1);
        self.free.push(slot);
        s.value.take().expect("a queued timer has a value")
    }

    fn remove_at(&mut self, pos: usize) -> T {
        let slot = self.heap[pos].slot;
        let last = self.heap.pop().expect("a queued timer is in the heap");
        if pos < self.heap.len() {
            // The last entry fills the hole, moving down or up from it.
            if pos > 0 && last.deadline < self.heap[(pos - 1) / ARITY].deadline {
                self.sift_up(pos, last);
            } else {
                self.sift_down(pos, last);
            }
        }
        self.free_slot(slot)
    }

    /// Puts `e` at `pos` (where it is, or a hole), or above: parents with
    /// later deadlines move down into the hole.
    fn sift_up(&mut self, mut pos: usize, e: Entry) {
        while pos > 0 {
            let parent = (pos - 1) / ARITY;
            let p = self.heap[parent];
            if p.deadline <= e.deadline {
                break;
            }
            self.place(pos, p);
            pos = parent;
        }
        self.place(pos, e);
    }

    /// Puts `e` at hole `pos`, or below: the earliest child moves up into
    /// the hole while it is earlier than `e`.
    fn sift_down(&mut self, mut pos: usize, e: Entry) {
        let n = self.heap.len();
        loop {
            let first = ARITY * pos + 1;
            if first >= n {
                break;
            }
            let best = if first + ARITY <= n {
                // A full node (all but the last): a tournament of two
                // pairs, one bounds check.
                let k: &[Entry; ARITY] = self.heap[first..first + ARITY]
                    .try_into()
                    .expect("a slice of ARITY entries");
                let a = usize::from(k[1].deadline < k[0].deadline);
                let b = 2 + usize::from(k[3].deadline < k[2].deadline);
                if k[b].deadline < k[a].deadline {
                    b
                } else {
                    a
                }
            } else {
                let kids = &self.heap[first..n];
                let mut best = 0;
                for (i, k) in kids.iter().enumerate().skip(1) {
                    if k.deadline < kids[best].deadline {
                        best = i;
                    }
                }
                best
            };
            let c = self.heap[first + best];
            if e.deadline <= c.deadline {
                break;
            }
            self.place(pos, c);
            pos = first + best;
        }
        self.place(pos, e);
    }

    #[inline]
    fn place(&mut self, pos: usize, e: Entry) {
        self.heap[pos] = e;
        self.slots[e.slot as usize].pos = pos as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_in_deadline_order() {
        let mut t = Timers::new();
        for (i, d) in [50u64, 10, 40, 20, 30].iter().enumerate() {
            t.insert(*d, i);
        }
        assert_eq!(t.next_deadline(), Some(10));
        assert_eq!(t.pop_expired(5), None);
        let mut got = vec![];
        while let Some(v) = t.pop_expired(100) {
            got.push(v);
        }
        assert_eq!(got, vec![1, 3, 4, 2, 0]);
        assert!(t.is_empty());
    }

    #[test]
    fn cancel_from_the_middle() {
        let mut t = Timers::new();
        let ids: Vec<_> = (0..100u64).map(|i| t.insert((i * 37) % 101, i)).collect();
        for id in ids.iter().step_by(3) {
            assert!(t.cancel(*id).is_some());
            assert!(t.cancel(*id).is_none(), "a second cancel is a no-op");
        }
        let mut last = 0;
        let mut n = 0;
        while let Some(v) = t.pop_expired(u64::MAX) {
            let d = (v * 37) % 101;
            assert!(d >= last);
            assert!(v % 3 != 0, "cancelled timer {v} fired");
            last = d;
            n += 1;
        }
        assert_eq!(n, 100 - 34);
    }

    #[test]
    fn stale_id_after_reuse_does_nothing() {
        let mut t = Timers::new();
        let a = t.insert(1, "a");
        assert_eq!(t.pop_expired(1), Some("a"));
        let b = t.insert(2, "b");
        assert_eq!(t.cancel(a), None, "slot reused: the old id is stale");
        assert_eq!(t.cancel(b), Some("b"));
    }

    /// Random inserts, cancels and pops against a sorted model: every pop
    /// gives an earliest pending deadline, every cancel finds exactly the
    /// timers still pending, and the heap order holds after each step.
    #[test]
    fn matches_a_sorted_model() {
        let mut t = Timers::new();
        let mut model = std::collections::BTreeSet::new();
        let mut ids = Vec::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for step in 0..20_000u64 {
            match rnd() % 4 {
                0 | 1 => {
                    let d = rnd() % 1000;
                    ids.push((t.insert(d, (d, step)), d, step));
                    model.insert((d, step));
                }
                2 if !ids.is_empty() => {
                    let (id, d, v) = ids.swap_remove((rnd() % ids.len() as u64) as usize);
                    let pending = model.remove(&(d, v));
                    assert_eq!(t.cancel(id), pending.then_some((d, v)));
                }
                _ => {
                    let now = rnd() % 1000;
                    match t.pop_expired(now) {
                        Some((d, v)) => {
                            assert!(d <= now);
                            assert_eq!(model.first().map(|m| m.0), Some(d), "not an earliest");
                            assert!(model.remove(&(d, v)));
                        }
                        None => assert!(model.first().is_none_or(|m| m.0 > now)),
                    }
                }
            }
            assert_eq!(t.len(), model.len());
            assert_eq!(t.next_deadline(), model.first().map(|m| m.0));
            t.check();
        }
    }

    impl<T> Timers<T> {
        /// The invariants: heap order, run order, every slot's position.
        fn check(&self) {
            for (i, e) in self.heap.iter().enumerate() {
                assert_eq!(self.slots[e.slot as usize].pos as usize, i);
                if i > 0 {
                    assert!(self.heap[(i - 1) / ARITY].deadline <= e.deadline);
                }
            }
            assert!(self.run.front().is_none_or(|e| e.slot != DEAD));
            assert!(self.run.back().is_none_or(|e| e.slot != DEAD));
            let dead = self.run.iter().filter(|e| e.slot == DEAD).count();
            assert_eq!(dead, self.run_dead);
            for (i, e) in self.run.iter().enumerate() {
                if i > 0 {
                    assert!(self.run[i - 1].deadline <= e.deadline);
                }
                if e.slot != DEAD {
                    let seq = (self.run_head.wrapping_add(i as u32)) & SEQ_MASK;
                    assert_eq!(self.slots[e.slot as usize].pos, IN_RUN | seq);
                }
            }
        }
    }

    /// Deadlines that come in order use the FIFO; cancels in its middle
    /// leave dead entries that are compacted away, and every timer left
    /// still fires, in order, against a sorted model.
    #[test]
    fn in_order_deadlines_and_cancels() {
        let mut t = Timers::new();
        let mut model = std::collections::BTreeSet::new();
        let mut ids = std::collections::VecDeque::new();
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut now = 0u64;
        for step in 0..50_000u64 {
            now += rnd() % 3;
            match rnd() % 8 {
                // A wait with a fixed timeout: in order.
                0..=3 => {
                    let d = now + 1000;
                    ids.push_back((t.insert(d, (d, step)), d, step));
                    model.insert((d, step));
                }
                // One with a shorter timeout: out of order (the heap).
                4 => {
                    let d = now + rnd() % 500;
                    ids.push_back((t.insert(d, (d, step)), d, step));
                    model.insert((d, step));
                }
                // Most waits end early: their timers are cancelled.
                5 | 6 if !ids.is_empty() => {
                    let k = (rnd() % ids.len() as u64) as usize;
                    let (id, d, v) = ids.remove(k).expect("in range");
                    let pending = model.remove(&(d, v));
                    assert_eq!(t.cancel(id), pending.then_some((d, v)));
                    assert_eq!(t.cancel(id), None);
                }
                _ => {
                    while let Some((d, v)) = t.pop_expired(now) {
                        assert!(d <= now);
                        assert_eq!(model.first().map(|m| m.0), Some(d), "not an earliest");
                        assert!(model.remove(&(d, v)));
                    }
                    assert!(model.first().is_none_or(|m| m.0 > now));
                }
            }
            assert_eq!(t.len(), model.len());
            assert_eq!(t.next_deadline(), model.first().map(|m| m.0));
            assert!(
                t.run.len() <= 2 * t.len() + DEAD_MIN + 1,
                "dead entries pile up"
            );
            if step % 64 == 0 {
                t.check();
            }
        }
        assert!(!t.run.is_empty(), "in-order deadlines went to the FIFO");
        while t.pop_expired(u64::MAX).is_some() {}
        assert!(t.is_empty());
    }

    /// Cancels in the middle of the FIFO compact it once dead entries are
    /// more than half; the survivors keep their order and their ids.
    #[test]
    fn fifo_compacts() {
        let mut t = Timers::new();
        let ids: Vec<_> = (0..1000u64).map(|i| t.insert(i, i)).collect();
        for id in &ids[1..=700] {
            assert!(t.cancel(*id).is_some());
            t.check();
        }
        assert!(t.run.len() < 1000, "compacted");
        assert_eq!(t.len(), 300);
        assert_eq!(t.cancel(ids[998]), Some(998));
        assert_eq!(t.cancel(ids[500]), None);
        let got: Vec<u64> = std::iter::from_fn(|| t.pop_expired(u64::MAX)).collect();
        let want: Vec<u64> = [0]
            .into_iter()
            .chain((701..1000).filter(|i| *i != 998))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn hundred_thousand_sleepers_are_cheap() {
        let mut t = Timers::new();
        let start = std::time::Instant::now();
        for i in 0..100_000u64 {
            t.insert(i.wrapping_mul(2654435761) % 1_000_000, i);
        }
        let mut n = 0;
        while t.pop_expired(u64::MAX).is_some() {
            n += 1;
        }
        assert_eq!(n, 100_000);
        // Generous: O(n log n) on 100k is a few ms even unoptimised.
        assert!(start.elapsed().as_secs() < 5);
    }
}
