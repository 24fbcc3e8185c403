# A signal another thread of the process receives reaches main, the only
# thread that takes it, while main sleeps in nanosleep (c-tests/
# sig_kick_alone.c). With two workers and main the only coroutine left,
# SIGUSR2 sent to the second worker's thread was handed to main with a
# kick that found main in glibc (not a safe point to preempt at), and was
# left for a preemption the monitor never makes for the only coroutine:
# the handler never ran. Run three times (the kick may land in main's own
# code, where it was handled).
source "$(dirname "$0")/../lib.sh"
"$BIN/sig_kick_alone" >"$TMPD/native" 2>"$TMPD/native.err" || fail "natively: $(tail -3 "$TMPD/native")"
for run in 1 2 3; do
    rc=0
    CORUN_WORKERS=2 timeout -k 5 120 env LD_PRELOAD="$LIB" "$BIN/sig_kick_alone" wait-for-worker \
        >"$TMPD/corun" 2>"$TMPD/corun.err" || rc=$?
    [ $rc = 0 ] || fail "run $run: exit $rc: $(tail -2 "$TMPD/corun")"
    diff -u "$TMPD/native" "$TMPD/corun" || fail "run $run: not the native output"
    grep -q "another thread: 20" "$TMPD/corun.err" \
        || fail "run $run: no other thread took the signal: $(cat "$TMPD/corun.err")"
    ok "run $run: $(tail -1 "$TMPD/corun"), $(cat "$TMPD/corun.err")"
done
