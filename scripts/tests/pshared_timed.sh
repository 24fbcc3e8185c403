# Timed waits on process-shared and robust mutexes, a process-shared rwlock
# and semaphore held past the deadline (c-tests/pshared_timed.c): each
# returns ETIMEDOUT after about the time asked, on the realtime and the
# monotonic clock, and at once for a deadline already past; the same
# natively and under corun (1 and default workers). Before, every such
# wait with a realtime deadline (pthread_mutex_timedlock, sem_timedwait,
# pthread_rwlock_timed*) spun for ever at 100% CPU once it timed out.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=20 same_everywhere pshared_timed "$BIN/pshared_timed"
[ "$(grep -c 'ETIMEDOUT, waited as asked: yes' "$TMPD/pshared_timed.native")" = 30 ] || fail "natively: $(cat "$TMPD/pshared_timed.native")"
ok "30 timed waits end with ETIMEDOUT as natively"
