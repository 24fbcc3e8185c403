# The read-timeout pattern: a SIGALRM handler leaves a blocked read with
# siglongjmp, 1,000 times in main and 1,000 times in a thread (main blocks
# SIGALRM and joins), while another thread ticks. Afterwards SIGALRM is not
# left blocked and reads and sleeps still work. As natively, with one
# worker and with the default.
source "$(dirname "$0")/../lib.sh"
timeout 60 "$BIN/sig_jump" >"$TMPD/native" 2>&1 || fail "natively: $(cat "$TMPD/native")"
for w in 1 default; do
    if [ "$w" = default ]; then
        timeout 60 env LD_PRELOAD="$LIB" "$BIN/sig_jump" >"$TMPD/corun" 2>&1 || fail "workers=$w: $(cat "$TMPD/corun")"
    else
        CORUN_WORKERS=$w timeout 60 env LD_PRELOAD="$LIB" "$BIN/sig_jump" >"$TMPD/corun" 2>&1 \
            || fail "workers=$w: $(cat "$TMPD/corun")"
    fi
    diff -u "$TMPD/native" "$TMPD/corun" || fail "workers=$w: output differs from native"
    ok "workers=$w: $(tail -1 "$TMPD/corun")"
done
