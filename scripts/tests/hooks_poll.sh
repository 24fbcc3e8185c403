# poll/ppoll/select/pselect/epoll_wait/epoll_pwait/epoll_pwait2 and the
# fortified __poll_chk/__ppoll_chk: the transcript of c-tests/hooks_poll.c
# under corun (one worker, every wait parked) is the native one, revents
# and all; then the same on a terminal under script(1), with a line typed
# later.
source "$(dirname "$0")/../lib.sh"
same_transcript hooks_poll
syms=$(nm "$BIN/hooks_poll")
for f in __poll_chk __ppoll_chk epoll_pwait2; do
    grep -q "U $f" <<<"$syms" || fail "hooks_poll does not call $f"
done
ok "hooks_poll: $(wc -l <"$TMPD/hooks_poll.native") lines, same transcript natively and under corun"

command -v script >/dev/null || fail "script(1) missing (scripts/deps.sh installs bsdutils)"
on_tty() {
    # The echo of the typed line is left out: its place depends on when it came.
    (sleep 1; echo hi) | script -qec "$*" /dev/null | tr -d '\r' | grep -v '^hi$'
}
on_tty "$BIN/hooks_poll tty" >"$TMPD/tty.native" || fail "tty run failed natively: $(cat "$TMPD/tty.native")"
for try in 1 2 3; do
    if on_tty env CORUN_WORKERS=1 LD_PRELOAD="$LIB" "$BIN/hooks_poll" tty >"$TMPD/tty.corun"; then
        break
    fi
    grep -q "NOT PARKED" "$TMPD/tty.corun" && [ "$try" -lt 3 ] && continue
    fail "tty run failed under corun: $(cat "$TMPD/tty.corun")"
done
grep -q "under corun: .* 0 waits not parked" "$TMPD/tty.corun" || fail "tty run did not run under corun: $(cat "$TMPD/tty.corun")"
diff -u "$TMPD/tty.native" <(grep -v '^under corun:' "$TMPD/tty.corun") || fail "tty transcript differs under corun"
ok "hooks_poll on a terminal: same transcript natively and under corun"
