# threaded_http (one pthread per connection, blocking I/O, never told about
# corun) natively and under corun, and epoll_http: http_client checks every
# byte of every reply (keep-alive, pipelining, requests split at any byte,
# HTTP/1.0, Connection: close, bodies skipped, 400/431/501 closing only
# their own connection, 200 concurrent connections). Then a 2-second wrk
# smoke run under corun: requests served, no socket error, no bad status.
source "$(dirname "$0")/../lib.sh"
ulimit -n 8192
body=1000

check() { # NAME PRELOAD PROGRAM
    local name=$1 pre=$2 prog=$3 port srv
    port=$(free_port)
    LD_PRELOAD="$pre" "$BIN/$prog" "$port" "$body" 2>"$TMPD/$name.err" &
    srv=$!
    wait_port "$port"
    "$BIN/http_client" check "$port" "$body" 200 >"$TMPD/$name.out" 2>&1 ||
        fail "$name: $(cat "$TMPD/$name.out")"
    grep -q "all cases passed" "$TMPD/$name.out" || fail "$name: client did not finish"
    kill -0 "$srv" 2>/dev/null || fail "$name: server died: $(cat "$TMPD/$name.err")"
    kill "$srv"; wait "$srv" 2>/dev/null || true
    ok "$name: $(grep -c '^ok:' "$TMPD/$name.out") cases, every byte checked"
}

check native "" threaded_http
check corun "$LIB" threaded_http
check epoll "" epoll_http

# wrk smoke run under corun.
port=$(free_port)
LD_PRELOAD="$LIB" "$BIN/threaded_http" "$port" "$body" 2>"$TMPD/wrk-srv.err" &
srv=$!
wait_port "$port"
cat >"$TMPD/summary.lua" <<'LUA'
done = function(s, lat, req)
  local e = s.errors
  io.write(string.format("SUMMARY requests=%d connect=%d read=%d write=%d timeout=%d status=%d\n",
    s.requests, e.connect, e.read, e.write, e.timeout, e.status))
end
LUA
wrk -t 2 -c 200 -d 2s -s "$TMPD/summary.lua" "http://127.0.0.1:$port/" >"$TMPD/wrk.out" 2>&1 ||
    fail "wrk failed: $(cat "$TMPD/wrk.out")"
line=$(grep '^SUMMARY' "$TMPD/wrk.out") || fail "no wrk summary: $(cat "$TMPD/wrk.out")"
kill -0 "$srv" 2>/dev/null || fail "server died under wrk: $(cat "$TMPD/wrk-srv.err")"
val() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$line"; }
[ "$(val requests)" -gt 0 ] || fail "wrk: no request served: $line"
for k in connect read write timeout status; do
    [ "$(val "$k")" -eq 0 ] || fail "wrk: $k errors: $line"
done
ok "wrk under corun, 200 connections 2 s: $(val requests) requests, no socket error, no bad status"
