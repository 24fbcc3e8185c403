# 64 coroutines blocked in accept() on one listener, spread over two
# workers, serve 2,000 short connections arriving in bursts, each echoed
# and byte-checked; no worker is ever left blocked in accept (the run
# would then stall with connections waiting on that worker).
source "$(dirname "$0")/../lib.sh"
ulimit -n 8192
port=$(free_port)
CORUN_WORKERS=2 LD_PRELOAD="$LIB" "$BIN/co_acceptors" "$port" 64 &
srv=$!
wait_port "$port"
for round in 1 2 3 4 5 6 7 8 9 10; do
    timeout 20 "$BIN/echo_client" 127.0.0.1 "$port" 200 4096 1 "$round" >/dev/null || fail "burst $round stalled or failed"
done
kill -0 "$srv" || fail "server died"
ok "2,000 connections through 64 acceptors on 2 workers"
