# A named semaphore waited for by threads of processes that have other
# threads (c-tests/pshared_sem_wake.c): a 400 ms wait for another process's
# post sleeps (few voluntary context switches of the waiting thread), two
# processes hand a turn back and forth 2,000 times, and nine waiters in
# three processes take 609 tokens posted one at a time, none lost: the
# same natively and under corun. The waits sleep until the watcher thread
# passes the kernel's wake on (src/sched/sync/shared_watch.rs); before,
# the waiter retried on a 1 ms timer: 340-370 switches in the 400 ms wait,
# a round trip 150-190 us against 2-10 us natively.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=60 same_everywhere pshared_sem_wake "$BIN/pshared_sem_wake"
grep -q '^a 400 ms wait: posted, fewer than 30 voluntary context switches: yes$' "$TMPD/pshared_sem_wake.native" \
    || fail "natively: $(cat "$TMPD/pshared_sem_wake.native" "$TMPD/pshared_sem_wake.native.err")"
ok "$(tr '\n' ';' <"$TMPD/pshared_sem_wake.native"); under corun: $(cat "$TMPD/pshared_sem_wake.wdef.err")"
