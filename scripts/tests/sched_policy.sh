# A thread sets its own policy to SCHED_BATCH or SCHED_IDLE with priority 0
# (stunnel's cron thread), reads it back, and gets EINVAL for a priority
# with them or an unknown policy (c-tests/sched_policy.c): the same
# natively and under corun. Before, a coroutine's pthread_setschedparam
# answered EPERM to all but SCHED_OTHER.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=20 same_everywhere sched_policy "$BIN/sched_policy"
grep -q '^pthread_setschedparam SCHED_BATCH 0: set 0, get 0: SCHED_BATCH priority 0$' "$TMPD/sched_policy.native" \
    || fail "natively: $(cat "$TMPD/sched_policy.native")"
ok "SCHED_BATCH/SCHED_IDLE for a thread, read back, EINVAL cases: as natively"
