# Timed waits on objects only glibc may take (named and process-shared
# semaphores, process-shared and robust mutexes, a process-shared rwlock)
# end with ETIMEDOUT at their deadline, and a signal handler ends a
# semaphore wait with EINTR as the kernel ends glibc's (always with a
# timeout, only without SA_RESTART without one), c-tests/pshared_timeout.c:
# the same natively and under corun. Before, a CLOCK_REALTIME deadline
# never passed in the back-off loop (the first wait hung: CPython's
# multiprocessing Condition.wait(timeout) never returned), and a handler
# never ended a named or process-shared semaphore wait (a child's SIGINT
# left the parent in Condition.wait(60) for the whole minute).
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=20 same_everywhere pshared_timeout "$BIN/pshared_timeout"
grep -q 'in time: no' "$TMPD/pshared_timeout.native" && fail "natively: $(grep 'in time: no' "$TMPD/pshared_timeout.native")"
[ "$(grep -c 'Interrupted system call' "$TMPD/pshared_timeout.native")" = 6 ] || fail "natively: $(cat "$TMPD/pshared_timeout.native")"
ok "$(grep -c . "$TMPD/pshared_timeout.native") lines as natively: 9 timeouts, 6 EINTR"
