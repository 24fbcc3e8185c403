# A coroutine woken from another kernel thread (corun's blocking pool,
# after its stat) runs even though two yielding threads keep its worker's
# run queue from ever draining (c-tests/busy_worker_wakes.c): natively,
# under corun with one worker and with the default workers, each bounded.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=30 same_everywhere busy_worker_wakes "$BIN/busy_worker_wakes"
ok "busy_worker_wakes: $(cat "$TMPD/busy_worker_wakes.native")"
