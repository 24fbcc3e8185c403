# Threads that compute in short turns (work, then sched_yield) share the
# CPUs evenly, as natively, even when one worker holds most of them
# (c-tests/yield_fairness.c: 24 threads made, all but 3 of those not on
# main's worker end, the rest make turns for 1.5 s). Before, each thread
# kept the worker it had first run on: the ~12 threads on main's worker
# took turns there while the 3 on the other worker had it to themselves,
# 4.0x the turns of the others. A worker now hands the newest of its ready
# threads to a worker with far fewer (src/sched/balance.rs). 2 workers,
# four runs: the most turns any thread made is at most 2x the fewest
# (natively, the 3 threads it keeps: 1.2x).
source "$(dirname "$0")/../lib.sh"
for run in 1 2 3 4; do
    CORUN_WORKERS=2 LD_PRELOAD="$LIB" timeout -s KILL 60 "$BIN/yield_fairness" \
        >"$TMPD/out" 2>"$TMPD/err" || fail "run $run: $(cat "$TMPD/err" "$TMPD/out")"
    line=$(cat "$TMPD/out")
    n=$(sed -n 's/^threads \([0-9]*\), most.*/\1/p' "$TMPD/out")
    ratio=$(sed -n 's/.*most\/fewest turns \([0-9.]*\) .*/\1/p' "$TMPD/out")
    [ -n "$n" ] && [ -n "$ratio" ] || fail "run $run: unexpected output: $line"
    [ "$n" -gt 6 ] || fail "run $run: only $n threads ran ($line): placement put nearly all away from main's worker"
    awk -v r="$ratio" 'BEGIN { exit !(r <= 2.0) }' || fail "run $run: $line: the threads did not share the workers evenly"
    ok "run $run: $line"
done
