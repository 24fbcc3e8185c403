# An echo server written with corun_spawn and plain blocking accept/read/write,
# under corun; a client keeps 1,000 connections open at once, sends random
# payloads of 1 B to 256 KiB on each (3 rounds) and checks every byte.
source "$(dirname "$0")/../lib.sh"
ulimit -n 8192
port=$(free_port)
LD_PRELOAD="$LIB" "$BIN/co_echo_server" "$port" 2>"$TMPD/server.err" &
srv=$!
wait_port "$port"
"$BIN/echo_client" 127.0.0.1 "$port" 1000 262144 3 42 | tee "$TMPD/client.out" || fail "client reported an error"
grep -q "1000 connections (1000 open at once)" "$TMPD/client.out" || fail "not all connections were open at once"
kill -0 "$srv" 2>/dev/null || fail "server died: $(cat "$TMPD/server.err")"
threads=$(nthreads "$srv")
workers=$(nproc)
# The workers, plus the watchdog thread (no blocking-pool helper: nothing
# here needs one).
[ "$threads" -le $((workers + 2)) ] || fail "server has $threads kernel threads, expected at most $workers workers + the watchdog + the preemption monitor"
grep -q "main coroutine id 1" "$TMPD/server.err" || fail "main did not run as coroutine 1: $(cat "$TMPD/server.err")"
ok "echo under corun: every byte of 1000x3 payloads checked; $threads kernel threads"
