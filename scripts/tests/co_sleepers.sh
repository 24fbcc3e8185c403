# 10,000 coroutines each sleeping 10 ms finish together: each slept at least
# 10 ms (checked inside), and all of them within 2 s of wall time, which only
# concurrent sleeping allows (sequentially it would take 100 s).
source "$(dirname "$0")/../lib.sh"
out=$(corun "$BIN/co_sleepers" 10000 10) || fail "sleepers failed: $out"
echo "$out"
wall=$(echo "$out" | sed -n 's/.*wall \([0-9.]*\) ms.*/\1/p')
[ -n "$wall" ] || fail "no wall time in output"
awk -v w="$wall" 'BEGIN { exit !(w < 2000) }' || fail "10,000 x 10 ms sleeps took $wall ms (bound 2000 ms)"
# Sub-millisecond sleeps are not rounded up to a millisecond.
out=$(corun "$BIN/co_sleepers" 100 0) || fail "zero sleeps failed"
ok "10,000 concurrent sleepers in $wall ms"
