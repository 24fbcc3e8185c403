# pthread_cancel ends an epoll_wait(-1) of a thread alone on its worker
# (corun's solo wait, src/sched/solo.rs) as natively: joined as
# PTHREAD_CANCELED, cleanup handlers run; it hung before on 2 workers and
# more. Then the C API's cancel tokens with 16 workers (every blocked call
# of co_cancel.c alone on a worker): 19 runs of 30 hung before.
source "$(dirname "$0")/../lib.sh"
prog="$BIN/cancel_epoll_alone"
[ "$(timeout 30 "$prog")" = "cancel_epoll_alone: ok" ] || fail "natively"
for w in 1 2 4; do
    out=$(CORUN_WORKERS=$w LD_PRELOAD="$LIB" timeout 30 "$prog" 2>&1) || fail "$w workers: exit $? (a join hung?): $out"
    [ "$out" = "cancel_epoll_alone: ok" ] || fail "$w workers: $out"
done
for i in 1 2 3 4 5; do
    out=$(CORUN_WORKERS=16 LD_PRELOAD="$LIB" timeout 30 "$BIN/co_cancel" 2>&1) || fail "co_cancel, 16 workers, run $i: exit $?: $out"
    [ "$out" = "co_cancel: ok" ] || fail "co_cancel, 16 workers, run $i: $out"
done
ok "pthread_cancel and cancel tokens end a thread's solo epoll_wait"
