# Threads on stacks the program allocated (pthread_attr_setstack, and
# setstackaddr + setstacksize) run on that memory: a local's address is
# inside it, pthread_getattr_np reports it exactly, deep recursion, a pipe
# read and a sleep (parks) and the join work there; the memory is reused
# for the next threads, then unmapped / freed after the join
# (c-tests/setstack.c, src/ctx/stack.rs GuardedStack::program). Before,
# the coroutine ran on a corun stack of that size.
source "$(dirname "$0")/../lib.sh"
out=$(timeout -k 5 20 "$BIN/setstack" 2>&1) || fail "natively: $out"
for w in 1 2; do
    out=$(CORUN_WORKERS=$w timeout -k 5 20 env LD_PRELOAD="$LIB" "$BIN/setstack" 6 2>&1) \
        || fail "$w worker(s): $out"
    [ "$out" = "setstack: ok" ] || fail "$w worker(s): $out"
    ok "$w worker(s): $out"
done
