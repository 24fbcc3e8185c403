//! Unit tests of `fdtable.rs`: entries, generations, readiness wake-ups,
//! and the range walks `close_range` uses.

use super::*;

#[test]
fn entries_are_stable_and_lazily_allocated() {
    let a = get(70_000).unwrap() as *const FdEntry;
    let b = get(70_000).unwrap() as *const FdEntry;
    assert_eq!(a, b);
    assert!(get(-1).is_none());
    assert!(get(MAX_FD as i32).is_none());
}

#[test]
fn reset_bumps_gen_and_forgets() {
    let e = get(70_001).unwrap();
    e.policy.kind.store(KIND_SOCKET, Ordering::Relaxed);
    e.policy.nonblock.store(NB_ON as u32, Ordering::Relaxed);
    let s = e.snapshot(Dir::Read);
    e.reset();
    assert_ne!(e.gen.load(Ordering::Relaxed), s.gen);
    assert_eq!(e.policy.kind.load(Ordering::Relaxed), KIND_UNKNOWN);
    assert_eq!(e.policy.nonblock.load(Ordering::Relaxed), NB_UNKNOWN as u32);
}

#[test]
fn a_file_replaced_behind_our_back_is_noticed() {
    let (mut a, mut b) = ([0; 2], [0; 2]);
    // SAFETY: valid two-int arrays.
    unsafe {
        assert_eq!(libc::pipe(a.as_mut_ptr()), 0);
        assert_eq!(libc::pipe(b.as_mut_ptr()), 0);
    }
    let e = get(a[0]).unwrap();
    let gen = e.gen.load(Ordering::Acquire);
    assert!(
        e.policy.same_file(a[0], gen),
        "nothing registered: nothing to compare"
    );
    e.policy.note_file(a[0], gen);
    assert!(e.policy.same_file(a[0], gen));
    // The real dup2: no hook, the generation stays.
    // SAFETY: plain integers.
    assert_eq!(unsafe { crate::sys::real::dup2(b[0], a[0]) }, a[0]);
    std::thread::sleep(std::time::Duration::from_nanos(
        2 * super::super::fdpolicy::FILE_CHECK_NS,
    ));
    assert!(!e.policy.same_file(a[0], gen), "another pipe now");
    // Checked at most once per FILE_CHECK_NS: the next call trusts it.
    assert!(e.policy.same_file(a[0], gen));
    for fd in [a[0], a[1], b[0], b[1]] {
        // SAFETY: our own fds.
        unsafe { libc::close(fd) };
    }
}

#[test]
fn a_readiness_event_wakes_the_reader() {
    let e = get(70_003).unwrap();
    let s = e.snapshot(Dir::Read);
    let p = super::super::waiter::ThreadParker::new();
    let w = super::super::waiter::Waiter::Thread(p.clone());
    lock(&e.waiters).readers.push(w);
    e.on_event(s.gen, libc::EPOLLIN as u32);
    assert!(p.park(Some(crate::sys::now_ns())), "the waiter was woken");
    assert!(lock(&e.waiters).readers.is_empty());
}

#[test]
fn events_for_old_gen_are_ignored() {
    let e = get(70_002).unwrap();
    let s = e.snapshot(Dir::Read);
    e.on_event(s.gen.wrapping_sub(1), libc::EPOLLIN as u32);
    assert_eq!(e.read_seq.load(Ordering::Relaxed), s.seq);
    e.on_event(s.gen, libc::EPOLLIN as u32);
    assert_eq!(e.read_seq.load(Ordering::Relaxed), s.seq + 1);
    assert_eq!(e.write_seq.load(Ordering::Relaxed), 0);
}

#[test]
fn forget_range_resets_only_the_entries_in_range() {
    let (a, b, c) = (
        get(80_000).unwrap(),
        get(80_001).unwrap(),
        get(80_070).unwrap(),
    );
    let gens = [a, b, c].map(|e| e.gen.load(Ordering::Acquire));
    forget_range(80_001, 80_070);
    assert_eq!(a.gen.load(Ordering::Acquire), gens[0], "below the range");
    assert_ne!(b.gen.load(Ordering::Acquire), gens[1]);
    assert_ne!(c.gen.load(Ordering::Acquire), gens[2], "a second chunk");
    forget_range(5, 4);
}

#[test]
fn runtime_span_holds_every_marked_fd() {
    let e = get(81_000).unwrap();
    mark_runtime(81_000, e);
    let (lo, hi) = runtime_span();
    assert!(lo <= 81_000 && 81_000 <= hi);
    assert!(is_runtime(81_000));
}
