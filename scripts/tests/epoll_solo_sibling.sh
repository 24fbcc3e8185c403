# An event loop keeps its own epoll_wait when other threads of its worker
# wait on a condition variable (src/sched/solo.rs): Redis's background
# threads took it from its loop whenever one was homed on the loop's
# worker (four epoll calls a wait instead of one). c-tests/epoll_solo_sibling.c
# with every thread on one worker (CORUN_WORKERS=1): its 400 waits of 1 ms
# make about as many epoll calls as natively; a thread it signals runs; a
# thread of the same worker blocked on a pipe still gets its data while
# the loop waits.
source "$(dirname "$0")/../lib.sh"
ROUNDS=400
"$BIN/epoll_solo_sibling" $ROUNDS >"$TMPD/out" || fail "natively: $(cat "$TMPD/out")"
for i in 1 2 3; do
    CORUN_WORKERS=1 corun "$BIN/epoll_solo_sibling" $ROUNDS >"$TMPD/out" ||
        fail "under corun: $(cat "$TMPD/out")"
done
for mode in native corun; do
    pre=""
    [ $mode = corun ] && pre=$LIB
    strace -f -qq -o "$TMPD/tr.$mode" env CORUN_WORKERS=1 LD_PRELOAD="$pre" \
        "$BIN/epoll_solo_sibling" $ROUNDS >"$TMPD/out" || fail "under strace ($mode): $(cat "$TMPD/out")"
done
n=$(grep -cE ' epoll_(wait|pwait|pwait2)\(' "$TMPD/tr.native")
c=$(grep -cE ' epoll_(wait|pwait|pwait2)\(' "$TMPD/tr.corun")
echo "epoll calls for $ROUNDS waits beside a thread on a condition variable: native $n, corun $c"
[ "$n" -ge "$ROUNDS" ] || fail "natively only $n epoll calls (the test lost its waits)"
[ "$c" -le $((n * 13 / 10 + 20)) ] || fail "corun made $c epoll calls, natively $n"
ok "a loop beside a thread on a condition variable waits in its own epoll set: $c epoll calls, $n natively"
