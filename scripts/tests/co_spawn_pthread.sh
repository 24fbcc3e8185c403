# A corun_spawn coroutine that makes a pthread and reads its timer slack
# and nice value (c-tests/co_spawn_pthread.c): the thread inherits main's
# values. The new thread's record was made from its creator's, and
# looking that up made the creator's record, whose making looked it up
# again: the coroutine overflowed its stack and corun aborted. 1 worker
# and 2.
source "$(dirname "$0")/../lib.sh"
for w in 1 2; do
    out=$(CORUN_WORKERS=$w LD_PRELOAD="$LIB" timeout -s KILL 20 "$BIN/co_spawn_pthread" 2>&1) \
        || fail "workers=$w: exit $?: $out"
    [ "$(grep -c "main's, nice main's" <<<"$out")" = 2 ] || fail "workers=$w: $out"
    ok "workers=$w: $(tr '\n' ';' <<<"$out")"
done
