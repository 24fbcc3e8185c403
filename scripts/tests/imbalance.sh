# Threads that compute unevenly use every worker, as natively they use
# every CPU (src/sched/shed.rs): c-tests/imbalance.c runs four threads,
# short, long, short, long; with 2 workers placement put both long ones
# on one worker, where they took turns while the other idled once the
# short ones ended (0.6-0.7 s against 0.3-0.4 s natively). A preempted
# thread now moves to a worker asleep for lack of work, so the long ones
# run on different kernel threads (looked at every tenth of their work),
# as natively. Then each long thread holds
# a process-shared error-checking mutex while it computes: glibc checks its
# owner against the descriptor's kernel tid, so such a thread never moves
# (moved, its unlock returned EPERM). Same output natively and with
# CORUN_WORKERS=2 (with one worker there is one kernel thread).
source "$(dirname "$0")/../lib.sh"
"$BIN/imbalance" >"$TMPD/native" 2>"$TMPD/native.err" || fail "natively: $(cat "$TMPD/native.err")"
for run in 1 2 3; do
    CORUN_WORKERS=2 CORUN_STATS=1 LD_PRELOAD="$LIB" timeout -s KILL 60 "$BIN/imbalance" \
        >"$TMPD/corun" 2>"$TMPD/corun.err" || fail "run $run: $(cat "$TMPD/corun.err")"
    diff -u "$TMPD/native" "$TMPD/corun" || fail "run $run: the output differs from the native one ($(grep -e wall -e moved "$TMPD/corun.err" | tr '\n' ' '))"
    ok "run $run: as natively; $(grep wall "$TMPD/corun.err" | tr '\n' ' ')(natively $(grep -o 'wall [0-9.]* s' "$TMPD/native.err" | tr '\n' ' ')); $(grep -o 'moved to an idle worker: [0-9]*' "$TMPD/corun.err" || echo 'none moved')"
done
