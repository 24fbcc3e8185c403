# A Rust program using std's threads (c-tests/rust-threads: 500+ threads
# through std::thread::spawn and scoped threads, Mutex/Condvar/RwLock/
# Barrier/OnceLock with waiters, mpsc with 100 producers, park/unpark, and
# thread_local! values whose Drop counts) prints the same results natively
# and under corun with one worker and with the default number, and exits 0
# (the program checks each result, including that every thread-local was
# dropped exactly once, and exits 1 on any wrong one).
source "$(dirname "$0")/../lib.sh"
same_everywhere rust_threads "$BIN/rust_threads"
grep -qx "rust-threads: all checks passed" "$TMPD/rust_threads.native" || fail "rust_threads: no success line"
grep -q "^thread_local: \([0-9]*\) threads, \1 values created, \1 dropped, each exactly once: true$" "$TMPD/rust_threads.native" \
    || fail "rust_threads: thread-locals not dropped once each: $(grep thread_local "$TMPD/rust_threads.native")"
ok "rust_threads: identical natively and under corun (1 and default workers): $(grep '^thread_local' "$TMPD/rust_threads.native")"
