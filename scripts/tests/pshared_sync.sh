# Process-shared and robust mutexes, process-shared rwlocks and
# semaphores, and a named semaphore and mutex shared by two processes,
# each waited for while its holder sleeps (c-tests/pshared_sync.c): the
# same natively and under corun (1 and default workers). Before, the
# waiter blocked its worker in glibc's futex wait and, with one worker,
# the holder never woke: the run hung.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=20 same_everywhere pshared "$BIN/pshared_sync"
[ "$(grep -c 'others ran meanwhile: yes' "$TMPD/pshared.native")" = 6 ] || fail "natively: $(cat "$TMPD/pshared.native")"
ok "$(tail -1 "$TMPD/pshared.native")"
