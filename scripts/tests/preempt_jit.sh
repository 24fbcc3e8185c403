# Preemption of threads computing in JIT-compiled code
# (c-tests/preempt_jit.c: machine code in an anonymous mapping, with frame
# pointers and no unwind table, under a C frame holding stale return
# addresses into glibc, as V8's threads are). src/sched/preempt_safe.rs
# follows such frames by their frame pointers; before, it scanned the
# whole stack above the JIT frame, found the stale words and never
# preempted: with 3 spinners on 1 or 2 workers, main's sleep never ended
# (Node's test-worker-terminate-timers hung so), and a SIGTERM whose
# handler had to run on a worker never ran (test.py could not end it).
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=20 same_everywhere preempt_jit "$BIN/preempt_jit"
ok "3 threads spinning in JIT code are preempted: main's sleeps end, same output (1 and 2 workers)"

for w in 1 2; do
    out="$TMPD/term.$w"
    CORUN_WORKERS=$w LD_PRELOAD="$LIB" timeout -k 2 20 "$BIN/preempt_jit" term >"$out" 2>"$out.err" &
    pid=$!
    for _ in $(seq 1 200); do
        grep -q spinning "$out" && break
        sleep 0.05
    done
    grep -q spinning "$out" || fail "term, $w workers: the spinners never all started: $(cat "$out" "$out.err")"
    kill -TERM "$(pgrep -P "$pid" preempt_jit || echo "$pid")" 2>/dev/null || true
    rc=0
    wait "$pid" || rc=$?
    [ "$rc" = 0 ] || fail "term, $w workers: exit $rc$([ "$rc" = 124 ] && echo ': SIGTERM handler never ran'); $(cat "$out.err")"
    grep -q '^terminated$' "$out" || fail "term, $w workers: no line from the handler: $(cat "$out")"
done
ok "a SIGTERM handler runs while 3 threads spin in JIT code (1 and 2 workers)"
