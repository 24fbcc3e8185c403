# Process-shared and robust mutexes, process-shared rwlocks and
# semaphores, a process-shared condition variable's timed wait, a named
# semaphore and mutex shared by two processes, and two processes handing a
# turn back and forth through a process-shared condition variable and
# meeting at a process-shared barrier, each waited for while the other
# side sleeps (c-tests/pshared_sync.c): the same natively and under corun
# (1 and default workers), and a ticker thread runs during every wait.
# Before, the waiter blocked its worker in glibc's futex wait and, with
# one worker, the holder never woke (the run hung) or the ticker stopped
# (condition variables, barriers).
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=20 same_everywhere pshared "$BIN/pshared_sync"
[ "$(grep -c 'others ran meanwhile: yes' "$TMPD/pshared.native")" = 9 ] || fail "natively: $(cat "$TMPD/pshared.native")"
ok "$(tail -1 "$TMPD/pshared.native")"
