#!/usr/bin/env bash
# make demo: an unchanged blocking server under corun, driven by many
# concurrent clients, with the figures printed.
source "$(dirname "$0")/lib.sh"
ulimit -n 16384 2>/dev/null || ulimit -n "$(ulimit -Hn)"
conns=${DEMO_CONNS:-1000}
port=$(free_port)
echo "== corun demo: co_echo_server (blocking accept/read/write, one coroutine per connection)"
LD_PRELOAD="$LIB" "$BIN/co_echo_server" "$port" 2>/dev/null &
srv=$!
wait_port "$port"
"$BIN/echo_client" 127.0.0.1 "$port" "$conns" 65536 5 7 | sed 's/^/   /'
echo "   server: $(nthreads "$srv") kernel threads for $conns connections, RSS $(( $(rss_kib "$srv") / 1024 )) MiB"
kill "$srv"
