# Two threads that compute ~1 ms and then wait a moment, in turn, end up
# on different workers, as natively on different CPUs
# (c-tests/heavy_sleepers.c): placement homed both on one worker in about
# 4 runs of 10, where they took turns while the other worker slept, their
# runs too short for a slice. The preemption monitor now preempts a run
# that a woken thread waits behind (a due timer, a wake-up, readiness in
# the worker's epoll) while another worker sleeps, and the preempted
# thread moves there (src/sched/preempt_monitor.rs `waits_beside_idle`,
# `shed.rs`). Mode sleep (a 50 us sleep between runs) and mode io (a byte
# from a client process on a pipe), four runs each with 2 workers: in
# each, over the second half of the time both ran, at most one look in
# ten finds the other thread's latest look on the same kernel thread (the
# old runtime: all of them, in about 4 runs of 10 of either mode). Looks
# are matched by time: a count by run number failed CI once, when one
# thread ended 10 runs ahead and the other, alone, moved. The checksums
# are the native ones.
source "$(dirname "$0")/../lib.sh"
for mode in sleep io; do
    "$BIN/heavy_sleepers" $mode >"$TMPD/native" 2>"$TMPD/native.err" || fail "$mode, natively: $(cat "$TMPD/native.err")"
    want=$(grep checksums "$TMPD/native")
    for run in 1 2 3 4; do
        CORUN_WORKERS=2 LD_PRELOAD="$LIB" timeout -s KILL 60 "$BIN/heavy_sleepers" $mode \
            >"$TMPD/corun" 2>"$TMPD/corun.err" || fail "$mode, run $run: $(cat "$TMPD/corun.err")"
        got=$(grep checksums "$TMPD/corun")
        [ "$got" = "$want" ] || fail "$mode, run $run: '$got', natively '$want'"
        read -r same looks < <(sed -n 's/^same kernel thread at \([0-9]*\) of \([0-9]*\) late looks$/\1 \2/p' "$TMPD/corun")
        [ -n "$same" ] && [ "$looks" -ge 100 ] || fail "$mode, run $run: no count in $(cat "$TMPD/corun")"
        [ $((same * 10)) -le "$looks" ] || fail "$mode, run $run: the two heavy threads shared a worker at $same of $looks late looks"
        ok "$mode, run $run: shared a worker at $same of $looks late looks"
    done
done
