//! may_http PORT BODY - may's side of corun's wrk benchmark
//! (scripts/bench.sh): a coroutine per connection on may, the Rust
//! stackful-coroutine runtime under may_minihttp, answering each GET with
//! threaded_http's exact bytes (c-tests/http_common.h: no Date header, BODY
//! bytes of the same alphabet), keep-alive and pipelining included.
//! may_minihttp itself is not used: its responses always carry its own
//! `Server` and `Date` headers, and the peers must send the same bytes.
//! Workers: MAY_WORKERS (default: one per CPU).
use std::io::{Read, Write};

const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

fn reply(body: usize, conn: &str) -> Vec<u8> {
    let mut b = format!(
        "HTTP/1.1 200 OK\r\nServer: corun-bench\r\nContent-Type: text/plain\r\nContent-Length: {body}\r\n{conn}\r\n"
    )
    .into_bytes();
    b.extend((0..body).map(|i| ALPHABET[i % ALPHABET.len()]));
    b
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn serve(mut c: may::net::TcpStream, keep: &[u8], closing: &[u8]) {
    let mut input: Vec<u8> = Vec::with_capacity(8192);
    let mut buf = [0u8; 8192];
    let mut out: Vec<u8> = Vec::with_capacity(16384);
    loop {
        let n = match c.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        input.extend_from_slice(&buf[..n]);
        out.clear();
        let mut done = false;
        while let Some(end) = find(&input, b"\r\n\r\n") {
            let close = input[..end]
                .to_ascii_lowercase()
                .windows(17)
                .any(|w| w == b"connection: close");
            if close {
                out.extend_from_slice(closing);
                done = true;
                break;
            }
            out.extend_from_slice(keep);
            input.drain(..end + 4);
        }
        if input.len() > 8192 {
            return;
        }
        if !out.is_empty() && c.write_all(&out).is_err() {
            return;
        }
        if done {
            return;
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: may_http PORT BODY");
        std::process::exit(2);
    }
    let body: usize = match args[2].parse() {
        Ok(n) if n <= 8192 => n,
        _ => {
            eprintln!("bad body size");
            std::process::exit(2);
        }
    };
    let workers = std::env::var("MAY_WORKERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    may::config().set_workers(workers);
    let keep: &'static [u8] = reply(body, "").leak();
    let closing: &'static [u8] = reply(body, "Connection: close\r\n").leak();
    let l = may::net::TcpListener::bind(("127.0.0.1", args[1].parse::<u16>().unwrap_or(0)))
        .unwrap_or_else(|e| {
            eprintln!("bind: {e}");
            std::process::exit(1)
        });
    may::go!(move || {
        for c in l.incoming().flatten() {
            may::go!(move || serve(c, keep, closing));
        }
    })
    .join()
    .ok();
}
