#!/usr/bin/env bash
# Event-driven servers natively and under corun AT THE SAME TIME: the
# server CPU time per operation of each, and their ratio.
#
# Why: `make bench` (bench_servers.sh) runs the native server, then the
# corun one, each alone, and compares req/s. On this 2-CPU machine shared
# with other work, one 4-second run of a single-process event loop swings
# by 10-20% from the one before it (lighttpd's 4 native runs in
# bench/RESULTS.md: 76,061-81,462 req/s; its corun ones 67,005-78,025), so
# 4 repetitions cannot tell 0.97x from 1.00x. Here both copies of the
# server run on the same CPU, each with its own load generator on another
# CPU, over the same seconds: whatever else the machine does hits both,
# and each one's CPU time per operation (the sum of its threads' run time
# from /proc/PID/task/*/schedstat, in ns, not clock ticks) is compared
# with the other's. A run with native against native shows the noise
# left (PAIR_SELF=1).
#
# PostgreSQL is paired too, though a process per connection: its
# backends end with the load, so their run time is read from the
# postmaster's reaped-children ticks (/proc/PID/stat cutime+cstime, 10 ms
# each; 8 backends at ~half a CPU for 4 s make ~200 ticks a copy, a 0.5%
# step): each copy gets its own copy of one initialised data directory.
#
# Usage: scripts/servers_paired.sh [lighttpd|nginx|redis|memcached|postgres ...]
# Environment: PAIR_REPS=6 (pairs per server; which copy is started first
# and gets which port alternates), PAIR_DURATION=5 s, PAIR_SRV_CPU=1,
# PAIR_CLI_CPU=0, PAIR_PORT=first of two ports (default: free ones),
# BENCH_LIB the libcorun.so to measure (default: this tree's), PAIR_SELF=1
# native against native instead, PAIR_PG_ARGS="-S -c 8" pgbench's options.
#
# Prints one line per pair and, per server, the median of the
# corun/native CPU-per-op ratios (below 1: corun uses less) over the pairs
# whose loads had no errors. PAIR_TSV=FILE also appends one tab-separated
# row per pair to FILE (bench_servers.sh keeps them as raw/servers_paired.tsv):
#   server pairing(corun|self) rep first_mode first_us_per_op first_ops
#   second_mode second_us_per_op second_ops ratio first_errors
#   second_errors first_reply second_reply
# where ratio is corun/native (self: the copy started second over the first).
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
REPS=${PAIR_REPS:-6}
DUR=${PAIR_DURATION:-5}
SCPU=${PAIR_SRV_CPU:-1}
CCPU=${PAIR_CLI_CPU:-0}
CLIB=${BENCH_LIB:-$LIB}
LIST=${*:-lighttpd nginx redis}
export PATH="$PATH:/usr/sbin:/usr/lib/postgresql/15/bin"
ulimit -n "$(ulimit -Hn)"

W="$TMPD/paired"
make_web_root "$W"
CLK_TCK=$(getconf CLK_TCK)

# postgres: one data directory, initialised and filled for pgbench (scale
# 4) once; each copy of the server runs on a copy of it, as user postgres.
pg_template() {
    [ -f "$W/pgt/ready" ] && return 0
    mkdir -p "$W/pgt" && chown postgres "$W/pgt"
    setpriv --reuid postgres --regid postgres --init-groups initdb -D "$W/pgt/data" -A trust -U postgres \
        >"$W/pgt/initdb.log" 2>&1 || { echo "postgres: initdb failed: $(tail -2 "$W/pgt/initdb.log")" >&2; return 1; }
    local port pid
    port=$(free_port)
    setpriv --reuid postgres --regid postgres --init-groups postgres -D "$W/pgt/data" -p "$port" -k "$W/pgt" \
        -c listen_addresses=127.0.0.1 >"$W/pgt/log" 2>&1 &
    pid=$!
    wait_port "$port"
    for _ in $(seq 1 50); do pg_isready -q -h 127.0.0.1 -p "$port" && break; sleep 0.1; done
    pgbench -h 127.0.0.1 -p "$port" -U postgres -i -s 4 -q postgres >"$W/pgt/pgbench-i.log" 2>&1 \
        || { echo "postgres: pgbench -i failed" >&2; kill -INT "$pid"; return 1; }
    kill -INT "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    touch "$W/pgt/ready"
}

# Run time in ns of every thread of a process and its children (for
# postgres, whose backends end with the load: clock ticks of the
# postmaster, its reaped children and its live ones).
tree_ns() {
    local p t=0 n
    if [ "$srv" = postgres ]; then
        for p in $1 $(pgrep -P "$1" 2>/dev/null); do
            n=$(awk '{print $14 + $15 + $16 + $17}' /proc/"$p"/stat 2>/dev/null) || n=0
            t=$((t + ${n:-0}))
        done
        echo $((t * 1000000000 / CLK_TCK))
        return
    fi
    for p in $1 $(pgrep -P "$1" 2>/dev/null); do
        for n in $(cat /proc/"$p"/task/*/schedstat 2>/dev/null | awk '{print $1}'); do
            t=$((t + n))
        done
    done
    echo "$t"
}
# start MODE SERVER PORT: the server pinned to $SCPU; prints its pid.
start() {
    local mode=$1 srv=$2 port=$3 d="$W/$2-$3"
    mkdir -p "$d/logs"
    local -a cmd
    case $srv in
    lighttpd)
        printf '%s\n' "server.document-root = \"$W/htdocs\"" 'server.bind = "127.0.0.1"' \
            "server.port = $port" "server.errorlog = \"$d/error.log\"" 'server.max-connections = 4096' \
            'mimetype.assign = (".html" => "text/html")' 'index-file.names = ("index.html")' >"$d/l.conf"
        cmd=(lighttpd -D -f "$d/l.conf") ;;
    nginx)
        printf '%s\n' 'worker_processes 1;' "error_log $d/logs/error.log;" "pid $d/nginx.pid;" \
            'events { worker_connections 4096; }' \
            "http { access_log off; server { listen 127.0.0.1:$port; root $W/htdocs; location / { } } }" >"$d/n.conf"
        cmd=(nginx -p "$d" -c "$d/n.conf" -g 'daemon off;') ;;
    redis)
        cmd=(redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no
            --daemonize no --loglevel warning --dir "$d") ;;
    memcached)
        # As make bench runs it (bench_servers.sh): 4 threads.
        cmd=(memcached -u root -l 127.0.0.1 -p "$port" -t 4 -c 4096 -U 0 -m 256) ;;
    postgres)
        # As make bench runs it; setpriv execs (runuser would stay the
        # parent, and the postmaster would not be $!).
        rm -rf "$d/data" && cp -a "$W/pgt/data" "$d/data" && chown -R postgres "$d"
        cmd=(setpriv --reuid postgres --regid postgres --init-groups postgres -D "$d/data" -p "$port"
            -k "$d" -c listen_addresses=127.0.0.1 -c shared_buffers=64MB -c max_connections=50
            -c synchronous_commit=off) ;;
    esac
    if [ "$mode" = corun ]; then
        LD_PRELOAD="$CLIB" taskset -c "$SCPU" "${cmd[@]}" >"$d/out" 2>&1 &
    else
        taskset -c "$SCPU" "${cmd[@]}" >"$d/out" 2>&1 &
    fi
    echo $!
}
# check SERVER PORT: ok when a reply is the expected one.
check() {
    if [ "$1" = memcached ]; then
        # A set then a get through the text protocol, checked byte for byte.
        [ "$(printf 'set pk 0 0 5\r\nv%04d\r\nget pk\r\nquit\r\n' "$(($2 % 10000))" | timeout 5 python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(sys.stdin.buffer.read()); out = b""
while True:
    d = s.recv(4096)
    if not d: break
    out += d
sys.stdout.write(repr(out))' "$2" 2>/dev/null)" = "$(printf "b'STORED\\\\r\\\\nVALUE pk 0 5\\\\r\\\\nv%04d\\\\r\\\\nEND\\\\r\\\\n'" "$(($2 % 10000))")" ] \
            && echo ok || echo WRONG
    elif [ "$1" = postgres ]; then
        for _ in $(seq 1 50); do pg_isready -q -h 127.0.0.1 -p "$2" && break; sleep 0.1; done
        [ "$(psql -h 127.0.0.1 -p "$2" -U postgres -Atc "select count(*), $2 from pgbench_branches" postgres 2>/dev/null)" = "4|$2" ] \
            && echo ok || echo WRONG
    elif [ "$1" = redis ]; then
        redis-cli -p "$2" set pair-key "v$2" >/dev/null 2>&1 || true
        [ "$(redis-cli -p "$2" get pair-key 2>/dev/null)" = "v$2" ] && echo ok || echo WRONG
    else
        [ "$(curl -s --max-time 5 "http://127.0.0.1:$2/index.html" | md5sum)" = "$FILE_MD5" ] && echo ok || echo WRONG
    fi
}
# load SERVER PORT OUT: on $CCPU; OUT gets "ops errors".
load() {
    if [ "$1" = memcached ]; then
        # memcaslap's own count of operations in DUR seconds (90% gets).
        taskset -c "$CCPU" timeout $((DUR + 10)) memcaslap -s "127.0.0.1:$2" -T 1 -c 64 -t "${DUR}s" -X 100 \
            >"$3.raw" 2>&1 || true
        local n
        n=$(awk '/^Run time:/{for(i=1;i<=NF;i++) if($i=="Ops:") print $(i+1)}' "$3.raw" | tail -1)
        echo "${n:-0} $([ -n "$n" ] && echo 0 || echo 1)" >"$3"
    elif [ "$1" = postgres ]; then
        # pgbench's count of select-only transactions, 8 clients
        # (PAIR_PG_ARGS: other pgbench options, e.g. "-S -C -c 4": a
        # connection, so a forked backend, per transaction).
        local rc=0 n f
        # shellcheck disable=SC2086
        taskset -c "$CCPU" timeout $((DUR + 20)) pgbench -h 127.0.0.1 -p "$2" -U postgres ${PAIR_PG_ARGS:--S -c 8} -j 1 \
            -T "$DUR" postgres >"$3.raw" 2>&1 || rc=1
        n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$3.raw")
        f=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$3.raw")
        # Backends still ending are reaped (their ticks counted) before
        # the caller reads the postmaster's.
        sleep 0.3
        echo "${n:-0} $((${f:-0} + rc))" >"$3"
    elif [ "$1" = redis ]; then
        # About as long as the HTTP loads at this machine's loaded rates.
        local rc=0
        taskset -c "$CCPU" timeout $((DUR * 20)) redis-benchmark -p "$2" -c 50 -n $((DUR * 20000)) \
            -t get --csv >"$3.raw" 2>&1 || rc=1
        echo "$((DUR * 20000)) $(($(grep -v '^"' "$3.raw" | grep -c -i err || true) + rc))" >"$3"
    else
        taskset -c "$CCPU" timeout $((DUR + 10)) wrk -t1 -c100 -d"${DUR}s" --timeout 5s "http://127.0.0.1:$2/index.html" >"$3.raw" 2>&1 || true
        local n e
        n=$(awk '/requests in/{print $1}' "$3.raw")
        e=$(sed -n 's/.*Socket errors: connect \([0-9]*\), read \([0-9]*\), write \([0-9]*\), timeout \([0-9]*\).*/\1 \2 \3 \4/p' "$3.raw" | awk '{print $1+$2+$3+$4}')
        e=$((${e:-0} + $(sed -n 's/.*Non-2xx or 3xx responses: *\([0-9]*\).*/\1/p' "$3.raw" | awk '{s+=$1} END{print s+0}')))
        echo "${n:-0} $e" >"$3"
    fi
}
# Stops the servers (started in a command substitution: not this shell's
# children, so polled, not waited for) and their children.
stop() {
    local p all="$*"
    if [ "$srv" = postgres ]; then
        # A fast shutdown of each postmaster, which ends its children
        # and releases its shared memory; what is left then gets TERM.
        kill -INT "$@" 2>/dev/null || true
        for p in "$@"; do
            for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
        done
    fi
    for p in "$@"; do all="$all $( (pgrep -P "$p" 2>/dev/null || true) | tr "\n" " ")"; done
    # shellcheck disable=SC2086
    kill $all 2>/dev/null || true
    for p in $all; do
        for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
        kill -KILL "$p" 2>/dev/null || true
    done
}

second=corun
[ "${PAIR_SELF:-0}" = 1 ] && second=native
for srv in $LIST; do
    if [ "$srv" = postgres ] && ! pg_template; then echo "postgres: no data directory"; continue; fi
    ratios=()
    for rep in $(seq 1 "$REPS"); do
        if (( rep % 2 )); then ma=native mb=$second; else ma=$second mb=native; fi
        if [ -n "${PAIR_PORT:-}" ]; then pa=$PAIR_PORT pb=$((PAIR_PORT + 1)); else pa=$(free_port) pb=$(free_port); fi
        ida=$(start "$ma" "$srv" "$pa"); idb=$(start "$mb" "$srv" "$pb")
        wait_port "$pa"; wait_port "$pb"
        sleep 0.5
        ca=$(check "$srv" "$pa"); cb=$(check "$srv" "$pb")
        ta=$(tree_ns "$ida"); tb=$(tree_ns "$idb")
        load "$srv" "$pa" "$W/la" & la=$!
        load "$srv" "$pb" "$W/lb" & lb=$!
        wait $la $lb || true
        ta=$(( $(tree_ns "$ida") - ta )); tb=$(( $(tree_ns "$idb") - tb ))
        stop "$ida" "$idb"
        read -r na ea <"$W/la"; read -r nb eb <"$W/lb"
        line=$(awk -v ma="$ma" -v mb="$mb" -v ta="$ta" -v tb="$tb" -v na="$na" -v nb="$nb" 'BEGIN{
            ua = na ? ta / 1000 / na : 0; ub = nb ? tb / 1000 / nb : 0
            if (ma == "native") r = ua ? ub / ua : 0; else r = ub ? ua / ub : 0
            printf "%s %.3f us/op (%d ops) | %s %.3f us/op (%d ops) | %.4f", ma, ua, na, mb, ub, nb, r}')
        # A pair where either load failed (errors) is shown, not counted.
        if [ "$ea" = 0 ] && [ "$eb" = 0 ]; then ratios+=("${line##* }"); fi
        if [ -n "${PAIR_TSV:-}" ]; then
            read -ra f <<<"${line//|/}" # mode us us/op (N ops) mode us us/op (N ops) ratio
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$srv" \
                "$([ "$second" = corun ] && echo corun || echo self)" "$rep" "${f[0]}" "${f[1]}" "${f[3]#(}" \
                "${f[5]}" "${f[6]}" "${f[8]#(}" "${f[10]}" \
                "${ea:-?}" "${eb:-?}" "$ca" "$cb" >>"$PAIR_TSV"
        fi
        echo "$srv #$rep: ${line% | *} | $( [ "$second" = corun ] && echo corun/native || echo second/first) ${line##* } | errors $ea/$eb, reply $ca/$cb"
    done
    [ "${#ratios[@]}" -gt 0 ] || { echo "$srv: no pair without errors"; continue; }
    printf '%s\n' "${ratios[@]}" | sort -n | awk -v s="$srv" '{a[NR]=$1} END{
        m = NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2
        printf "%s: median CPU-per-op ratio %.3f over %d pairs (min %.3f, max %.3f)\n", s, m, NR, a[1], a[NR]}'
done
