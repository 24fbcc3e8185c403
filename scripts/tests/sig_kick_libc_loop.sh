# pthread_kill of a thread that waits for its handler in a loop spent
# mostly in glibc (c-tests/sig_kick_libc_loop.c: clock_gettime as a timeout
# check). Natively each of the 20 signals is handled at once. With two
# workers the thread is alone on its worker; the kick found its pc in
# glibc (no safe point) and nothing tried again, the monitor preempting no
# lone coroutine (its retry looked at a flag an idle worker's dispatch
# had cleared): 12-17 of 20 waited the full 2 s (until the thread's
# printf). Now the trampoline marks the run per worker and the monitor
# retries while that run lasts (sched/preempt.rs, KICK_LEFT).
source "$(dirname "$0")/../lib.sh"
"$BIN/sig_kick_libc_loop" >"$TMPD/native" 2>"$TMPD/native.err" || fail "natively: $(cat "$TMPD/native" "$TMPD/native.err")"
rc=0
CORUN_WORKERS=2 LD_PRELOAD="$LIB" timeout -s KILL 120 "$BIN/sig_kick_libc_loop" \
    >"$TMPD/corun" 2>"$TMPD/corun.err" || rc=$?
[ $rc = 0 ] || fail "exit $rc: $(cat "$TMPD/corun")"
diff -u "$TMPD/native" "$TMPD/corun" || fail "not the native output"
ok "$(cat "$TMPD/corun")"
