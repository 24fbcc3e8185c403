# 40 threads wait in flock() for a lock another process holds for 600 ms
# while a ticker thread sleeps 1 ms at a time (c-tests/pool_growth.c): the
# blocking pool grows past its 16 helpers instead of running the 17th wait
# on a worker, so every locker gets the lock and the ticker never stalls
# 100 ms; the same natively and under corun (1 and default workers).
# Before, the run hung or stalled the ticker.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=30 same_everywhere growth "$BIN/pool_growth"
grep -q "40 of 40 lockers got the lock; ticker's worst gap under 100 ms: yes" "$TMPD/growth.native" \
    || fail "natively: $(cat "$TMPD/growth.native")"
ok "$(cat "$TMPD/growth.native") ($(cat "$TMPD/growth.w1.err" | tr '\n' ' ')under corun, 1 worker)"
