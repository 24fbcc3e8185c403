# Several workers: CPU-bound coroutines spread over them; a coroutine never
# changes kernel thread across parks; cross-worker wake-ups are exact.
source "$(dirname "$0")/../lib.sh"
export CORUN_WORKERS=2
out=$(corun "$BIN/co_multicore" cpu 4 2>/dev/null) || fail "cpu: $out"
echo "$out"
echo "$out" | grep -q "ran on 2 kernel threads" || fail "4 CPU-bound coroutines did not use both workers"
out=$(corun "$BIN/co_multicore" pinned 8 5000 2>/dev/null) || fail "a coroutine changed thread: $out"
echo "$out"
echo "$out" | grep -q " 0 thread changes" || fail "$out"
echo "$out" | grep -qE "\(0 on different threads\)" && fail "no pair spanned two workers: $out"
out=$(corun "$BIN/co_multicore" wakes 2 250000 2>/dev/null) || fail "wakes: $out"
echo "$out"
echo "$out" | grep -q "1000000 wake-ups counted (expected 1000000)" || fail "$out"
echo "$out" | grep -qE "\(0 on different threads\)" && fail "no pair spanned two workers: $out"
ok "multi-worker placement, pinning and wake-ups"
