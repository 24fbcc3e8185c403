# redis-server (Debian's, jemalloc) starts under corun every time: 40
# starts, each until `redis-cli ping` answers, then shutdown. It used to
# die at startup (1 in 20-40 on a busy machine; SIGSEGV in jemalloc's malloc, a
# bio thread's first malloc re-entered through a hook) or hang (the same
# re-entry deadlocked on a jemalloc mutex). Needs `scripts/deps.sh servers`.
source "$(dirname "$0")/../lib.sh"
command -v redis-server >/dev/null && command -v redis-cli >/dev/null \
    || { echo "SKIP: redis-server not installed (scripts/deps.sh servers)"; exit 0; }
n=${REDIS_STARTS:-40}
for i in $(seq 1 "$n"); do
    port=$(free_port)
    dir="$TMPD/r$i"; mkdir -p "$dir"
    LD_PRELOAD="$LIB" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
        --daemonize no --loglevel warning --dir "$dir" >"$dir/log" 2>&1 &
    pid=$!
    up=0
    for _ in $(seq 1 200); do
        kill -0 "$pid" 2>/dev/null || break
        if [ "$(timeout 2 redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; then up=1; break; fi
        sleep 0.02
    done
    [ $up = 1 ] && timeout 5 redis-cli -p "$port" shutdown nosave >/dev/null 2>&1
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    if kill -0 "$pid" 2>/dev/null; then
        kill -9 "$pid"; wait "$pid" 2>/dev/null
        fail "start $i: redis-server hung (up=$up): $(tail -3 "$dir/log")"
    fi
    rc=0; wait "$pid" || rc=$?
    [ $up = 1 ] && [ $rc = 0 ] || fail "start $i: redis-server exit $rc, up=$up: $(tail -3 "$dir/log")"
done
ok "redis_startup: $n starts of $(redis-server --version | awk '{print $3}') under corun, each answered ping and shut down cleanly"
