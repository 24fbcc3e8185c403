# A process whose calls were made as natively while it had one coroutine
# (src/sched/lone.rs) parks its threads' waits once it makes threads, and
# a forked child (alone again) does too: with one worker, a thread's read
# made as natively would hold the worker and the writer would never run.
source "$(dirname "$0")/../lib.sh"
"$BIN/lone_then_threads" >"$TMPD/native" || fail "natively: $(cat "$TMPD/native")"
CORUN_WORKERS=1 timeout 30 env LD_PRELOAD="$LIB" "$BIN/lone_then_threads" >"$TMPD/corun" ||
    fail "under corun: $(cat "$TMPD/corun")"
diff "$TMPD/native" "$TMPD/corun" || fail "transcripts differ"
[ "$(wc -l <"$TMPD/corun")" = 3 ] || fail "expected 3 rounds: $(cat "$TMPD/corun")"
cat "$TMPD/corun"
ok "alone, then threads that park, in the process and in a forked child"
