# Readiness reaches a waiter whatever the worker that first waited on the
# fd is doing (c-tests/readiness_busy_worker.c): main polls a pipe first,
# then computes for 2 s without a call while a reader thread on another
# worker reads the pipe, written at 350 ms by a child. The bytes read are
# the same natively and under corun (one worker, the default, two workers);
# with more than one worker the read must return well before main stops
# computing (< 1,000 ms; it returned at 2,001 ms when only the first
# waiter's worker watched the fd).
source "$(dirname "$0")/../lib.sh"
prog="$BIN/readiness_busy_worker"
RUN_TIMEOUT=30 same_everywhere readiness "$prog"
grep -qx 'read "data at 350 ms"' "$TMPD/readiness.native" || fail "native run: $(cat "$TMPD/readiness.native")"
at() { sed -n 's/^read returned at \([0-9]*\) ms.*/\1/p' "$1"; }
for mode in native wdef; do
    ms=$(at "$TMPD/readiness.$mode.err")
    [ -n "$ms" ] || fail "$mode: no timing printed: $(cat "$TMPD/readiness.$mode.err")"
    if [ "$mode" = native ] || [ "$(nproc)" -gt 1 ]; then
        [ "$ms" -lt 1000 ] || fail "$mode: the read returned at $ms ms, data was written at 350 ms"
    fi
    ok "$mode: read returned at $ms ms"
done
CORUN_WORKERS=2 timeout -k 5 30 env LD_PRELOAD="$LIB" "$prog" >"$TMPD/w2" 2>"$TMPD/w2.err" \
    || fail "two workers: $(cat "$TMPD/w2.err")"
cmp -s "$TMPD/readiness.native" "$TMPD/w2" || fail "two workers: output differs: $(cat "$TMPD/w2")"
ms=$(at "$TMPD/w2.err")
[ -n "$ms" ] && [ "$ms" -lt 1000 ] || fail "two workers: the read returned at ${ms:-?} ms, data was written at 350 ms"
ok "two workers: read returned at $ms ms (the first waiter computed until 2,000 ms)"
