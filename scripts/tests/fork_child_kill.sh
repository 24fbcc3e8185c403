# A forked child's signals to its own threads (pthread_kill: to itself, to
# a thread it made, a default-action SIGTERM that ends it) behave as
# natively: the child's worker thread has a new tid, and corun must aim
# at that one, not at the parent's thread it was forked from.
source "$(dirname "$0")/../lib.sh"
"$BIN/fork_child_kill" >"$TMPD/native" || fail "natively: $(cat "$TMPD/native")"
grep -q "child killed by SIGTERM" "$TMPD/native" || fail "natively: $(cat "$TMPD/native")"
for w in 1 2; do
    CORUN_WORKERS=$w timeout 20 env LD_PRELOAD="$LIB" "$BIN/fork_child_kill" >"$TMPD/corun" \
        || fail "under corun ($w workers): $(cat "$TMPD/corun")"
    diff "$TMPD/native" "$TMPD/corun" || fail "transcripts differ ($w workers)"
done
cat "$TMPD/corun"
ok "a forked child's pthread_kill reaches its own threads"
