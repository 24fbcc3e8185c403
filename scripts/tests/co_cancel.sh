# Cancel sources, tokens, callbacks (once), deadlines, run_under,
# spawn_under, scopes (first error wins, nested, deadline, free), and 19
# kinds of blocking call (read, recv, write, accept, AF_UNIX connect, poll,
# select, epoll_wait, nanosleep, usleep, sleep, clock_nanosleep, and the
# C API's waits) failing with ECANCELED when parked at the cancellation
# and when started after it (c-tests/co_cancel.c), on all workers and one.
source "$(dirname "$0")/../lib.sh"
for mode in "" "CORUN_WORKERS=1"; do
    out=$(timeout -k 5 60 env $mode LD_PRELOAD="$LIB" "$BIN/co_cancel" 2>&1) || fail "co_cancel ($mode): $out"
    [ "$out" = "co_cancel: ok" ] || fail "co_cancel ($mode) printed: $out"
done
ok "cancel tokens, scopes, and every parked call failing with ECANCELED"
