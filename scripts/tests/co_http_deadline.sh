# An HTTP server on corun's C API where every request runs under a cancel
# token with a 100 ms deadline (c-tests/co_http_deadline.c): fast requests
# answer 200; a request that sleeps, reads a silent socket, or waits for a
# scope of helpers past the deadline answers 504 at the deadline (not at
# the end of its wait), and the connection serves the next request. Then
# wrk keeps 100 connections on slow requests for 2 s: every answer is a
# 504 and none takes much more than the deadline.
source "$(dirname "$0")/../lib.sh"
port=$(free_port)
LD_PRELOAD="$LIB" "$BIN/co_http_deadline" "$port" 100 2>"$TMPD/server.err" &
srv=$!
wait_port "$port"
# check PATH CODE BODY MIN_MS MAX_MS: status and body every time, and
# never faster than MIN_MS; an answer slower than MAX_MS is asked again, up
# to 3 times, since curl's wall clock on a loaded machine counts time the
# server was not run (951 ms for a 100 ms deadline at load 30): a wait that
# ends at the end of its sleep instead of at the deadline is slow each time.
check() {
    local out code ms try
    for try in 1 2 3; do
        out=$(curl -s -o "$TMPD/body" -w '%{http_code} %{time_total}' "http://127.0.0.1:$port$1") || fail "curl $1"
        code=${out% *}
        ms=$(awk -v t="${out#* }" 'BEGIN { printf "%d", t * 1000 }')
        echo "$1: $code $(cat "$TMPD/body") in $ms ms"
        [ "$code" = "$2" ] || fail "$1: status $code, expected $2"
        [ "$(cat "$TMPD/body")" = "$3" ] || fail "$1: body $(cat "$TMPD/body"), expected $3"
        [ "$ms" -ge "$4" ] || fail "$1: took $ms ms, expected $4..$5"
        [ "$ms" -le "$5" ] && return 0
        echo "$1: slower than $5 ms (try $try of 3)"
    done
    fail "$1: took $ms ms 3 times, expected $4..$5"
}
check /fast 200 fast 0 90
check /sleep/20 200 "slept 20" 20 95
check /sleep/5000 504 "deadline exceeded" 100 600
check /read 504 "deadline exceeded" 100 600
check /scope/10 200 "scope 10" 10 95
check /scope/5000 504 "deadline exceeded" 100 600
# keep-alive: the connection of a 504 serves the next request
out=$(curl -s "http://127.0.0.1:$port/sleep/5000" "http://127.0.0.1:$port/fast" -w '%{http_code} %{num_connects}\n')
[ "$out" = $'deadline exceeded\n504 1\nfast\n200 0' ] || fail "keep-alive after a 504: $out"
# wrk's slowest answer is a wall-clock figure too: a run whose slowest
# answer took 1 s or more is made again, up to 3 times (an answer at the end
# of its 5 s sleep would be slow every time); every run must be all 504s.
for try in 1 2 3; do
    w=$(timeout -k 5 30 wrk -t2 -c100 -d2s --latency "http://127.0.0.1:$port/sleep/5000" 2>&1) || fail "wrk: $w"
    echo "$w"
    reqs=$(awk '/requests in/{print $1}' <<<"$w")
    non2xx=$(awk '/Non-2xx/{print $NF}' <<<"$w")
    [ -n "$reqs" ] && [ "$reqs" -gt 500 ] || fail "wrk: too few requests ($reqs)"
    [ "$reqs" = "$non2xx" ] || fail "wrk: $reqs requests, $non2xx of them not 2xx: all should be 504"
    max=$(awk '/Latency/ && !/Distribution/ {print $4; exit}' <<<"$w")
    awk -v m="$max" 'BEGIN { v = m + 0; if (m ~ /us$/) v /= 1000; else if (m ~ /[0-9]s$/) v *= 1000; exit !(v < 1000) }' \
        && break
    [ "$try" -lt 3 ] || fail "wrk: the slowest answer took $max (deadline 100 ms), 3 runs"
    echo "wrk: the slowest answer took $max (try $try of 3)"
done
kill -0 "$srv" 2>/dev/null || fail "server died: $(cat "$TMPD/server.err")"
ok "per-request deadlines: 504 at 100 ms for sleeps, reads and scopes; $reqs slow requests under wrk all cut at the deadline"
