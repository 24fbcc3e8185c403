# Signal masks are per thread, and a signal goes to the thread Linux gives
# it to: a process signal to a thread that does not block it (main first),
# pthread_kill to the named thread (pending there while it blocks it, run
# when it unblocks it), sigwait in a thread that blocks it, raise to the
# caller. Same transcript natively and under corun (1 worker, default).
source "$(dirname "$0")/../lib.sh"
"$BIN/sig_masks" >"$TMPD/native" 2>&1 || fail "natively: $(cat "$TMPD/native")"
for w in 1 default; do
    if [ "$w" = default ]; then
        timeout 20 env LD_PRELOAD="$LIB" "$BIN/sig_masks" >"$TMPD/corun" 2>&1 || fail "workers=$w: $(cat "$TMPD/corun")"
    else
        CORUN_WORKERS=$w timeout 20 env LD_PRELOAD="$LIB" "$BIN/sig_masks" >"$TMPD/corun" 2>&1 \
            || fail "workers=$w: $(cat "$TMPD/corun")"
    fi
    diff -u "$TMPD/native" "$TMPD/corun" || fail "workers=$w: the transcript differs from the native one"
    ok "workers=$w: $(wc -l <"$TMPD/corun") lines as natively"
done
