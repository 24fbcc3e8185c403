//! The handles of `corun_spawn`: a `corun_co_t *` is the task id, and
//! this table holds a count of the task until it is joined or detached.
//! Joining twice, joining a detached coroutine or passing a made-up handle
//! finds nothing (ESRCH) instead of touching freed memory.
//!
//! A lock-free array indexed by the id (`fast_insert`, `fast_take`: one
//! compare-and-swap and one store each way), with a sharded hash map
//! behind it for ids whose slot is taken (more than `FAST_SLOTS`
//! coroutines unjoined at once). The map alone, its lock, hash and
//! unlock on both sides, was ~180 instructions of a spawn+join's ~2,000
//! (callgrind).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::sched::{fdtable::lock, Task, TaskRef};

/// Task ids are unique: a shard's ids (`id % SHARDS` the same) hash to
/// their rank in the shard, so the ids spawned (and joined) one after the
/// other sit in neighbouring buckets: four to a cache line, not one line
/// each (100,000 coroutines spawned, then joined, missed the cache at
/// every insert and every take). The top seven bits, which the table
/// compares before the key, come from a multiplicative hash.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys")
    }
    fn write_u64(&mut self, v: u64) {
        const TOP7: u64 = 0x7F << 57;
        self.0 = (v / SHARDS as u64) & !TOP7 | v.wrapping_mul(0x9E37_79B9_7F4A_7C15) & TOP7;
    }
}

type Map = HashMap<u64, TaskRef, BuildHasherDefault<IdHasher>>;

const SHARDS: usize = 64;
static HANDLES: [Mutex<Option<Map>>; SHARDS] = [const { Mutex::new(None) }; SHARDS];

fn shard(id: u64) -> &'static Mutex<Option<Map>> {
    &HANDLES[(id as usize) % SHARDS]
}

/// Slots of the lock-free table: ids spawned one after the other sit in
/// neighbouring slots, four to a cache line.
const FAST_SLOTS: usize = 4096;
/// `FastSlot::id` of a slot being filled or emptied.
const BUSY: u64 = u64::MAX;

/// One handle: `id` is 0 (free), BUSY, or the id of the task `task` holds
/// a count of. Ids start at 1 and never reach BUSY.
struct FastSlot {
    id: AtomicU64,
    task: AtomicPtr<Task>,
}

static FAST: [FastSlot; FAST_SLOTS] = [const {
    FastSlot {
        id: AtomicU64::new(0),
        task: AtomicPtr::new(std::ptr::null_mut()),
    }
}; FAST_SLOTS];

fn fast_slot(id: u64) -> &'static FastSlot {
    &FAST[(id as usize) % FAST_SLOTS]
}

/// Puts `t` in its slot if the slot is free; gives it back if not.
fn fast_insert(t: TaskRef) -> Result<(), TaskRef> {
    let s = fast_slot(t.id);
    if s.id
        .compare_exchange(0, BUSY, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return Err(t);
    }
    let id = t.id;
    s.task
        .store(Arc::into_raw(t) as *mut Task, Ordering::Relaxed);
    s.id.store(id, Ordering::Release);
    Ok(())
}

/// Takes the task of `id` from its slot, if it is there: only the one
/// compare-and-swap that moves the slot from `id` to BUSY reads the
/// pointer, so a second take of the same id finds nothing.
fn fast_take(id: u64) -> Option<TaskRef> {
    let s = fast_slot(id);
    if s.id.load(Ordering::Relaxed) != id
        || s.id
            .compare_exchange(id, BUSY, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
    {
        return None;
    }
    // The slot is ours while it says BUSY: a load and a store, not a
    // swap (a locked instruction, ~8 ns of a spawn+join's ~450).
    let p = s.task.load(Ordering::Relaxed);
    s.task.store(std::ptr::null_mut(), Ordering::Relaxed);
    s.id.store(0, Ordering::Release);
    // SAFETY: `p` came from Arc::into_raw in `fast_insert`, published
    // before the slot's id (Release/Acquire), and this take alone owns it.
    Some(unsafe { Arc::from_raw(p) })
}

pub(crate) fn insert(t: TaskRef) {
    if let Err(t) = fast_insert(t) {
        lock(shard(t.id))
            .get_or_insert_with(Map::default)
            .insert(t.id, t);
    }
}

pub(crate) fn take(id: u64) -> Option<TaskRef> {
    if id == 0 || id == BUSY {
        return None;
    }
    fast_take(id).or_else(|| lock(shard(id)).as_mut()?.remove(&id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> TaskRef {
        crate::sched::task::test_task()
    }

    #[test]
    fn a_handle_is_taken_once_whichever_table_holds_it() {
        let a = task();
        let b = task();
        let (ia, ib) = (a.id, b.id);
        insert(a.clone());
        // A made-up handle that falls in a's slot.
        assert!(
            take(ia + FAST_SLOTS as u64).is_none(),
            "an id never inserted"
        );
        insert(b.clone());
        assert!(Arc::ptr_eq(&take(ia).expect("a is there"), &a));
        assert!(take(ia).is_none(), "a second take of a finds nothing");
        assert!(Arc::ptr_eq(&take(ib).expect("b is there"), &b));
        assert!(take(ib).is_none());
        assert!(take(0).is_none() && take(BUSY).is_none());
        assert_eq!(Arc::strong_count(&a), 1, "the table let go of its count");
        assert_eq!(Arc::strong_count(&b), 1);
    }

    #[test]
    fn a_full_slot_sends_the_next_id_to_the_map() {
        let a = task();
        insert(a.clone());
        // Occupy the slot of an id FAST_SLOTS above a's with a's entry
        // still there: the second id must go to the map and come back.
        let other = task();
        let far = a.id + FAST_SLOTS as u64;
        assert!(fast_insert(a.clone()).is_err(), "a's slot is full");
        lock(shard(far))
            .get_or_insert_with(Map::default)
            .insert(far, other.clone());
        assert!(Arc::ptr_eq(&take(far).expect("found in the map"), &other));
        assert!(Arc::ptr_eq(&take(a.id).expect("found in its slot"), &a));
    }
}
