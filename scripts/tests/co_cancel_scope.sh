# A scope of 10,000 coroutines parked in read, accept, nanosleep and
# corun_chan_recv (2,500 each) is cancelled: every call fails with
# ECANCELED and corun_scope_wait returns within 50 ms of corun_scope_cancel.
# The machine is shared (2 CPUs): the best of up to 3 runs counts.
source "$(dirname "$0")/../lib.sh"
ulimit -n 12000
best=""
for try in 1 2 3; do
    out=$(timeout -k 5 60 env LD_PRELOAD="$LIB" "$BIN/co_cancel_scope" 10000 2>"$TMPD/err") \
        || fail "co_cancel_scope: $out $(cat "$TMPD/err")"
    echo "$out"
    ms=$(sed -n 's/.* in \([0-9.]*\) ms.*/\1/p' <<<"$out")
    [ -n "$ms" ] || fail "no time in: $out"
    if awk -v m="$ms" 'BEGIN { exit !(m <= 50) }'; then best=$ms; break; fi
done
[ -n "$best" ] || fail "cancelling 10,000 parked coroutines took more than 50 ms in 3 runs"
ok "10,000 coroutines in read/accept/nanosleep/chan_recv cancelled in $best ms (bound 50 ms)"
