# The same thread-per-connection echo server binary natively (no corun) at
# a smaller count, and with CORUN_THREADS=native (pthread interposition
# off): every byte checked; the native run really has a kernel thread per
# connection.
source "$(dirname "$0")/../lib.sh"
ulimit -n 8192
N=500
for mode in plain corun-native; do
    port=$(free_port)
    if [ "$mode" = plain ]; then
        "$BIN/threaded_echo" "$port" 2>"$TMPD/server.err" &
    else
        CORUN_THREADS=native LD_PRELOAD="$LIB" "$BIN/threaded_echo" "$port" 2>"$TMPD/server.err" &
    fi
    srv=$!
    wait_port "$port"
    python3 "$ROOT/scripts/hold_conns.py" 127.0.0.1 "$port" 200 "$TMPD/ready.$mode" &
    holder=$!
    for _ in $(seq 1 300); do [ -s "$TMPD/ready.$mode" ] && break; sleep 0.1; done
    [ -s "$TMPD/ready.$mode" ] || fail "$mode: 200 connections not echoed"
    threads=$(nthreads "$srv")
    [ "$threads" -gt 200 ] || fail "$mode: only $threads kernel threads for 200 connections"
    kill "$holder"; wait "$holder" 2>/dev/null || true
    "$BIN/echo_client" 127.0.0.1 "$port" "$N" 65536 3 5 | tee "$TMPD/client.$mode" || fail "$mode: client reported an error"
    grep -q "$N connections ($N open at once)" "$TMPD/client.$mode" || fail "$mode: not all open at once"
    kill "$srv"; wait "$srv" 2>/dev/null || true
    ok "threaded_echo $mode: $threads kernel threads for 200 connections; $N x 3 payloads byte-checked"
done
