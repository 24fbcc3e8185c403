//! Unit tests of `chan.rs` on native threads (the waits sleep on each
//! thread's futex; coroutines are exercised by c-tests/co_chan*.c).

use super::*;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

fn send_u64(c: &Chan, v: u64, mode: Mode) -> Result<(), Error> {
    c.send(&v as *const u64 as *const u8, mode)
}

fn recv_u64(c: &Chan, mode: Mode) -> Result<u64, Error> {
    let mut v = 0u64;
    c.recv(&mut v as *mut u64 as *mut u8, mode).map(|_| v)
}

const FOREVER: Mode = Mode::Block(None);

fn after_ms(ms: u64) -> Mode {
    Mode::Block(Some(crate::sys::now_ns() + ms * 1_000_000))
}

#[test]
fn unbuffered_hands_over_in_order() {
    let c = Arc::new(Chan::new(8, 0).unwrap());
    let c2 = c.clone();
    let h = thread::spawn(move || {
        for i in 0..10_000u64 {
            send_u64(&c2, i, FOREVER).unwrap();
        }
        c2.close().unwrap();
    });
    for i in 0..10_000u64 {
        assert_eq!(recv_u64(&c, FOREVER), Ok(i));
    }
    assert_eq!(recv_u64(&c, FOREVER), Err(Error::Closed));
    h.join().unwrap();
}

#[test]
fn try_and_buffer() {
    let c = Chan::new(8, 2).unwrap();
    assert_eq!(recv_u64(&c, Mode::Try), Err(Error::WouldBlock));
    send_u64(&c, 1, Mode::Try).unwrap();
    send_u64(&c, 2, Mode::Try).unwrap();
    assert_eq!(send_u64(&c, 3, Mode::Try), Err(Error::WouldBlock));
    assert_eq!(c.len(), 2);
    assert_eq!(recv_u64(&c, Mode::Try), Ok(1));
    send_u64(&c, 3, Mode::Try).unwrap();
    c.close().unwrap();
    assert_eq!(c.close(), Err(Error::Closed), "closed twice");
    assert_eq!(send_u64(&c, 4, Mode::Try), Err(Error::Closed));
    assert_eq!(
        recv_u64(&c, FOREVER),
        Ok(2),
        "the buffer drains after close"
    );
    assert_eq!(recv_u64(&c, FOREVER), Ok(3));
    assert_eq!(recv_u64(&c, FOREVER), Err(Error::Closed));
    let u = Chan::new(8, 0).unwrap();
    assert_eq!(send_u64(&u, 1, Mode::Try), Err(Error::WouldBlock));
    assert!(Chan::new(MAX_ELEM + 1, 1).is_none());
    assert!(Chan::new(1 << 20, usize::MAX / 2).is_none());
}

#[test]
fn timeouts() {
    let c = Chan::new(8, 0).unwrap();
    let t0 = crate::sys::now_ns();
    assert_eq!(recv_u64(&c, after_ms(20)), Err(Error::TimedOut));
    assert!(crate::sys::now_ns() - t0 >= 20_000_000);
    assert_eq!(send_u64(&c, 1, after_ms(5)), Err(Error::TimedOut));
    // Nothing of the timed-out calls is left queued.
    assert!(lock(&c.st).recvq.is_empty() && lock(&c.st).sendq.is_empty());
}

#[test]
fn close_wakes_blocked_senders_and_receivers() {
    let c = Arc::new(Chan::new(8, 0).unwrap());
    let mut hs = Vec::new();
    for i in 0..4 {
        let c = c.clone();
        hs.push(thread::spawn(move || {
            if i % 2 == 0 {
                recv_u64(&c, FOREVER).map(|_| ())
            } else {
                send_u64(&c, 7, FOREVER)
            }
        }));
    }
    thread::sleep(Duration::from_millis(20));
    c.close().unwrap();
    for h in hs {
        let r = h.join().unwrap();
        // Two receivers and two senders may also have met each other.
        assert!(r == Err(Error::Closed) || r == Ok(()), "{r:?}");
    }
}

/// Many producers and consumers: every item arrives exactly once.
#[test]
fn mpmc_none_lost_or_duplicated() {
    for cap in [0usize, 1, 64] {
        let c = Arc::new(Chan::new(8, cap).unwrap());
        let (np, nc, per) = (8u64, 8u64, 5_000u64);
        let seen: Arc<Vec<AtomicU64>> =
            Arc::new((0..np * per).map(|_| AtomicU64::new(0)).collect());
        let mut ps = Vec::new();
        for p in 0..np {
            let c = c.clone();
            ps.push(thread::spawn(move || {
                for i in 0..per {
                    send_u64(&c, p * per + i, FOREVER).unwrap();
                }
            }));
        }
        let mut cs = Vec::new();
        for _ in 0..nc {
            let (c, seen) = (c.clone(), seen.clone());
            cs.push(thread::spawn(move || {
                let mut n = 0;
                while let Ok(v) = recv_u64(&c, FOREVER) {
                    seen[v as usize].fetch_add(1, Ordering::Relaxed);
                    n += 1;
                }
                n
            }));
        }
        for p in ps {
            p.join().unwrap();
        }
        c.close().unwrap();
        let total: u64 = cs.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(total, np * per, "cap {cap}");
        assert!(
            seen.iter().all(|s| s.load(Ordering::Relaxed) == 1),
            "cap {cap}"
        );
    }
}

#[test]
fn select_channels() {
    let a = Chan::new(8, 1).unwrap();
    let b = Chan::new(8, 1).unwrap();
    let (mut x, mut y) = (0u64, 0u64);
    let cases = [
        Case::Recv(&a, &mut x as *mut u64 as *mut u8),
        Case::Recv(&b, &mut y as *mut u64 as *mut u8),
    ];
    assert_eq!(select(&cases, Mode::Try), Err(Error::WouldBlock));
    assert_eq!(select(&cases, after_ms(5)), Err(Error::TimedOut));
    send_u64(&b, 42, Mode::Try).unwrap();
    assert_eq!(select(&cases, FOREVER), Ok((1, false)));
    assert_eq!(y, 42);
    // A send case proceeds into a buffer with room.
    let v = 9u64;
    let s = [
        Case::Send(&a, &v as *const u64 as *const u8),
        Case::Recv(&b, std::ptr::null_mut()),
    ];
    assert_eq!(select(&s, FOREVER), Ok((0, false)));
    assert_eq!(recv_u64(&a, Mode::Try), Ok(9));
    b.close().unwrap();
    assert_eq!(
        select(&cases, FOREVER),
        Ok((1, true)),
        "a closed channel fires"
    );
    assert_eq!(select(&[], Mode::Try), Err(Error::WouldBlock));
    assert_eq!(select(&[], after_ms(1)), Err(Error::TimedOut));
}

/// A select blocked on two channels is completed by a thread sending on
/// either, and leaves nothing queued on the other.
#[test]
fn select_blocked_then_woken() {
    let a = Arc::new(Chan::new(8, 0).unwrap());
    let b = Arc::new(Chan::new(8, 0).unwrap());
    for round in 0..200u64 {
        let target = if round % 2 == 0 { a.clone() } else { b.clone() };
        let h = thread::spawn(move || send_u64(&target, round, FOREVER));
        let (mut x, mut y) = (0u64, 0u64);
        let cases = [
            Case::Recv(&a, &mut x as *mut u64 as *mut u8),
            Case::Recv(&b, &mut y as *mut u64 as *mut u8),
        ];
        let (i, closed) = select(&cases, FOREVER).unwrap();
        assert!(!closed);
        assert_eq!(i as u64, round % 2);
        assert_eq!(if i == 0 { x } else { y }, round);
        h.join().unwrap().unwrap();
    }
    assert!(lock(&a.st).recvq.is_empty() && lock(&b.st).recvq.is_empty());
}

#[test]
fn select_fd_readiness_from_a_thread() {
    let mut p = [0i32; 2];
    // SAFETY: a valid array for pipe's two fds.
    assert_eq!(unsafe { libc::pipe(p.as_mut_ptr()) }, 0);
    let c = Chan::new(8, 0).unwrap();
    let cases = [Case::Recv(&c, std::ptr::null_mut()), Case::Read(p[0])];
    assert_eq!(select(&cases, after_ms(3)), Err(Error::TimedOut));
    assert_eq!(select(&[Case::Write(p[1])], FOREVER), Ok((0, false)));
    let w = p[1];
    let h = thread::spawn(move || {
        thread::sleep(Duration::from_millis(10));
        // SAFETY: one byte from a valid buffer to the pipe.
        unsafe { libc::write(w, b"x".as_ptr() as *const libc::c_void, 1) };
    });
    assert_eq!(select(&cases, FOREVER), Ok((1, false)));
    h.join().unwrap();
    // SAFETY: closing the pipe made above.
    unsafe {
        libc::close(p[0]);
        libc::close(p[1]);
    }
}
