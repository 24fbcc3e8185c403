# Python delivers a signal while its main thread is blocked: a SIGALRM
# handler that raises interrupts socket.recv, socket.accept, select.select
# and time.sleep (Python runs its handlers when the call fails with EINTR),
# also while another thread waits; a handler that returns lets recv retry
# (PEP 475) and get its data. Same output natively and under corun.
source "$(dirname "$0")/../lib.sh"
PY="$ROOT/scripts/tests/data/sig_python.py"
timeout 30 python3 "$PY" >"$TMPD/native" 2>&1 || fail "natively: $(cat "$TMPD/native")"
grep -q "NOT IN TIME" "$TMPD/native" && fail "natively (machine too loaded?): $(cat "$TMPD/native")"
for w in 1 default; do
    if [ "$w" = default ]; then
        timeout 30 env LD_PRELOAD="$LIB" python3 "$PY" >"$TMPD/corun" 2>&1 || fail "workers=$w: $(cat "$TMPD/corun")"
    else
        CORUN_WORKERS=$w timeout 30 env LD_PRELOAD="$LIB" python3 "$PY" >"$TMPD/corun" 2>&1 \
            || fail "workers=$w: $(cat "$TMPD/corun")"
    fi
    diff -u "$TMPD/native" "$TMPD/corun" || fail "workers=$w: output differs from native"
    ok "workers=$w: $(wc -l <"$TMPD/corun") cases as natively"
done
