# Zero-timeout poll/ppoll/select/pselect never fail with EINTR in a program
# that receives no signal (c-tests/poll_zero_eintr.c): corun's preemption
# monitor sends its SIGURG to a worker whose coroutine runs past 1 ms while
# a timer there is due, and the kernel fails a poll or select it lands in
# with EINTR; corun makes such a call again when no handler of the
# program's ran (src/hooks/poll.rs, `instant`). A ticker thread keeps a
# timer due while main makes the calls for 250 ms each. Before, 3-52
# EINTRs per call kind on one worker, and hooks_poll's 100 ms select once
# ended with EINTR (its sets untouched). The same output natively, with
# interposition off, with one worker and with the default.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=30 same_everywhere eintr "$BIN/poll_zero_eintr"
[ "$(grep -c ': 0 EINTR, no other error$' "$TMPD/eintr.native")" = 4 ] \
    || fail "natively: $(cat "$TMPD/eintr.native")"
ok "zero-timeout poll, ppoll, select, pselect: no EINTR under corun ($(tr '\n' ' ' <"$TMPD/eintr.w1.err")on 1 worker)"
