# sem_post from a signal handler (async-signal-safe) wakes a thread waiting
# in sem_wait: a 20 us interval timer posts, main takes SIG_SEM_ROUNDS
# (default 100,000) posts, retrying on EINTR, while another thread waits on
# a condition variable. With one worker and the default; output as native
# (stdout: main busy taking posts in place for 100 ms makes the watchdog
# speak on stderr, which is not the program's output).
source "$(dirname "$0")/../lib.sh"
R="${SIG_SEM_ROUNDS:-100000}"
timeout 60 "$BIN/sig_sem" "$R" >"$TMPD/native" 2>"$TMPD/err" || fail "natively: $(cat "$TMPD/native" "$TMPD/err")"
for w in 1 default; do
    t0=$(date +%s%N)
    if [ "$w" = default ]; then
        timeout 90 env LD_PRELOAD="$LIB" "$BIN/sig_sem" "$R" >"$TMPD/corun" 2>"$TMPD/err" \
            || fail "workers=$w: $(cat "$TMPD/corun" "$TMPD/err")"
    else
        CORUN_WORKERS=$w timeout 90 env LD_PRELOAD="$LIB" "$BIN/sig_sem" "$R" >"$TMPD/corun" 2>"$TMPD/err" \
            || fail "workers=$w: $(cat "$TMPD/corun" "$TMPD/err")"
    fi
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    diff -u "$TMPD/native" "$TMPD/corun" || fail "workers=$w: output differs from native"
    ok "workers=$w: $R rounds in $ms ms"
done
