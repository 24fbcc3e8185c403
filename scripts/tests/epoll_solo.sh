# An event-loop thread alone on its worker waits in its own epoll_wait
# (src/hooks/epoll_solo.rs): c-tests/epoll_solo.c checks what the program
# sees (only its events, wake-ups for threads made meanwhile, EINTR for a
# signal, timeouts, a set two threads share, a forked child's waits),
# natively and under corun; then, under strace, a ping-pong between two
# such threads makes about as many epoll calls as natively (parked the
# usual way it made ~5 per wake: a zero-timeout check, the worker's wait,
# the check again).
source "$(dirname "$0")/../lib.sh"
for i in 1 2 3; do
    "$BIN/epoll_solo" 2000 >/dev/null || fail "epoll_solo natively"
    corun "$BIN/epoll_solo" 2000 >"$TMPD/out" || fail "epoll_solo under corun: $(cat "$TMPD/out")"
done
for mode in native corun; do
    pre=""
    [ $mode = corun ] && pre=$LIB
    strace -f -qq -o "$TMPD/tr.$mode" env LD_PRELOAD="$pre" "$BIN/epoll_solo" 2000 >/dev/null ||
        fail "epoll_solo under strace ($mode)"
done
n=$(grep -cE ' epoll_(wait|pwait|pwait2)\(' "$TMPD/tr.native")
c=$(grep -cE ' epoll_(wait|pwait|pwait2)\(' "$TMPD/tr.corun")
echo "epoll waits for 2000 round trips: native $n, corun $c"
[ "$n" -ge 4000 ] || fail "natively only $n epoll waits (the test lost its ping-pong)"
[ "$c" -le $((n * 13 / 10 + 200)) ] || fail "corun made $c epoll waits, natively $n"
ok "event-loop threads wait in their own epoll set: $c epoll calls under corun, $n natively"
