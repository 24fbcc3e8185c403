# A thread that wakes beside threads that compute runs soon, as natively
# (src/sched/run_queue.rs, src/sched/preempt.rs): c-tests/
# wake_beside_compute.c makes 50 mutex/condition-variable round trips
# between main and a partner thread while 8 threads compute, on 1 and 2
# workers, within 4 s (natively 10-100 ms on a loaded 2-CPU machine). With
# one FIFO for woken and preempted coroutines every wake-up waited for each
# computing thread of its worker to use a 10 ms slice: 10-12 s (a JVM that
# starts threads beside computing ones took 28 s to start them, 2-6 s
# natively). The round trips are bounded by the program itself: it stops at
# the limit and fails.
source "$(dirname "$0")/../lib.sh"

out=$("$BIN/wake_beside_compute" 8 50 4000) || fail "natively: $out"
ok "natively: $out"
for w in 1 2; do
    out=$(CORUN_WORKERS=$w timeout 30 env LD_PRELOAD="$LIB" "$BIN/wake_beside_compute" 8 50 4000) \
        || fail "on $w workers: $out (exit $?)"
    ok "$w workers: $out"
done
