# Blocking-pool calls that a signal interrupts natively (src/sched/blocking.rs
# `run_blocking_restartable`, src/sched/pool_kick.rs): c-tests/pool_intr.c
# waits in fcntl(F_SETLKW), fcntl(F_OFD_SETLKW), flock, lockf on locks a
# child holds, open of a FIFO with no writer, a 256 KiB write to a pty
# nobody reads, waitpid, semop (plain and mixing IPC_NOWAIT), msgrcv and
# io_getevents, and signals the waiting thread five ways: pthread_kill
# with and without SA_RESTART, a process-directed SIGALRM, the signal
# blocked in the thread, the signal at SIG_IGN; then alarm(1) around
# F_SETLKW. The program asserts signal(7)'s rules itself (EINTR; restart
# under SA_RESTART for locks, open and the tty write's partial count;
# never a restart for System V IPC and io_getevents; no interruption by a
# blocked or ignored signal) and exits 1 on any difference. With every
# pooled call holding signals off until it returned, 25 of its cases
# failed: the interrupted calls waited until the resource was released.
# Last, signal and release race (fcntl, mixed semop, msgrcv): a call that
# succeeded must hold what it took, one that failed must have taken nothing.
source "$(dirname "$0")/../lib.sh"
# Natively, then under corun on 1 and 2 workers (each run ~9 s).
for run in native w1 w2; do
    out="$TMPD/pool_intr.$run"
    rc=0
    case $run in
        native) timeout -k 5 30 "$BIN/pool_intr" >"$out" 2>"$out.err" || rc=$? ;;
        w1) timeout -k 5 30 env CORUN_WORKERS=1 LD_PRELOAD="$LIB" "$BIN/pool_intr" >"$out" 2>"$out.err" || rc=$? ;;
        w2) timeout -k 5 30 env CORUN_WORKERS=2 LD_PRELOAD="$LIB" "$BIN/pool_intr" >"$out" 2>"$out.err" || rc=$? ;;
    esac
    [ $rc = 124 ] && fail "$run: still running after 30 s: $(grep -m3 MISMATCH "$out")"
    [ $rc = 0 ] || fail "$run: exit $rc: $(grep -m5 -e MISMATCH -e never "$out")"
    [ $run = native ] || cmp -s "$TMPD/pool_intr.native" "$out" \
        || fail "$run: not the native output: $(diff "$TMPD/pool_intr.native" "$out" | head -5)"
    ok "$run: $(wc -l < "$out") cases, $(tail -1 "$out")"
done
