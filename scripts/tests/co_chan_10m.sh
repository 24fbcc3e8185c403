# 1,000 producer and 1,000 consumer coroutines move 10,000,000 distinct
# items through one channel, buffered (64) and unbuffered: every item is
# received exactly once (c-tests/co_chan_stress.c counts each value).
source "$(dirname "$0")/../lib.sh"
for cap in 64 0; do
    out=$(timeout -k 5 100 env LD_PRELOAD="$LIB" "$BIN/co_chan_stress" 1000 1000 10000000 $cap 2>&1) \
        || fail "capacity $cap: $out"
    echo "$out"
    grep -q "received 10000000, lost 0, duplicated 0" <<<"$out" || fail "capacity $cap: $out"
done
ok "10M items through channels between 1,000 producers and 1,000 consumers, none lost or duplicated"
