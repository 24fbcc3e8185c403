# A signal handler that blocks, run while its thread waits in an
# interruptible call (c-tests/handler_blocks.c): Redis's crash handler,
# sent SIGSEGV by its test suite while the server waits in epoll_wait,
# cancels and joins its background threads. The interrupted call's
# "a handler ran" state leaked into the handler's own waits: every park
# of the join ended at once, and the join spun for ever (Redis's
# integration/psync2 left a server at 100% CPU until SIGKILL). The same
# output natively, with interposition off, with one worker and with the
# default: the join returns, the thread was cancelled, ppoll fails with
# EINTR after the handler.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=30 same_everywhere handler "$BIN/handler_blocks"
grep -q '^joined in the handler: 8, cancelled: 8$' "$TMPD/handler.native" \
    || fail "natively: $(cat "$TMPD/handler.native")"
grep -q '^ppoll: -1 (Interrupted system call)$' "$TMPD/handler.native" \
    || fail "natively: $(cat "$TMPD/handler.native")"
ok "a handler run inside ppoll joins a cancelled thread, then ppoll fails with EINTR, natively and under corun"
