# A process forked from a fiber (swapcontext onto a stack the program
# mapped) forks again from a fiber and waits for that child as Ruby does:
# a SIGCHLD handler writes a pipe the waiter polls, then waitpid
# (c-tests/fork_from_fiber.c; Ruby 3.1's TestFiber#test_fork_from_fiber).
# Under corun the child's handler never ran (the signal landed on a stack
# that was neither the coroutine's nor the scheduler's and was left
# pending): same output natively and under corun with 1 and 2 workers,
# every handler ran and every child exited 0.
source "$(dirname "$0")/../lib.sh"
"$BIN/fork_from_fiber" >"$TMPD/native" 2>&1 || fail "failed natively: $(cat "$TMPD/native")"
for w in 1 2; do
    CORUN_WORKERS=$w corun "$BIN/fork_from_fiber" >"$TMPD/corun$w" 2>&1 \
        || fail "failed under corun with $w workers: $(cat "$TMPD/corun$w")"
    diff -u "$TMPD/native" "$TMPD/corun$w" || fail "corun ($w workers) differs from native"
done
[ "$(grep -c 'handler ran, child exited 0$' "$TMPD/corun2")" = 2 ] || fail "a level's wait did not end well"
ok "fork from a fiber in a child forked from a fiber: SIGCHLD handlers run, natively and under corun"
