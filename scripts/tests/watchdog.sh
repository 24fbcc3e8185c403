# A coroutine that spins 500 ms makes the watchdog print one line naming
# it; an echo on the other worker keeps answering meanwhile.
source "$(dirname "$0")/../lib.sh"
export CORUN_WORKERS=2
corun "$BIN/co_multicore" stall 500 >"$TMPD/out" 2>"$TMPD/err" || fail "stall run failed: $(cat "$TMPD/out" "$TMPD/err")"
cat "$TMPD/out" "$TMPD/err"
n=$(grep -c "corun: worker .* stalled for .* in coroutine .* (started at spin_forever)" "$TMPD/err" || true)
[ "$n" = 1 ] || fail "expected one watchdog line naming spin_forever, got $n"
probe=$(sed -n 's/.*longest \([0-9.]*\) ms$/\1/p' "$TMPD/out")
awk -v p="$probe" 'BEGIN { exit !(p < 100) }' || fail "the echo on the other worker stalled ${probe} ms"
# CORUN_STALL_MS=0 turns it off.
CORUN_STALL_MS=0 corun "$BIN/co_multicore" stall 300 >/dev/null 2>"$TMPD/err2"
grep -q stalled "$TMPD/err2" && fail "watchdog printed with CORUN_STALL_MS=0"
ok "watchdog named the spinning coroutine once"
