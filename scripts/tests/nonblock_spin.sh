# A thread retrying reads that fail with EAGAIN (its own O_NONBLOCK, or
# MSG_DONTWAIT) until another thread's byte arrives gets it, natively and
# under corun with one worker and the default (c-tests/nonblock_spin.c):
# read, readv, recv, recvfrom, recvmsg. Before, the spinning coroutine
# held its worker and the writer homed there never ran (the program gives
# up after 10 s); now a failed attempt after a 2 ms slice yields
# (src/sched/slice.rs).
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=60 same_everywhere nbspin "$BIN/nonblock_spin"
[ "$(grep -c "the byte came" "$TMPD/nbspin.native")" = 5 ] || fail "natively: $(cat "$TMPD/nbspin.native")"
ok "read, readv, recv, recvfrom, recvmsg: the byte came in every run"
