# An unchanged thread-per-connection echo server (c-tests/threaded_echo.c,
# one pthread per connection, blocking read/write) under corun:
#  1. 10,000 idle connections held open at once, each echoed once: the
#     process keeps at most one kernel thread per worker;
#  2. a client holds 10,000 connections open at once and checks every byte
#     of 2 random payloads on each.
# Also prints the server's RSS and the machine's MemAvailable drop with the
# 10,000 idle connections (README "Transparent threads").
source "$(dirname "$0")/../lib.sh"
ulimit -n 20000
N=10000
avail() { awk '/^MemAvailable/{print $2}' /proc/meminfo; }
port=$(free_port)
before=$(avail)
LD_PRELOAD="$LIB" "$BIN/threaded_echo" "$port" 2>"$TMPD/server.err" &
srv=$!
wait_port "$port"
python3 "$ROOT/scripts/hold_conns.py" 127.0.0.1 "$port" "$N" "$TMPD/ready" &
holder=$!
for _ in $(seq 1 1200); do
    [ -s "$TMPD/ready" ] && break
    kill -0 "$holder" 2>/dev/null || fail "holder failed: $(cat "$TMPD/server.err")"
    sleep 0.1
done
[ -s "$TMPD/ready" ] || fail "the $N connections were not all echoed in time"
grep -q "$N connection threads alive" "$TMPD/server.err" || fail "server did not report $N live threads: $(tail -3 "$TMPD/server.err")"
threads=$(nthreads "$srv")
rss=$(rss_kib "$srv")
drop=$(( before - $(avail) ))
workers=$(nproc)
echo "idle: $N connection threads, $threads kernel threads, server RSS $((rss / 1024)) MiB, MemAvailable drop $((drop / 1024)) MiB (client included)"
[ "$threads" -le $((workers + 2)) ] || fail "server has $threads kernel threads with $N threads alive, expected at most $workers workers + the watchdog + the preemption monitor"
kill "$holder"; wait "$holder" 2>/dev/null || true
"$BIN/echo_client" 127.0.0.1 "$port" "$N" 16384 2 11 | tee "$TMPD/client.out" || fail "client reported an error"
grep -q "$N connections ($N open at once)" "$TMPD/client.out" || fail "not all connections were open at once"
kill -0 "$srv" 2>/dev/null || fail "server died: $(cat "$TMPD/server.err")"
ok "threaded_echo under corun: $N idle threads on $threads kernel threads; $N x 2 payloads byte-checked"
