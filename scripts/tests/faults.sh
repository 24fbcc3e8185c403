# Faults against an echo server under corun (co_echo_server), each
# bounded: peers that reset mid-transfer and peers that half-close leave
# the other connections untouched; 1,000 slow clients do not slow a fast
# one; fd exhaustion makes accept fail with EMFILE, the server says so,
# keeps running and serves again once fds are free; a SIGALRM every
# millisecond never turns a parked read into an error.
source "$(dirname "$0")/../lib.sh"
ulimit -n 8192
port=$(free_port)
LD_PRELOAD="$LIB" "$BIN/co_echo_server" "$port" 2>"$TMPD/srv.err" &
srv=$!
wait_port "$port"
"$BIN/fault_client" resets 127.0.0.1 "$port" 150 || fail "resets"
"$BIN/fault_client" halfclose 127.0.0.1 "$port" 100 || fail "half-close"
# The fast client's longest round trip is wall-clock time, which a loaded
# machine stretches (863 ms at load 36, the client and the server both
# waiting for a CPU): a run over 500 ms is made again, up to 3 times; every
# byte is checked in every run.
for try in 1 2 3; do
    out=$("$BIN/fault_client" slow 127.0.0.1 "$port" 1000 3) || fail "slow clients: $out"
    echo "$out"
    worst=$(echo "$out" | sed -n 's/.*longest \([0-9.]*\) ms.*/\1/p')
    awk -v w="$worst" 'BEGIN { exit !(w < 500) }' && break
    [ "$try" -lt 3 ] || fail "a fast client waited $worst ms behind 1000 slow ones (3 runs)"
    echo "a fast client waited $worst ms (try $try of 3), again"
done
"$BIN/echo_client" 127.0.0.1 "$port" 200 100000 2 9 || fail "echo after the faults"
kill -0 "$srv" || fail "server died"
kill "$srv"; wait "$srv" 2>/dev/null || true

# fd exhaustion: the server may open 64 fds; 150 clients hold connections.
port=$(free_port)
(ulimit -n 64; LD_PRELOAD="$LIB" exec "$BIN/co_echo_server" "$port") 2>"$TMPD/emfile.err" &
srv=$!
wait_port "$port"
python3 - "$port" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
held = []
for i in range(150):
    s = socket.create_connection(("127.0.0.1", port))
    held.append(s)
time.sleep(0.5)
for s in held:
    s.close()
PY
sleep 0.5
grep -q "accept: Too many open files; waiting for fds" "$TMPD/emfile.err" || fail "no EMFILE report: $(cat "$TMPD/emfile.err")"
"$BIN/echo_client" 127.0.0.1 "$port" 20 50000 2 4 || fail "not serving again after fd exhaustion"
grep -q "accepting again" "$TMPD/emfile.err" || fail "did not recover"
kill -0 "$srv" || fail "server died of fd exhaustion"
kill "$srv"; wait "$srv" 2>/dev/null || true

out=$(corun "$BIN/co_signals" 1000 100) || fail "signals: $out"
echo "$out"
ok "faults: resets, half-close, slow clients, EMFILE, SIGALRM storm"
