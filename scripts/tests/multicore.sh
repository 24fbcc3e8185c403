# Several workers: CPU-bound coroutines spread over them; a coroutine never
# changes kernel thread across parks; cross-worker wake-ups are exact.
source "$(dirname "$0")/../lib.sh"
export CORUN_WORKERS=2
out=$(corun "$BIN/co_multicore" cpu 4 2>/dev/null) || fail "cpu: $out"
echo "$out"
echo "$out" | grep -q "ran on 2 kernel threads" || fail "4 CPU-bound coroutines did not use both workers"
# pairs MODE ROUNDS: every run must keep each coroutine on its thread and
# count every wake-up; at least one pair must span the two workers for the
# run to cover cross-worker wake-ups. Placement spreads a spawn only while
# the spawner has not held its worker for 2 ms (spawn.rs): on a loaded
# machine main's worker may lose its CPU while it spawns and keep all the
# pairs, so a run where no pair crossed is retried (at most 5 runs).
pairs() {
    local mode=$1 rounds=$2 n=$3 try
    for try in 1 2 3 4 5; do
        out=$(corun "$BIN/co_multicore" "$mode" "$n" "$rounds" 2>/dev/null) || fail "$mode: $out"
        echo "$out"
        echo "$out" | grep -q " 0 thread changes" || fail "a coroutine changed thread: $out"
        echo "$out" | grep -q "$((2 * n * rounds)) wake-ups counted (expected $((2 * n * rounds)))" || fail "$out"
        echo "$out" | grep -qE "\(0 on different threads\)" || return 0
    done
    fail "$mode: in 5 runs no pair spanned two workers"
}
pairs pinned 5000 8
pairs wakes 250000 2
ok "multi-worker placement, pinning and wake-ups"
