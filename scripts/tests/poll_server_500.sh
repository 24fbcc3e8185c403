# A single-threaded poll() echo server (c-tests/poll_server.c, unchanged C)
# under corun: main's poll() parks on 500 client sockets, the listener and
# a 10 ms timerfd at once, on one worker. A client keeps 500 connections open at once and
# checks every byte of 3 rounds of random payloads up to 64 KiB each; the
# timer must have kept ticking while the server served.
source "$(dirname "$0")/../lib.sh"
ulimit -n 4096
port=$(free_port)
CORUN_WORKERS=1 LD_PRELOAD="$LIB" "$BIN/poll_server" "$port" 501 10 >"$TMPD/server.out" 2>"$TMPD/server.err" &
srv=$!
wait_port "$port"
# wait_port's probe connection counts as one client: 500 more come.
kill -0 "$srv" || fail "server died: $(cat "$TMPD/server.err")"
threads=$(nthreads "$srv")
"$BIN/echo_client" 127.0.0.1 "$port" 500 65536 3 7 | tee "$TMPD/client.out" || fail "client reported an error"
grep -q "500 connections (500 open at once)" "$TMPD/client.out" || fail "not all connections were open at once"
wait "$srv" || fail "server failed: $(cat "$TMPD/server.err")"
cat "$TMPD/server.out"
grep -q "served 501 clients" "$TMPD/server.out" || fail "server did not serve 500 clients"
ticks=$(sed -n 's/.*clients, \([0-9]*\) timer ticks.*/\1/p' "$TMPD/server.out")
[ "${ticks:-0}" -gt 0 ] || fail "the timerfd never ticked in the server's poll"
# Its one worker, and corun's watchdog and preemption monitor threads.
[ "$threads" -le 3 ] || fail "server had $threads kernel threads, expected its one worker, the watchdog and the preemption monitor"
ticker=$(sed -n 's/.*ticker \([0-9]*\)$/\1/p' "$TMPD/server.out")
[ "${ticker:-0}" -gt 0 ] || fail "the worker never ran another coroutine: main's waits did not park"
ok "poll server under corun (one worker): 500 clients, every byte checked, $ticks timer ticks, ticker $ticker"
