# Preempted coroutines take turns in order of the time each computed, as
# the kernel orders computing threads (src/sched/run_queue.rs): a producer
# thread and 8 consumers that spin taking its items one at a time, with no
# system call (c-tests/preempt_order.c, the pattern of crossbeam-deque's
# no_starvation test). Every consumer must get an item, as natively; with
# preempted coroutines in a FIFO the same consumer always ran just after
# the producer and took its backlog, and 2-5 of the 8 never got one (on 1
# and 2 workers; crossbeam-deque's test never ended). With slices of one
# length (10 ms, within the monitor's 1 ms tick) the order by run time
# hardly moved: on 1 worker runs took 0.1-5.5 s, and one CI run starved a
# consumer for 10 s. Slices now vary as the kernel's do
# (preempt_monitor.rs `run_slice`): 1 worker 0.9 s median, 2.9 s at most in
# 20 (natively on 1 CPU: 7 s median, 6 of 16 runs over 10 s). The bound is
# 10 s on 1 worker, 20 s on 2 (where a consumer on the producer's worker
# waits for its turn after the producer, runs of 1-15 s at load 15-40).
source "$(dirname "$0")/../lib.sh"
"$BIN/preempt_order" >"$TMPD/native" || fail "preempt_order failed natively: $(cat "$TMPD/native")"
for w in 1 2; do
    limit=$((w == 1 ? 10 : 20))
    start=$(date +%s.%N)
    CORUN_WORKERS=$w timeout 60 env LD_PRELOAD="$LIB" "$BIN/preempt_order" 100 140 "$limit" \
        >"$TMPD/w$w" || fail "preempt_order on $w worker(s): $(cat "$TMPD/w$w") (exit $?)"
    diff -u "$TMPD/native" "$TMPD/w$w" || fail "preempt_order on $w worker(s) differs"
    ok "preempt_order on $w worker(s): every consumer served in $(echo "$(date +%s.%N) - $start" | bc | cut -c1-5) s"
done
