# Blocking-pool calls that a signal interrupts natively (src/sched/blocking.rs
# `run_blocking_restartable`, src/sched/pool_kick.rs): c-tests/pool_intr.c
# waits in fcntl(F_SETLKW), fcntl(F_OFD_SETLKW), flock, lockf on locks a
# child holds, open of a FIFO with no writer, a 256 KiB write to a pty
# nobody reads, semop (plain and mixing IPC_NOWAIT), msgrcv and
# io_getevents, and signals the waiting thread five ways: pthread_kill
# with and without SA_RESTART, a process-directed SIGALRM, the signal
# blocked in the thread, the signal at SIG_IGN; then alarm(1) around
# F_SETLKW. The program asserts signal(7)'s rules itself (EINTR; restart
# under SA_RESTART for locks, open and the tty write's partial count;
# never a restart for System V IPC and io_getevents; no interruption by a
# blocked or ignored signal) and exits 1 on any difference. With every
# pooled call holding signals off until it returned, 25 of its 51 cases
# failed: the interrupted calls waited until the resource was released.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=40 same_everywhere pool_intr "$BIN/pool_intr"
grep -qx "all as signal(7) says" "$TMPD/pool_intr.native" || fail "natively: $(tail -3 "$TMPD/pool_intr.native")"
ok "$(wc -l < "$TMPD/pool_intr.native") lines the same natively, off, on 1 and default workers: $(tail -1 "$TMPD/pool_intr.native")"
