# Waits for AIO completions through raw system calls (c-tests/aio_getevents.c):
# io_getevents and io_pgetevents with min_nr = 1 on an IOCB_CMD_POLL of a
# pipe that a thread writes to 200 ms later return the poll's event, and a
# ticker thread runs meanwhile (under corun the wait goes to the blocking
# pool: made on the worker, it stopped every other coroutine there, and
# with one worker the writer too, so it never ended); min_nr = 0 returns
# at once. The same natively and under corun (1 and default workers).
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=20 same_everywhere aio "$BIN/aio_getevents"
[ "$(grep -c 'POLLIN yes, pipe read "aio!" (4), others ran meanwhile: yes' "$TMPD/aio.native")" = 2 ] \
    || fail "natively: $(cat "$TMPD/aio.native")"
grep -qx "io_getevents once ready: 1 event(s), POLLIN yes" "$TMPD/aio.native" || fail "natively: $(cat "$TMPD/aio.native")"
ok "$(head -1 "$TMPD/aio.native")"
