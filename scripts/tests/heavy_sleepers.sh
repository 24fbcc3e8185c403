# Two threads that compute ~1 ms and sleep 50 us in turn end up on
# different workers, as natively on different CPUs (c-tests/heavy_sleepers.c):
# placement homed both on one worker in about 4 runs of 10, where they
# took turns while the other worker slept, their runs too short for a
# slice. The preemption monitor now preempts a run that a woken thread
# waits behind while another worker sleeps, and the preempted thread
# moves there (src/sched/preempt_monitor.rs `pull_to_idle`, `shed.rs`).
# Six runs with 2 workers: in each, the two share a kernel thread in at
# most 20 of their last 200 runs (the old runtime: all 200, in 5 runs of
# 12). The checksums are the native ones.
source "$(dirname "$0")/../lib.sh"
"$BIN/heavy_sleepers" >"$TMPD/native" 2>"$TMPD/native.err" || fail "natively: $(cat "$TMPD/native.err")"
want=$(grep checksums "$TMPD/native")
for run in 1 2 3 4 5 6; do
    CORUN_WORKERS=2 LD_PRELOAD="$LIB" timeout -s KILL 60 "$BIN/heavy_sleepers" \
        >"$TMPD/corun" 2>"$TMPD/corun.err" || fail "run $run: $(cat "$TMPD/corun.err")"
    got=$(grep checksums "$TMPD/corun")
    [ "$got" = "$want" ] || fail "run $run: '$got', natively '$want'"
    same=$(sed -n 's/^same kernel thread in \([0-9]*\) of.*/\1/p' "$TMPD/corun")
    [ -n "$same" ] || fail "run $run: no count in $(cat "$TMPD/corun")"
    [ "$same" -le 20 ] || fail "run $run: the two heavy threads shared a worker in $same of their last 200 runs"
    ok "run $run: shared a worker in $same of the last 200 runs"
done
