# liburing's waits (c-tests/hooks_io_uring.c: io_uring_wait_cqe(_nr),
# io_uring_wait_cqe_timeout, io_uring_submit_and_wait(_timeout), a thread
# waiting on a ring main submits to, a ring made again): the transcript
# under corun is the native one, with one worker (every wait parked: see
# transcript.h; a wait that blocked the worker would never see main's
# submission) and with the default worker count.
source "$(dirname "$0")/../lib.sh"
[ -x "$BIN/hooks_io_uring" ] || fail "$BIN/hooks_io_uring was not built (make deps installs liburing-dev)"
same_transcript hooks_io_uring
# A "NOT PARKED" may be a loaded machine that gave the ticker's worker no
# CPU during the wait (same_transcript allows three runs for the same
# reason): a wait that really blocks does so every time.
for try in 1 2 3; do
    timeout -k 5 60 env LD_PRELOAD="$LIB" "$BIN/hooks_io_uring" >"$TMPD/default.out" 2>"$TMPD/default.err" && break
    grep -q "NOT PARKED" "$TMPD/default.err" && [ "$try" -lt 3 ] && continue
    fail "hooks_io_uring (default workers): $(tail -3 "$TMPD/default.err")"
done
diff -u "$TMPD/hooks_io_uring.native" "$TMPD/default.out" || fail "hooks_io_uring (default workers) differs from native"
if grep -q '^queue_init = -' "$TMPD/hooks_io_uring.native"; then
    ok "hooks_io_uring: io_uring is not available here ($(head -1 "$TMPD/hooks_io_uring.native")): nothing waited"
else
    ok "hooks_io_uring: $(wc -l <"$TMPD/hooks_io_uring.native") lines, same transcript natively and under corun (1 worker, default)"
fi
