# The preemption monitor (src/sched/preempt.rs) preempts a run that
# computes, measured in its worker thread's CPU time: a worker whose
# thread waits for a CPU (a loaded machine) in the middle of a short run
# is not computing. c-tests/preempt_short_runs.c (4 pairs of threads
# handing a token through mutex + cond, a few us of work per turn) runs
# on one worker pinned to one CPU with 3 busy processes there: no
# preemption request may be sent, and every pair's turns alternate. With
# wall time, the monitor sent a request (and read /proc/self/task/TID/stat)
# at most ticks: 16% of an Apache worker-MPM child's CPU at load 20.
source "$(dirname "$0")/../lib.sh"
command -v taskset >/dev/null || { echo "SKIP: no taskset"; exit 0; }

"$BIN/preempt_short_runs" 0.3 >"$TMPD/native" || fail "preempt_short_runs failed natively"
cpu=$(taskset -pc $$ | sed 's/.*: *//; s/[-,].*//')
hogs=()
for _ in 1 2 3; do
    taskset -c "$cpu" bash -c 'while :; do :; done' &
    hogs+=($!)
done
rc=0
CORUN_WORKERS=1 CORUN_STATS=1 timeout 60 taskset -c "$cpu" env LD_PRELOAD="$LIB" \
    "$BIN/preempt_short_runs" 3 >"$TMPD/corun" 2>"$TMPD/corun.err" || rc=$?
kill "${hogs[@]}" 2>/dev/null || true
wait "${hogs[@]}" 2>/dev/null || true
[ "$rc" = 0 ] || fail "preempt_short_runs under corun: exit $rc: $(cat "$TMPD/corun.err")"
diff -u "$TMPD/native" "$TMPD/corun" || fail "output differs from the native run's"
line=$(grep 'preemptions:' "$TMPD/corun.err") || fail "no statistics: $(cat "$TMPD/corun.err")"
sent=$(sed -n 's/.*(of \([0-9]*\) requests.*/\1/p' <<<"$line")
[ -n "$sent" ] || fail "cannot read the requests sent: $line"
[ "$sent" -eq 0 ] || fail "runs of a few us were taken for runs that compute while the worker waited for a CPU: $line"
ok "4 pairs on one worker sharing CPU $cpu with 3 busy processes: turns alternate, $(sed 's/^ *//' <<<"$line")"
