# The listener + worker-pool server shape (c-tests/pool_echo.c): a listener
# thread hands sockets to 64 pre-started workers through a mutex and
# condition-variable queue; workers set O_NONBLOCK themselves and wait with
# poll and a timeout. Under corun with 2,000 clients open at once, every
# byte checked; then the same binary natively with 300.
source "$(dirname "$0")/../lib.sh"
ulimit -n 8192
port=$(free_port)
LD_PRELOAD="$LIB" "$BIN/pool_echo" "$port" 64 2>"$TMPD/server.err" &
srv=$!
wait_port "$port"
"$BIN/echo_client" 127.0.0.1 "$port" 2000 16384 2 21 | tee "$TMPD/client.out" || fail "client reported an error: $(tail -3 "$TMPD/server.err")"
grep -q "2000 connections (2000 open at once)" "$TMPD/client.out" || fail "not all connections were open at once"
threads=$(nthreads "$srv")
[ "$threads" -le $(( $(nproc) + 2 )) ] || fail "server has $threads kernel threads (workers + the watchdog + the preemption monitor expected)"
kill "$srv"; wait "$srv" 2>/dev/null || true
ok "pool_echo under corun: 2000 clients byte-checked through 64 workers on $threads kernel threads"
port=$(free_port)
"$BIN/pool_echo" "$port" 64 2>"$TMPD/native.err" &
srv=$!
wait_port "$port"
"$BIN/echo_client" 127.0.0.1 "$port" 300 16384 2 21 | tee "$TMPD/native.out" || fail "native client reported an error"
ok "pool_echo natively: 300 clients byte-checked"
