# Signal handlers interrupt sleeps and waits as the kernel does (signal(7)):
# alarm(1); sleep(2) returns early with the seconds left, nanosleep and a
# relative clock_nanosleep report the time left, poll/select/epoll_wait
# fail with EINTR even with SA_RESTART, a read goes on with SA_RESTART and
# fails without, and the masks of pselect/ppoll/epoll_pwait let SIGCHLD in
# while parked (how make waits for its children). The transcript must be
# the native one, with one worker and with the default.
source "$(dirname "$0")/../lib.sh"
timeout 30 "$BIN/sig_sleep" >"$TMPD/native" 2>&1 || fail "natively: $(cat "$TMPD/native")"
grep -q "NOT IN TIME\|WRONG" "$TMPD/native" && fail "natively (machine too loaded?): $(cat "$TMPD/native")"
for w in 1 default; do
    if [ "$w" = default ]; then
        timeout 30 env LD_PRELOAD="$LIB" "$BIN/sig_sleep" >"$TMPD/corun" 2>&1 || fail "workers=$w: $(cat "$TMPD/corun")"
    else
        CORUN_WORKERS=$w timeout 30 env LD_PRELOAD="$LIB" "$BIN/sig_sleep" >"$TMPD/corun" 2>&1 || fail "workers=$w: $(cat "$TMPD/corun")"
    fi
    diff -u "$TMPD/native" "$TMPD/corun" || fail "workers=$w: the transcript differs from the native one"
    ok "workers=$w: $(wc -l <"$TMPD/corun") lines as natively"
done
