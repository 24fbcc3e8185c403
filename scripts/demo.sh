#!/usr/bin/env bash
# make demo: one unchanged blocking server (threaded_http: one pthread per
# connection, blocking accept/read/write), first natively, then under corun,
# each driven by wrk with 1,000 keep-alive connections. One line each and
# the ratios. (The full, repeated measurements: make bench.)
source "$(dirname "$0")/lib.sh"
ulimit -n "$(ulimit -Hn)"
conns=${DEMO_CONNS:-1000}
secs=${DEMO_SECONDS:-5}
body=128
workers=${CORUN_WORKERS:-$(nproc)}
command -v wrk >/dev/null || fail "wrk is missing (scripts/deps.sh installs it)"

cat >"$TMPD/summary.lua" <<'LUA'
done = function(s, lat, req)
  local e = s.errors
  io.write(string.format("SUMMARY %d %d %d %d\n", s.requests, s.duration, lat:percentile(99),
    e.connect + e.read + e.write + e.timeout))
end
LUA

# run NAME PRELOAD -> "req/s p99_ms threads rss_mib errors"
run() {
    local port srv
    port=$(free_port)
    env CORUN_WORKERS="$workers" LD_PRELOAD="$2" "$BIN/threaded_http" "$port" "$body" 2>"$TMPD/$1.err" &
    srv=$!
    wait_port "$port"
    (
        m=0
        while kill -0 "$srv" 2>/dev/null; do
            n=$(nthreads "$srv" 2>/dev/null || echo 0); [ "$n" -gt "$m" ] && m=$n
            echo "$m" >"$TMPD/$1.thr"; sleep 0.25
        done
    ) &
    local sampler=$!
    wrk -t "$(nproc)" -c "$conns" -d "${secs}s" --timeout 10s -s "$TMPD/summary.lua" \
        "http://127.0.0.1:$port/" >"$TMPD/$1.wrk" 2>&1 || fail "wrk: $(cat "$TMPD/$1.wrk")"
    kill -0 "$srv" 2>/dev/null || fail "$1: the server died: $(cat "$TMPD/$1.err")"
    local hwm
    hwm=$(awk '/^VmHWM/{print $2}' "/proc/$srv/status")
    kill "$srv" "$sampler" 2>/dev/null || true
    wait "$srv" "$sampler" 2>/dev/null || true
    read -r _ req dur p99 err < <(grep '^SUMMARY' "$TMPD/$1.wrk") || fail "$1: no wrk summary"
    awk -v r="$req" -v d="$dur" -v p="$p99" -v t="$(cat "$TMPD/$1.thr")" -v h="$hwm" -v e="$err" \
        'BEGIN{printf "%.0f %.1f %d %.1f %d\n", r / (d / 1e6), p / 1000, t, h / 1024, e}'
}

group() { sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$1"; } # 1234567 -> 1,234,567
line() { # LABEL rps p99 threads rss errors
    printf '  %-26s %9s req/s   p99 %7.1f ms   %6s kernel threads   RSS %6.1f MiB%s\n' "$1" \
        "$(group "$2")" "$3" "$(group "$4")" "$5" "$([ "$6" = 0 ] || echo "   ($6 socket errors)")"
}

echo "corun demo: threaded_http, an unchanged blocking server (one pthread per connection),"
echo "driven by wrk with $conns keep-alive connections for ${secs} s, natively and under corun."
echo "Client and server share this machine's $(nproc) CPUs."
echo
read -r n_rps n_p99 n_thr n_rss n_err < <(run native "")
line "native threads:" "$n_rps" "$n_p99" "$n_thr" "$n_rss" "$n_err"
read -r c_rps c_p99 c_thr c_rss c_err < <(run corun "$LIB")
line "under corun ($workers workers):" "$c_rps" "$c_p99" "$c_thr" "$c_rss" "$c_err"
awk -v a="$c_rps" -v b="$n_rps" -v p="$c_p99" -v q="$n_p99" -v r="$c_rss" -v s="$n_rss" -v t="$c_thr" -v u="$n_thr" \
    'BEGIN{printf "  %-26s %8.2fx req/s   p99 %6.2fx      %d vs %d kernel threads   RSS %.2fx\n",
        "corun / native:", a / b, (q > 0 ? p / q : 0), t, u, (s > 0 ? r / s : 0)}'
echo
if [ "$c_thr" -le $((workers + 2)) ]; then
    echo "What corun did: LD_PRELOAD=libcorun.so turned each of the $conns connection threads into a coroutine"
    echo "on $workers worker threads ($c_thr kernel threads in all, with corun's watchdog); a blocking read or"
    echo "write parks the coroutine instead of the thread. The program was not changed or recompiled."
else
    echo "What corun did: its hooks made every blocking read/write/accept park a coroutine on the"
    echo "netpoller, but this build still creates a kernel thread per pthread_create ($c_thr threads):"
    echo "transparent pthread_create (coroutines instead of threads) is not in this build yet."
fi
