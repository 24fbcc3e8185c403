# A coroutine's futex wait (syscall(SYS_futex, FUTEX_WAIT...)) parks the
# coroutine and lets the other run at once: c-tests/futex_pingpong.c hands
# a turn between two threads 20,000 times each way through FUTEX_WAIT and
# FUTEX_WAKE, natively and under corun with one worker (both threads are
# then coroutines of one kernel thread). corun's check of the word before
# a park was once a FUTEX_WAIT with a deadline already past, which left
# the thread off its CPU until a timer fired: 12 s against 0.36 s natively,
# and GLib's 1bit-mutex test 4x slower than natively. The bound is loose
# (5x the native run, plus 1 s): a loaded machine slows both runs alike.
source "$(dirname "$0")/../lib.sh"
ROUNDS=20000
"$BIN/futex_pingpong" $ROUNDS >"$TMPD/native" 2>"$TMPD/native.err" || fail "natively: $(cat "$TMPD/native.err")"
CORUN_WORKERS=1 corun "$BIN/futex_pingpong" $ROUNDS >"$TMPD/corun" 2>"$TMPD/corun.err" || fail "under corun: $(cat "$TMPD/corun.err")"
diff -u "$TMPD/native" "$TMPD/corun" || fail "the rounds under corun differ from the native ones"
native=$(sed -n 's/^\([0-9]*\) ms$/\1/p' "$TMPD/native.err")
corun=$(sed -n 's/^\([0-9]*\) ms$/\1/p' "$TMPD/corun.err")
[ -n "$native" ] && [ -n "$corun" ] || fail "no times: $(cat "$TMPD/native.err" "$TMPD/corun.err")"
echo "$(cat "$TMPD/native"): natively $native ms, under corun (1 worker) $corun ms"
[ "$corun" -le $((5 * native + 1000)) ] || fail "$((2 * ROUNDS)) futex waits took $corun ms under corun against $native ms natively"
ok "$((2 * ROUNDS)) futex waits: $corun ms under corun, $native ms natively"
