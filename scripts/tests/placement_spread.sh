# Two computing threads that a busy main starts run on two workers, as a
# thread pool's (rayon's two threads, started by the first par_iter, in
# about 1 run of 6 shared one worker while main waited on the other: a
# small par_iter took 2-3 s instead of 14-30 ms). c-tests/spawn_spread.c:
# right after the start main creates thread 1 (which waits at a barrier),
# computes 3 ms, creates thread 2; each thread reads its kernel thread.
# The second pthread_create counted main's worker as full (held by one
# task for over 2 ms: main itself) and sent thread 2 next to thread 1.
# 6 runs; on a loaded machine one may still end on one worker (main's
# thread preempted for 2 ms before the first create: both creates then
# count as a burst, and an idle worker may take the second thread before
# it ran), so 5 of the 6 must spread.
source "$(dirname "$0")/../lib.sh"
export CORUN_WORKERS=2
"$BIN/spawn_spread" >"$TMPD/native" || fail "natively: $(cat "$TMPD/native")"
grep -qx "2 threads on 2 kernel threads" "$TMPD/native" || fail "natively: $(cat "$TMPD/native")"
spread=0
for run in 1 2 3 4 5 6; do
    corun "$BIN/spawn_spread" >"$TMPD/corun" 2>"$TMPD/corun.err" \
        || fail "under corun: $(cat "$TMPD/corun" "$TMPD/corun.err")"
    cat "$TMPD/corun"
    diff -q "$TMPD/native" "$TMPD/corun" >/dev/null && spread=$((spread + 1))
done
[ "$spread" -ge 5 ] || fail "the two threads a busy main started ran on two workers in $spread of 6 runs"
ok "two computing threads started by a busy main ran on two workers in $spread of 6 runs"
