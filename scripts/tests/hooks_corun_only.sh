# The promises that have no native counterpart to compare with: close()
# wakes a parked read/poll/accept/epoll_wait with EBADF (natively it would
# hang), a reused fd number gets no stale wake-up, a signal reaches a
# parked coroutine (EINTR), and hooks pass through in a constructor, a signal
# handler and a native thread (CORUN_THREADS=native keeps that thread one).
source "$(dirname "$0")/../lib.sh"
CORUN_WORKERS=1 CORUN_THREADS=native corun "$BIN/hooks_corun_only" >"$TMPD/out" 2>"$TMPD/err" \
    || fail "$(cat "$TMPD/err") (after: $(tail -1 "$TMPD/out"))"
cat "$TMPD/out"
ok "hooks_corun_only: $(grep -c '^ok:' "$TMPD/out") promises kept"
