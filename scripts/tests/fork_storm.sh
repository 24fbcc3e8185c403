# 300 forks while other threads signal a condition variable and create and
# join threads (c-tests/fork_storm.c): every child can use the condition
# variable and make and join a thread, as natively. Before, a child could
# hang on one of corun's locks (the futex table, the thread table, the TLS
# pool) held at the fork by a thread that does not exist in the child.
source "$(dirname "$0")/../lib.sh"
for round in 1 2; do
    RUN_TIMEOUT=60 same_everywhere "storm$round" "$BIN/fork_storm"
done
ok "$(cat "$TMPD/storm1.native")"
