# A burst of new threads starts within about one round of the threads
# already runnable (c-tests/fresh_turns.c: 1,000 threads yield without
# end, main makes 1,000 more in a row), under corun with one worker: each
# never-run coroutine has its turn in the run queue (src/sched/run_queue.rs).
# Before, one started every 61st task while others were ready: the last of
# the burst after ~61,000 yields, and threaded_http's p99 at 10,000
# connections was seconds (the last connections' first requests).
source "$(dirname "$0")/../lib.sh"
out=$(CORUN_WORKERS=1 timeout -k 5 60 env LD_PRELOAD="$LIB" "$BIN/fresh_turns" 1000 1000 2>"$TMPD/err") \
    || fail "fresh_turns: $(tail -3 "$TMPD/err")"
last=$(sed -n 's/.*started: \([0-9]*\) (one round: \([0-9]*\)).*/\1/p' <<<"$out")
[ -n "$last" ] || fail "no figure in: $out"
# One round is 1,000 yields; the burst's turns come after it, and the
# spinners keep yielding while the new threads run: two rounds. main can
# also be preempted once while it makes the burst (1,000 pthread_creates
# outlast a time slice now and then), which lets the spinners have part
# of one more round first: 2,006-2,102 in ~5% of runs, with the library
# of 29c405a as with later ones (60 runs each, 2026-12-06). Three rounds
# at most; the fault this guards against gave ~61,000.
[ "$last" -le 3000 ] || fail "the last new thread started after $last yields of the others (at most 3,000 wanted): $out"
ok "$out"
