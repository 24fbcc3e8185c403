# A thread that wakes runs before a burst of never-run threads queued
# ahead of its wake-up (src/sched/run_queue.rs: ready tasks and the turns
# of never-run ones alternate, a ready one first). c-tests/woken_first.c:
# a thread waits on a semaphore, main makes 10,000 threads in a row, then
# posts it; under corun with one worker the woken thread must run before
# more than 1% of the burst has started. With one FIFO it ran after all
# 10,000: 100,000 sleepers of 1 ms all started before the first woken one
# ran, every task and stack live at once (co_bench_micro sleepers).
# c-tests/fresh_turns.c (fresh_turns.sh) checks the other side: the turns
# keep their share among ready tasks that never stop coming.
source "$(dirname "$0")/../lib.sh"
out=$(timeout -k 5 60 "$BIN/woken_first" 10000) || fail "natively: $out"
ok "natively: $out"
# Preemption off: the scenario is a burst made without a break. A loaded
# CI machine stretched the burst over many slices, main was preempted in
# its own loop, and 8,871 of the new threads ran before the post (a run of
# the suite, 2026-12-03): no burst was queued ahead of the wake-up.
out=$(CORUN_PREEMPT_MS=0 CORUN_WORKERS=1 timeout -k 5 60 env LD_PRELOAD="$LIB" "$BIN/woken_first" 10000 2>"$TMPD/err") \
    || fail "under corun: $out $(tail -3 "$TMPD/err")"
n=$(sed -n 's/.*woken one ran: \([0-9]*\) of.*/\1/p' <<<"$out")
[ -n "$n" ] || fail "no figure in: $out"
[ "$n" -le 100 ] || fail "the woken thread ran after $n of 10,000 new threads had started (at most 100 wanted): $out"
ok "1 worker: $out"
