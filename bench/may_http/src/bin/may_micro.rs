//! may_micro TEST ARGS... - may's side of corun's micro benchmarks
//! (scripts/bench.sh runs it next to c-tests/co_bench_micro.c and
//! c-tests/go/micro.go, with MAY_WORKERS=1 and 2). Prints the same RESULT
//! lines.
//!
//!   pingpong ITERS TRIALS  two coroutines each yield ITERS times; one
//!                          round trip is A -> B -> A
//!   spawn ITERS TRIALS     go! + join of an empty coroutine, one at a time
//!   sleepers N MS TRIALS   N coroutines started at once, each sleeps MS ms;
//!                          wall time from the first start to the last join
use std::time::{Duration, Instant};

fn pingpong(iters: usize) -> f64 {
    let t0 = Instant::now();
    let hs: Vec<_> = (0..2)
        .map(|_| {
            may::go!(move || {
                for _ in 0..iters {
                    may::coroutine::yield_now();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().expect("pinger");
    }
    t0.elapsed().as_nanos() as f64 / iters as f64
}

fn spawn(iters: usize) -> f64 {
    let t0 = Instant::now();
    for i in 0..iters {
        let h = may::go!(move || i);
        assert_eq!(h.join().expect("empty coroutine"), i);
    }
    t0.elapsed().as_nanos() as f64 / iters as f64
}

fn sleepers(n: usize, ms: u64) -> f64 {
    let t0 = Instant::now();
    let hs: Vec<_> = (0..n)
        .map(|_| {
            may::go!(move || {
                let s = Instant::now();
                may::coroutine::sleep(Duration::from_millis(ms));
                s.elapsed() >= Duration::from_millis(ms)
            })
        })
        .collect();
    let short = hs
        .into_iter()
        .map(|h| h.join().unwrap_or(false))
        .filter(|slept| !slept)
        .count();
    if short != 0 {
        eprintln!("may_micro: {short} sleeps were short");
        std::process::exit(1);
    }
    t0.elapsed().as_secs_f64() * 1e3
}

fn report(test: &str, unit: &str, v: &[f64]) {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let trials: Vec<String> = v.iter().map(|x| format!("{x:.2}")).collect();
    println!(
        "RESULT {test} median={:.2} min={:.2} max={:.2} unit={unit} trials={}",
        s[s.len() / 2],
        s[0],
        s[s.len() - 1],
        trials.join(",")
    );
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 4 {
        eprintln!("usage: may_micro pingpong|spawn ITERS TRIALS | sleepers N MS TRIALS");
        std::process::exit(2);
    }
    let workers = std::env::var("MAY_WORKERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    may::config().set_workers(workers);
    let x: usize = a[2].parse().unwrap_or(0);
    let y: usize = a[3].parse().unwrap_or(0);
    let test = a[1].clone();
    // The benchmark itself runs in a coroutine, as corun's main does.
    let h = may::go!(move || match test.as_str() {
        "sleepers" => {
            let trials: usize = std::env::args()
                .nth(4)
                .and_then(|t| t.parse().ok())
                .unwrap_or(0);
            let v: Vec<f64> = (0..trials).map(|_| sleepers(x, y as u64)).collect();
            report("sleepers", "ms", &v);
            0
        }
        "pingpong" | "spawn" => {
            let f = if test == "spawn" { spawn } else { pingpong };
            f(x / 10);
            let v: Vec<f64> = (0..y).map(|_| f(x)).collect();
            report(&test, "ns", &v);
            0
        }
        _ => {
            eprintln!("unknown test {test}");
            2
        }
    });
    std::process::exit(h.join().unwrap_or(1));
}
