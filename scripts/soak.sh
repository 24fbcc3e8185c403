#!/usr/bin/env bash
# make soak (not in CI; about 2 minutes): echo servers under corun loaded
# for a while by byte-checking clients with random faults (resets,
# half-closes, slow readers) and, for the HTTP server, wrk. Prints three
# figures per server: byte mismatches (must be 0), RSS after the run vs
# after warm-up (within 10%), open fds back to their count at start.
source "$(dirname "$0")/lib.sh"
ulimit -n 16384 2>/dev/null || ulimit -n "$(ulimit -Hn)"
SECS=${SOAK_SECS:-50}
status=0

fds_of() { ls "/proc/$1/fd" | wc -l; }

load_echo() { # port seconds [warmup] -> mismatches
    local port=$1 end=$((SECONDS + $2)) bad=0 i=0 kind
    while [ $SECONDS -lt $end ] || { [ -n "${3:-}" ] && [ $i -lt 4 ]; }; do
        i=$((i + 1))
        # The warm-up runs each kind of load once, so it reaches the peak
        # concurrency the run will see; the run then picks at random.
        if [ -n "${3:-}" ]; then kind=$((i - 1)); else kind=$((RANDOM % 4)); fi
        [ -n "${3:-}" ] && [ $i -gt 4 ] && break
        case $kind in
            0) "$BIN/fault_client" resets 127.0.0.1 "$port" 60 >/dev/null 2>&1 || bad=$((bad + 1)) ;;
            1) "$BIN/fault_client" halfclose 127.0.0.1 "$port" 40 >/dev/null 2>&1 || bad=$((bad + 1)) ;;
            2) "$BIN/fault_client" slow 127.0.0.1 "$port" 200 1 >/dev/null 2>&1 || bad=$((bad + 1)) ;;
            3) "$BIN/echo_client" 127.0.0.1 "$port" 300 131072 2 "$i" >/dev/null 2>&1 || bad=$((bad + 1)) ;;
        esac
    done
    echo "$bad"
}

soak_echo() { # name binary
    local name=$1 bin=$2 port srv rss_warm rss_end fd0 fd1 bad
    [ -x "$bin" ] || { echo "$name: $bin not built, skipped"; return; }
    port=$(free_port)
    LD_PRELOAD="$LIB" "$bin" "$port" >/dev/null 2>&1 &
    srv=$!
    wait_port "$port"
    sleep 0.2
    fd0=$(fds_of "$srv")
    load_echo "$port" 0 warmup >/dev/null
    sleep 1
    rss_warm=$(rss_kib "$srv")
    bad=$(load_echo "$port" "$SECS")
    sleep 2
    rss_end=$(rss_kib "$srv")
    fd1=$(fds_of "$srv")
    kill "$srv"; wait "$srv" 2>/dev/null || true
    local growth
    growth=$(awk -v a="$rss_warm" -v b="$rss_end" 'BEGIN { printf "%.1f", (b - a) * 100 / a }')
    printf '%-16s mismatches/errors %s | RSS after warm-up %s KiB, after run %s KiB (%s%%) | fds %s -> %s\n' \
        "$name" "$bad" "$rss_warm" "$rss_end" "$growth" "$fd0" "$fd1"
    [ "$bad" = 0 ] || status=1
    awk -v g="$growth" 'BEGIN { exit !(g <= 10) }' || status=1
    [ "$fd0" = "$fd1" ] || status=1
}

soak_echo co_echo_server "$BIN/co_echo_server"
soak_echo threaded_echo "$BIN/threaded_echo"
if [ -x "$BIN/threaded_http" ] && command -v wrk >/dev/null; then
    port=$(free_port)
    LD_PRELOAD="$LIB" "$BIN/threaded_http" "$port" >/dev/null 2>&1 &
    srv=$!
    wait_port "$port"
    fd0=$(fds_of "$srv")
    # Warm up at the concurrency of the run, so its peak is reached here.
    wrk -t2 -c1000 -d5s "http://127.0.0.1:$port/" >/dev/null
    sleep 1
    rss_warm=$(rss_kib "$srv")
    out=$(wrk -t2 -c1000 -d"${SECS}s" "http://127.0.0.1:$port/")
    sleep 2
    rss_end=$(rss_kib "$srv")
    fd1=$(fds_of "$srv")
    body=$(curl -s "http://127.0.0.1:$port/" | md5sum)
    body2=$(curl -s "http://127.0.0.1:$port/" | md5sum)
    kill "$srv"; wait "$srv" 2>/dev/null || true
    errs=$(echo "$out" | sed -n 's/.*Socket errors: \(.*\)/\1/p')
    non2xx=$(echo "$out" | sed -n 's/.*Non-2xx or 3xx responses: \([0-9]*\).*/\1/p')
    growth=$(awk -v a="$rss_warm" -v b="$rss_end" 'BEGIN { printf "%.1f", (b - a) * 100 / a }')
    printf '%-16s %s req/s, non-2xx %s, socket errors: %s | RSS %s -> %s KiB (%s%%) | fds %s -> %s\n' \
        threaded_http "$(echo "$out" | sed -n 's/Requests\/sec: *//p')" "${non2xx:-0}" "${errs:-none}" \
        "$rss_warm" "$rss_end" "$growth" "$fd0" "$fd1"
    [ "$body" = "$body2" ] || status=1
    [ -z "$non2xx" ] || status=1
    awk -v g="$growth" 'BEGIN { exit !(g <= 10) }' || status=1
    [ "$fd0" = "$fd1" ] || status=1
fi
[ $status = 0 ] && echo "soak: all figures within bounds" || echo "soak: FAILED"
exit $status
