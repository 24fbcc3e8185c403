# A futex ping-pong between two threads on two workers costs about what it
# costs natively. c-tests/futex_xworker.c hands a turn between two threads
# through FUTEX_WAIT/FUTEX_WAKE; under corun with 2 workers the two threads
# are coroutines of different workers, so each wake-up crosses workers.
# Both runs are pinned to one CPU (taskset), the harshest case of a
# machine whose CPUs other programs share: a worker that went idle once
# spun 50 us for work while the other worker, woken or preempted onto the
# same CPU, waited for it: ~195 us of CPU per round trip against ~2 us
# natively. The bound compares CPU time (what a loaded machine does not
# inflate) with a wide margin: under corun at most 10x the native run's,
# plus 150 ms.
source "$(dirname "$0")/../lib.sh"
ROUNDS=20000
cpu=$(python3 -c 'import os; print(min(os.sched_getaffinity(0)))')
cpu_ms() { sed -n 's/^[0-9]* ms wall, \([0-9]*\) ms cpu$/\1/p' "$1"; }
taskset -c "$cpu" "$BIN/futex_xworker" $ROUNDS >"$TMPD/native" 2>"$TMPD/native.err" \
    || fail "natively: $(cat "$TMPD/native.err")"
grep -qx "$ROUNDS rounds each way: all done, 2 kernel threads" "$TMPD/native" \
    || fail "natively: $(cat "$TMPD/native")"
# Placement puts the two threads on two workers (main stays on worker 0);
# a run where they shared one would not test a crossing: tried again.
for try in 1 2 3; do
    CORUN_WORKERS=2 taskset -c "$cpu" env LD_PRELOAD="$LIB" "$BIN/futex_xworker" $ROUNDS \
        >"$TMPD/corun" 2>"$TMPD/corun.err" || fail "under corun: $(cat "$TMPD/corun.err")"
    ! grep -q "1 kernel thread" "$TMPD/corun" && break
done
diff -u "$TMPD/native" "$TMPD/corun" || fail "under corun the players did not run as natively (two workers, all rounds)"
native=$(cpu_ms "$TMPD/native.err")
corun=$(cpu_ms "$TMPD/corun.err")
[ -n "$native" ] && [ -n "$corun" ] || fail "no times: $(cat "$TMPD/native.err" "$TMPD/corun.err")"
echo "$ROUNDS round trips on CPU $cpu: natively $(cat "$TMPD/native.err"); under corun, 2 workers: $(cat "$TMPD/corun.err")"
[ "$corun" -le $((10 * native + 150)) ] \
    || fail "a futex ping-pong across 2 workers used $corun ms of CPU under corun against $native ms natively"
ok "futex ping-pong across workers: $corun ms CPU under corun, $native ms natively"
