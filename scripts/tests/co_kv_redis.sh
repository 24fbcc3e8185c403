# c-tests/co_kv_server.c (the Redis protocol subset GET/SET/DEL/PING/INCR,
# written with corun's C API) answers as Redis 7 does: redis-cli runs the
# commands of data/co_kv_cmds.txt (errors and edge cases included) and the
# transcript must equal data/co_kv_redis7.txt, made with redis-server
# 7.0.15, and, when a redis-server is installed, that of a live one.
# Then redis-benchmark (50 and 200 connections, pipelined and not) runs
# PING, SET, GET and INCR; every INCR of its counter must have counted.
source "$(dirname "$0")/../lib.sh"
command -v redis-cli >/dev/null && command -v redis-benchmark >/dev/null || fail "redis-tools missing (scripts/deps.sh)"
port=$(free_port)
LD_PRELOAD="$LIB" "$BIN/co_kv_server" "$port" 2>"$TMPD/server.err" &
srv=$!
wait_port "$port"
transcript() {
    while IFS= read -r c; do
        echo "> $c"
        eval timeout 10 redis-cli -p "$1" "$c" 2>&1
    done <"$ROOT/scripts/tests/data/co_kv_cmds.txt"
}
transcript "$port" >"$TMPD/ours.txt"
diff -u "$ROOT/scripts/tests/data/co_kv_redis7.txt" "$TMPD/ours.txt" || fail "answers differ from Redis 7's"
if command -v redis-server >/dev/null; then
    rport=$(free_port)
    redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no >"$TMPD/redis.log" 2>&1 &
    wait_port "$rport"
    transcript "$rport" >"$TMPD/real.txt"
    diff -u "$TMPD/real.txt" "$TMPD/ours.txt" || fail "answers differ from the live redis-server's"
    echo "same answers as $(redis-server --version | awk '{print $3}')"
fi
total=0
for args in "-c 50" "-c 200 -P 16"; do
    out=$(timeout -k 5 120 redis-benchmark -p "$port" -t ping,set,get,incr -n 50000 $args -q 2>&1 | tr '\r' '\n' \
        | grep 'requests per second') || fail "redis-benchmark $args failed"
    echo "redis-benchmark $args:"; echo "$out"
    [ "$(grep -c 'requests per second' <<<"$out")" = 5 ] || fail "redis-benchmark $args: not 5 results"
    total=$((total + 50000))
    got=$(redis-cli -p "$port" GET counter:__rand_int__)
    [ "$got" = "$total" ] || fail "after $total INCRs the counter is $got"
done
kill -0 "$srv" 2>/dev/null || fail "server died: $(cat "$TMPD/server.err")"
ok "Redis protocol server: answers identical to Redis 7; redis-benchmark ran; $total INCRs counted exactly"
