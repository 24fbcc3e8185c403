# io_uring rings are tied to the kernel task that made or used them
# (c-tests/uring_moves.c): a SINGLE_ISSUER or DEFER_TASKRUN ring takes
# submissions from its creator only, a registered ring fd is in the
# registering task's table only. Six threads make a ring each, compute
# unevenly, submit and wait, ten times. With shed.rs (a preempted thread
# moves to an idle worker) a thread that moved got -EEXIST (File exists)
# or -EBADF from io_uring_submit, 2-4 threads a run with 2 or 4 workers;
# before shed.rs a thread never changed worker. A thread that makes a
# liburing call corun sees (or a raw io_uring system call) now stays on
# its worker (sched::bind_to_kernel_thread).
source "$(dirname "$0")/../lib.sh"
[ -x "$BIN/uring_moves" ] || { ok "skipped: no liburing (make deps)"; exit 0; }
for args in "0x1000" "0x3000" "0 reg"; do
    # shellcheck disable=SC2086
    "$BIN/uring_moves" $args >"$TMPD/native" 2>&1 || { ok "skipped ($args): natively $(cat "$TMPD/native")"; continue; }
    for w in 2 4; do
        rc=0
        # shellcheck disable=SC2086
        CORUN_WORKERS=$w LD_PRELOAD="$LIB" timeout -s KILL 120 "$BIN/uring_moves" $args \
            >"$TMPD/corun" 2>"$TMPD/corun.err" || rc=$?
        [ $rc = 0 ] || fail "$args, $w workers: exit $rc: $(cat "$TMPD/corun")"
        diff -u "$TMPD/native" "$TMPD/corun" || fail "$args, $w workers: not the native output"
        ok "$args, $w workers: $(cat "$TMPD/corun")"
    done
done
