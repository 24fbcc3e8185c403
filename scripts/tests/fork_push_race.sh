# 1,000 forks while a thread on another worker wakes 100 threads again and
# again (c-tests/fork_push_race.c): every child exits 7, natively and under
# corun. A fork made in the middle of another thread's push to the forking
# worker's queue left the child a slot never to be written, and the child
# spun for ever draining it (src/sched/fork_injector.rs); with the library
# before the fix 3 runs in 4 had 1 or 2 children hang (killed after 10 s).
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=90 same_everywhere forks "$BIN/fork_push_race"
grep -qx "1000 forks: 1000 children exited 7, 0 hung" "$TMPD/forks.native" || fail "native: $(cat "$TMPD/forks.native")"
ok "$(cat "$TMPD/forks.wdef")"
