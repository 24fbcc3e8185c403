# Threads that move between workers often keep their own state
# (src/sched/shed.rs): c-tests/shed_signals.cpp, seven threads taking turns
# at a lock held while computing, with exceptions, timed condition waits,
# SIGUSR1 sent to them at random every 300 us and SIGALRM to the process
# every 3 ms; each checks its thread_local values, errno, gettid and
# pthread_self, each SIGUSR1 handler that it runs in its target thread.
# Natively, with 2 workers (twice, the second with 2 ms slices: more
# preemptions, more moves) and with 4. Written by explore-v while looking
# for what the moves break; they broke none of it (800-1,500 moves a run).
source "$(dirname "$0")/../lib.sh"
"$BIN/shed_signals" >"$TMPD/native" 2>"$TMPD/native.err" || fail "natively: $(cat "$TMPD/native.err")"
for cfg in "2 10" "2 2" "4 10"; do
    set -- $cfg
    rc=0
    CORUN_WORKERS=$1 CORUN_PREEMPT_MS=$2 CORUN_STATS=1 LD_PRELOAD="$LIB" timeout -s KILL 300 \
        "$BIN/shed_signals" >"$TMPD/corun" 2>"$TMPD/corun.err" || rc=$?
    [ $rc = 0 ] || fail "$1 workers, $2 ms slices: exit $rc: $(grep -v '^ ' "$TMPD/corun.err" | head -5)"
    diff -u "$TMPD/native" "$TMPD/corun" || fail "$1 workers, $2 ms slices: not the native output"
    ok "$1 workers, $2 ms slices: $(cat "$TMPD/corun"); $(grep -o 'moved to an idle worker: [0-9]*' "$TMPD/corun.err" || echo 'none moved')"
done
