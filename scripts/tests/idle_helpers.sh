# An idle process under corun wakes about as seldom as natively, and its
# preemption monitor still wakes when work comes back
# (c-tests/idle_helpers.c; src/sched/helper_park.rs). Three threads wait
# on a condition variable while main sleeps 2 s: natively its kernel
# threads switch about once; corun's monitor and watchdog used to wake on
# their periods regardless (471 switches in those 2 s), now they park
# while every worker sleeps: at most 40 wanted. Then a thread computes
# 400 ms beside main's 20 ms sleep on one worker: the monitor must notice
# the run and preempt it (a monitor left parked: 380 ms late).
source "$(dirname "$0")/../lib.sh"
"$BIN/idle_helpers" >"$TMPD/native" || fail "idle_helpers failed natively"
for w in 1 2; do
    for try in 1 2 3; do
        CORUN_WORKERS=$w LD_PRELOAD="$LIB" timeout -s KILL 30 "$BIN/idle_helpers" \
            >"$TMPD/corun" 2>"$TMPD/corun.err" || fail "$w workers: exit $?: $(cat "$TMPD/corun.err")"
        idle=$(sed -n 's/^idle switches \([0-9]*\)$/\1/p' "$TMPD/corun")
        late=$(sed -n 's/^late \([0-9-]*\) ms$/\1/p' "$TMPD/corun")
        [ -n "$idle" ] && [ -n "$late" ] || fail "$w workers: no figures in $(cat "$TMPD/corun")"
        # The machine may be busy: a late return is retried, twice.
        [ "$idle" -le 40 ] && [ "$late" -lt 100 ] && break
        [ "$try" -lt 3 ] || fail "$w workers: $idle switches in 2 idle seconds (natively $(head -1 "$TMPD/native")), main's 20 ms sleep $late ms late beside a computing thread"
    done
    ok "$w workers: $idle switches in 2 idle seconds ($(head -1 "$TMPD/native") natively), main's sleep $late ms late"
done
