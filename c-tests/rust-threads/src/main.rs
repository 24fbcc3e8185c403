//! rust-threads: a plain Rust program (std only) that uses threads the way
//! Rust programs do, run unchanged natively and under corun by
//! scripts/tests/rust_threads.sh, which diffs the two outputs.
//!
//! Sections: 128 named threads spawned and joined; Mutex, Condvar, RwLock,
//! Barrier and OnceLock under contention (threads that wait); mpsc channels
//! with 100 producers and a rendezvous channel; scoped threads borrowing
//! the caller's data; park/unpark in a chain; and `thread_local!` values
//! with a Drop that counts, checked to stay per thread across sleeps and
//! to be dropped exactly once each when their thread ends.
//!
//! Output is deterministic (sums, counts, orders that the program itself
//! imposes). Each check that fails prints a FAIL line; the exit status is 1
//! if any failed.
//!
//! `rust-threads spin MS`: a thread spins 300 ms, then another spins MS ms
//! in `spin_for`, each joined by main (for the watchdog's message,
//! scripts/tests/watchdog.sh: it learns std's thread start from the first).

use std::cell::Cell;
use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Condvar, Mutex, OnceLock, RwLock};
use std::thread;
use std::time::Duration;

/// Slots for the threads that use the thread-local (more than are spawned).
const SLOTS: usize = 2048;

static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);
static CREATED: AtomicUsize = AtomicUsize::new(0);
static DROPPED: AtomicUsize = AtomicUsize::new(0);
static DROPPED_SLOT: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
/// Drops that found their value changed by another thread.
static DROP_WRONG: AtomicUsize = AtomicUsize::new(0);
static FAILS: AtomicUsize = AtomicUsize::new(0);

/// A thread's own value: its slot, and a value derived from it. Dropped
/// when the thread ends (std registers the destructor with
/// `__cxa_thread_atexit_impl`).
struct Tracked {
    slot: Cell<usize>,
    value: Cell<u64>,
}

impl Tracked {
    fn new() -> Self {
        CREATED.fetch_add(1, SeqCst);
        Tracked {
            slot: Cell::new(usize::MAX),
            value: Cell::new(0),
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        DROPPED.fetch_add(1, SeqCst);
        let s = self.slot.get();
        if s < SLOTS {
            DROPPED_SLOT[s].fetch_add(1, SeqCst);
            if self.value.get() != value_of(s) {
                DROP_WRONG.fetch_add(1, SeqCst);
            }
        } else {
            DROP_WRONG.fetch_add(1, SeqCst);
        }
    }
}

thread_local! {
    static TRACKED: Tracked = Tracked::new();
}

fn value_of(slot: usize) -> u64 {
    (slot as u64) * 7919 + 13
}

fn fail(what: &str) {
    FAILS.fetch_add(1, SeqCst);
    println!("FAIL: {what}");
}

/// Gives the calling thread a slot and stores it in its thread-local.
fn tls_claim() -> usize {
    let s = NEXT_SLOT.fetch_add(1, SeqCst);
    TRACKED.with(|t| {
        if t.slot.get() != usize::MAX {
            fail(&format!(
                "slot {s}: a new thread's thread-local already held slot {}",
                t.slot.get()
            ));
        }
        t.slot.set(s);
        t.value.set(value_of(s));
    });
    s
}

/// Whether the calling thread still sees its own thread-local.
fn tls_mine(s: usize) -> bool {
    TRACKED.with(|t| t.slot.get() == s && t.value.get() == value_of(s))
}

fn check_tls(s: usize, when: &str) {
    if !tls_mine(s) {
        let got = TRACKED.with(|t| t.slot.get());
        fail(&format!("slot {s}: thread-local holds slot {got} {when}"));
    }
}

/// 128 named threads: name and thread-local kept across sleeps, distinct ids.
fn spawn_join() {
    let n = 128;
    let handles: Vec<_> = (0..n)
        .map(|i| {
            thread::Builder::new()
                .name(format!("spawn-{i}"))
                .spawn(move || {
                    let s = tls_claim();
                    let mut name_ok = true;
                    for r in 0..3 {
                        thread::sleep(Duration::from_micros(
                            500 + ((i * 37 + r * 11) % 7) as u64 * 200,
                        ));
                        name_ok &= thread::current().name() == Some(format!("spawn-{i}").as_str());
                        check_tls(s, "after a sleep");
                    }
                    (i as u64 * i as u64, thread::current().id(), name_ok)
                })
                .expect("spawn")
        })
        .collect();
    let mut sum = 0;
    let mut ids = HashSet::new();
    let mut names = 0;
    for h in handles {
        let (sq, id, name_ok) = h.join().expect("join");
        sum += sq;
        ids.insert(id);
        names += name_ok as usize;
    }
    if ids.contains(&thread::current().id()) {
        fail("a spawned thread had main's ThreadId");
    }
    if ids.len() != n || names != n {
        fail(&format!(
            "spawn: {} distinct ids, {names} kept their names",
            ids.len()
        ));
    }
    println!("spawn: {n} threads joined, sum of squares {sum}, {} distinct ThreadIds, {names} saw their own name", ids.len());
}

/// Mutex counter, a Condvar turnstile, a bounded queue, RwLock, Barrier, OnceLock.
fn sync() {
    // 64 threads x 5,000 increments, yielding while holding the lock now and then.
    let counter = Arc::new(Mutex::new(0u64));
    let hs: Vec<_> = (0..64)
        .map(|_| {
            let c = Arc::clone(&counter);
            thread::spawn(move || {
                let s = tls_claim();
                for k in 0..5000 {
                    let mut g = c.lock().unwrap();
                    *g += 1;
                    if k % 500 == 0 {
                        thread::sleep(Duration::from_micros(50)); // others contend meanwhile
                    }
                    drop(g);
                    if k % 100 == 0 {
                        thread::yield_now();
                    }
                }
                check_tls(s, "after the mutex loop");
            })
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    println!(
        "mutex: 64 threads x 5000 increments = {}",
        *counter.lock().unwrap()
    );

    // Turnstile: 32 threads started in reverse, each waits on the Condvar for its turn.
    let turn = Arc::new((Mutex::new((0usize, Vec::new())), Condvar::new()));
    let hs: Vec<_> = (0..32)
        .rev()
        .map(|i| {
            let t = Arc::clone(&turn);
            thread::spawn(move || {
                let s = tls_claim();
                let (m, cv) = &*t;
                let mut g = cv
                    .wait_while(m.lock().unwrap(), |(cur, _)| *cur != i)
                    .unwrap();
                g.1.push(i);
                g.0 += 1;
                drop(g);
                cv.notify_all();
                check_tls(s, "after a condvar wait");
            })
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    let order = turn.0.lock().unwrap().1.clone();
    if order != (0..32).collect::<Vec<_>>() {
        fail(&format!("turnstile order {order:?}"));
    }
    println!(
        "condvar turnstile: 32 threads took their turns in order: {}",
        order == (0..32).collect::<Vec<_>>()
    );

    // Bounded queue, capacity 4: 8 producers x 5,000 items, 8 consumers.
    struct Q {
        items: Mutex<VecDeque<Option<u64>>>,
        not_empty: Condvar,
        not_full: Condvar,
    }
    let q = Arc::new(Q {
        items: Mutex::new(VecDeque::new()),
        not_empty: Condvar::new(),
        not_full: Condvar::new(),
    });
    let put = |q: &Q, v: Option<u64>| {
        let mut g = q
            .not_full
            .wait_while(q.items.lock().unwrap(), |d| d.len() >= 4)
            .unwrap();
        g.push_back(v);
        drop(g);
        q.not_empty.notify_one();
    };
    let consumers: Vec<_> = (0..8)
        .map(|_| {
            let q = Arc::clone(&q);
            thread::spawn(move || {
                let s = tls_claim();
                let (mut n, mut sum) = (0u64, 0u64);
                loop {
                    let mut g = q
                        .not_empty
                        .wait_while(q.items.lock().unwrap(), |d| d.is_empty())
                        .unwrap();
                    let v = g.pop_front().unwrap();
                    drop(g);
                    q.not_full.notify_one();
                    match v {
                        Some(v) => {
                            n += 1;
                            sum += v;
                        }
                        None => break,
                    }
                }
                check_tls(s, "after the queue");
                (n, sum)
            })
        })
        .collect();
    let producers: Vec<_> = (0..8u64)
        .map(|p| {
            let q = Arc::clone(&q);
            thread::spawn(move || {
                let s = tls_claim();
                for k in 0..5000u64 {
                    put(&q, Some(p * 1_000_000 + k));
                }
                check_tls(s, "after producing");
            })
        })
        .collect();
    producers.into_iter().for_each(|h| h.join().unwrap());
    for _ in 0..8 {
        put(&q, None);
    }
    let (mut n, mut sum) = (0, 0);
    for h in consumers {
        let (cn, cs) = h.join().unwrap();
        n += cn;
        sum += cs;
    }
    println!("bounded queue: 8 producers x 5000 -> 8 consumers: {n} items, sum {sum}");

    // RwLock: 4 writers x 2,000 increments; 8 readers never see it go down.
    let rw = Arc::new(RwLock::new(0u64));
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..8)
        .map(|_| {
            let (rw, done) = (Arc::clone(&rw), Arc::clone(&done));
            thread::spawn(move || {
                let s = tls_claim();
                let mut last = 0;
                let mut monotonic = true;
                while !done.load(SeqCst) {
                    let v = *rw.read().unwrap();
                    monotonic &= v >= last;
                    last = v;
                    thread::sleep(Duration::from_micros(100));
                }
                check_tls(s, "after reading");
                monotonic
            })
        })
        .collect();
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let rw = Arc::clone(&rw);
            thread::spawn(move || {
                let s = tls_claim();
                for k in 0..2000 {
                    *rw.write().unwrap() += 1;
                    if k % 200 == 0 {
                        thread::yield_now();
                    }
                }
                check_tls(s, "after writing");
            })
        })
        .collect();
    writers.into_iter().for_each(|h| h.join().unwrap());
    done.store(true, SeqCst);
    // Every reader is joined (no short cut): its thread-local must be dropped.
    let seen: Vec<bool> = readers.into_iter().map(|h| h.join().unwrap()).collect();
    let monotonic = seen.iter().all(|&m| m);
    if !monotonic {
        fail("a reader saw the RwLock value go down");
    }
    println!(
        "rwlock: 4 writers x 2000 = {}, 8 readers saw it only grow: {monotonic}",
        *rw.read().unwrap()
    );

    // Barrier: 50 threads, 3 rounds, one leader a round; OnceLock initialised once.
    let barrier = Arc::new(Barrier::new(50));
    let once: Arc<OnceLock<usize>> = Arc::new(OnceLock::new());
    let inits = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..50)
        .map(|i| {
            let (b, once, inits) = (Arc::clone(&barrier), Arc::clone(&once), Arc::clone(&inits));
            thread::spawn(move || {
                let s = tls_claim();
                let mut leaders = 0;
                for _ in 0..3 {
                    thread::sleep(Duration::from_micros((i % 5) * 300));
                    leaders += b.wait().is_leader() as usize;
                }
                let v = *once.get_or_init(|| {
                    inits.fetch_add(1, SeqCst);
                    thread::sleep(Duration::from_millis(5)); // the others wait for it
                    4242
                });
                check_tls(s, "after the barrier");
                (leaders, v)
            })
        })
        .collect();
    let (mut leaders, mut values) = (0, HashSet::new());
    for h in hs {
        let (l, v) = h.join().unwrap();
        leaders += l;
        values.insert(v);
    }
    println!(
        "barrier: 50 threads x 3 rounds, {leaders} leaders; OnceLock initialised {} time(s), values {:?}",
        inits.load(SeqCst),
        values
    );
}

/// 100 producers x 1,000 messages on one mpsc channel; a rendezvous channel.
fn channels() {
    let (tx, rx) = mpsc::channel::<(usize, u64)>();
    let hs: Vec<_> = (0..100)
        .map(|p| {
            let tx = tx.clone();
            thread::spawn(move || {
                let s = tls_claim();
                for k in 0..1000u64 {
                    tx.send((p, k)).unwrap();
                    if k % 250 == 0 {
                        thread::sleep(Duration::from_micros(200));
                    }
                }
                check_tls(s, "after sending");
            })
        })
        .collect();
    drop(tx);
    let mut next = vec![0u64; 100];
    let (mut n, mut sum, mut in_order) = (0u64, 0u64, true);
    for (p, k) in rx {
        in_order &= next[p] == k;
        next[p] = k + 1;
        n += 1;
        sum += k;
    }
    hs.into_iter().for_each(|h| h.join().unwrap());
    if !in_order {
        fail("a producer's messages arrived out of order");
    }
    println!(
        "mpsc: 100 producers x 1000: {n} messages, sum {sum}, each producer's in order: {in_order}"
    );

    // sync_channel(0): every send waits for the receiver.
    let (tx, rx) = mpsc::sync_channel::<u64>(0);
    let hs: Vec<_> = (0..16u64)
        .map(|p| {
            let tx = tx.clone();
            thread::spawn(move || {
                let s = tls_claim();
                for k in 0..100 {
                    tx.send(p * 1000 + k).unwrap();
                }
                check_tls(s, "after rendezvous sends");
            })
        })
        .collect();
    drop(tx);
    let (mut n, mut sum) = (0u64, 0u64);
    for v in rx {
        n += 1;
        sum += v;
        if n % 100 == 0 {
            thread::sleep(Duration::from_micros(300)); // the senders wait
        }
    }
    hs.into_iter().for_each(|h| h.join().unwrap());
    println!("sync_channel(0): 16 senders x 100: {n} messages, sum {sum}");
}

/// Scoped threads borrow the caller's data: 16 sum a shared slice, 16 double
/// disjoint chunks of another.
fn scoped() {
    let data: Vec<u64> = (0..100_000).collect();
    let mut out: Vec<u64> = (0..100_000).collect();
    let total = thread::scope(|sc| {
        let sums: Vec<_> = data
            .chunks(data.len() / 16)
            .map(|c| {
                sc.spawn(move || {
                    let s = tls_claim();
                    thread::sleep(Duration::from_micros(300));
                    check_tls(s, "in a scoped thread");
                    c.iter().sum::<u64>()
                })
            })
            .collect();
        let muts: Vec<_> = out
            .chunks_mut(100_000 / 16)
            .map(|c| {
                sc.spawn(move || {
                    let s = tls_claim();
                    for v in c.iter_mut() {
                        *v *= 2;
                    }
                    thread::sleep(Duration::from_micros(300));
                    check_tls(s, "in a scoped thread");
                })
            })
            .collect();
        // Joined explicitly: a scope's implicit join does not wait for
        // thread-local destructors.
        muts.into_iter().for_each(|h| h.join().unwrap());
        sums.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
    });
    println!(
        "scoped: 16 readers summed {total}, 16 writers doubled to {}",
        out.iter().sum::<u64>()
    );
}

/// park/unpark: 100 parked threads woken one at a time in reverse order,
/// each unparking main in turn; an unpark before park is not lost.
fn park_unpark() {
    let n = 100;
    let go: Arc<Vec<AtomicBool>> = Arc::new((0..n).map(|_| AtomicBool::new(false)).collect());
    let done: Arc<Vec<AtomicBool>> = Arc::new((0..n).map(|_| AtomicBool::new(false)).collect());
    let order = Arc::new(Mutex::new(Vec::new()));
    let main = thread::current();
    let hs: Vec<_> = (0..n)
        .map(|i| {
            let (go, done, order, main) = (
                Arc::clone(&go),
                Arc::clone(&done),
                Arc::clone(&order),
                main.clone(),
            );
            thread::spawn(move || {
                let s = tls_claim();
                while !go[i].load(SeqCst) {
                    thread::park();
                }
                order.lock().unwrap().push(i);
                check_tls(s, "after parking");
                done[i].store(true, SeqCst);
                main.unpark();
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(20)); // let them park
    for i in (0..n).rev() {
        go[i].store(true, SeqCst);
        hs[i].thread().unpark();
        while !done[i].load(SeqCst) {
            thread::park();
        }
    }
    hs.into_iter().for_each(|h| h.join().unwrap());
    let order = order.lock().unwrap().clone();
    let reverse = order == (0..n).rev().collect::<Vec<_>>();
    if !reverse {
        fail(&format!("park order {order:?}"));
    }

    // The token: unpark() before park() makes that park() return. The
    // thread learns that main has unparked it through a flag it polls
    // with sleeps: a blocking wait that parks (mpsc's recv does) could
    // consume the token itself, natively too.
    let unparked = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&unparked);
    let t = thread::spawn(move || {
        let s = tls_claim();
        while !seen.load(SeqCst) {
            thread::sleep(Duration::from_millis(1));
        }
        thread::park();
        check_tls(s, "after a pre-unparked park");
        true
    });
    t.thread().unpark();
    unparked.store(true, SeqCst);
    let token = t.join().unwrap();
    println!("park/unpark: {n} threads woke in reverse order: {reverse}; unpark before park kept: {token}");
}

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

/// CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID).
fn thread_cpu() -> Duration {
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; clock 3 is CLOCK_THREAD_CPUTIME_ID on Linux.
    unsafe { clock_gettime(3, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Computes for `ms` ms of CPU time (not wall time: a loaded machine that
/// leaves the thread without a CPU does not cut its work short) without a
/// call corun could park in.
#[inline(never)]
fn spin_for(ms: u64) -> u64 {
    let t0 = thread_cpu();
    let mut x = 0u64;
    while thread_cpu() - t0 < Duration::from_millis(ms) {
        x = std::hint::black_box(x + 1);
    }
    x
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "spin" {
        let ms: u64 = args[2].parse().expect("spin MS");
        thread::spawn(|| spin_for(300)).join().expect("joined");
        let n = thread::spawn(move || spin_for(ms)).join().expect("joined");
        println!("spun {ms} ms: {}", n > 0);
        return;
    }
    spawn_join();
    sync();
    channels();
    scoped();
    park_unpark();

    // Every spawned thread has been joined: each thread-local was dropped.
    let used = NEXT_SLOT.load(SeqCst);
    let once_each = (0..used).all(|s| DROPPED_SLOT[s].load(SeqCst) == 1);
    let created = CREATED.load(SeqCst);
    let dropped = DROPPED.load(SeqCst);
    if created != used || dropped != used || !once_each || DROP_WRONG.load(SeqCst) != 0 {
        let bad: Vec<_> = (0..used)
            .filter(|&s| DROPPED_SLOT[s].load(SeqCst) != 1)
            .take(10)
            .collect();
        fail(&format!(
            "thread_local: {used} threads, {created} created, {dropped} dropped, {} dropped with another thread's value, first slots not dropped once: {bad:?}",
            DROP_WRONG.load(SeqCst)
        ));
    }
    println!("thread_local: {used} threads, {created} values created, {dropped} dropped, each exactly once: {once_each}");
    let fails = FAILS.load(SeqCst);
    println!(
        "rust-threads: {}",
        if fails == 0 {
            "all checks passed".to_string()
        } else {
            format!("{fails} checks FAILED")
        }
    );
    std::process::exit(if fails == 0 { 0 } else { 1 });
}
