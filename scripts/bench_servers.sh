#!/usr/bin/env bash
# make bench, part "servers": real servers from Debian packages, each run
# natively and under corun in the same run, against the same load
# generator, with the replies checked. Called by scripts/bench.sh (or
# alone: scripts/bench_servers.sh RAW_DIR). Appends to RAW_DIR/servers.tsv:
#
#   server mode(native|corun) rep rate unit errors check threads procs cpu_us
#
#
# rate is the load generator's figure (req/s, ops/s, tps); errors counts
# socket errors, non-2xx replies or error replies; check is "ok" when a
# reply fetched before the load was the expected one; threads is the most
# kernel threads the server's processes had together during the load;
# cpu_us is the server's CPU time (all its processes) per operation.
#
# Servers (each on 127.0.0.1, a free port, its own temp config and dirs):
#   apache   2.4 worker MPM (4 children x 64 threads), 600-byte static file,
#            AllowOverride All (a .htaccess probe per directory per request)
#   apache_event  the same file with the event MPM (a listener thread keeps
#            idle keep-alive connections in its epoll; workers take
#            requests), 2 children x 200 threads: room for all 200
#            connections in any child (apache_mpm_sizes)
#   nginx    2 worker processes (epoll), the same file
#   lighttpd 1 process (epoll), the same file
#   haproxy  2 threads, replies itself (http-request return)
#   redis    event loop + background threads; redis-benchmark SET/GET
#   memcached 4 threads (libevent); memaslap get/set
#   postgres one process per connection; pgbench select-only, 8 clients
# HTTP servers take wrk -t2 -c200 (keep-alive).
#
# Then the ones that scripts/servers_paired.sh knows (lighttpd, nginx with
# 1 worker, redis, memcached, postgres) run again as pairs: a native and a corun copy
# AT THE SAME TIME on one CPU, each with its own load generator on the
# other, their CPU time per operation compared (raw/servers_paired.tsv).
# Back-to-back 4 s runs of a single-process event loop swing 10-20% on this
# shared machine; a pair shares the same seconds, so its ratio does not.
#
# Environment: SERVERS_DURATION=4 seconds per measurement, SERVERS_REPS=4
# (native and corun alternate within each repetition), SERVERS="apache
# nginx ..." which ones, BENCH_LIB the libcorun.so to measure (default:
# this tree's); SERVERS_PAIR_REPS=4 pairs of SERVERS_PAIR_DURATION=4 s per
# server (0: no pairs), SERVERS_PAIR_SELF="lighttpd postgres" the servers
# also paired native against native (the noise left; "" for none). About
# 260 s for the pairs. PORT_RANGE=LO-HI keeps every server to those ports.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
RAWD=${1:-$ROOT/bench/raw}
mkdir -p "$RAWD"
DUR=${SERVERS_DURATION:-4}
REPS=${SERVERS_REPS:-4}
LIST=${SERVERS:-apache apache_event nginx lighttpd haproxy redis memcached postgres}
CLIB=${BENCH_LIB:-$LIB}
OUTF="$RAWD/servers.tsv"
: >"$OUTF"
"$ROOT/scripts/deps.sh" servers
export PATH="$PATH:/usr/sbin:/usr/lib/postgresql/15/bin"
ulimit -n "$(ulimit -Hn)"
start_s=$(date +%s)
say() { printf '[%4ss] servers: %s\n' "$(( $(date +%s) - start_s ))" "$*"; }

W="$TMPD/servers"
make_web_root "$W"

# Kernel threads of a process and its descendants (apache, nginx: a master
# and children).
tree_threads() {
    local n=0 p
    for p in $(tree_pids "$1"); do
        n=$((n + $(awk '/^Threads/{print $2}' "/proc/$p/status" 2>/dev/null || echo 0)))
    done
    echo "$n"
}
# The process and all its descendants.
tree_pids() {
    local p
    echo "$1"
    for p in $(pgrep -P "$1" 2>/dev/null); do tree_pids "$p"; done
}
tree_procs() { tree_pids "$1" | wc -l; }
# CPU time (clock ticks) of a process tree: each live process's user and
# system time plus what it collected from children it reaped.
tree_cpu() {
    local p t=0
    for p in $(tree_pids "$1"); do
        t=$(( t + $(awk '{print $14 + $15 + $16 + $17}' "/proc/$p/stat" 2>/dev/null || echo 0) ))
    done
    echo "$t"
}
# Samples the server's threads while the load runs: writes the maximum to $W/maxthr.
sample_threads() {
    local m=0 n
    while kill -0 "$1" 2>/dev/null; do
        n=$(tree_threads "$1"); [ "$n" -gt "$m" ] && m=$n
        echo "$m $(tree_procs "$1")" >"$W/maxthr.new" && mv "$W/maxthr.new" "$W/maxthr"
        sleep 0.5
    done
}
# Starts "$@" natively or under corun in the background; sets $pid.
launch() {
    local mode=$1; shift
    if [ "$mode" = corun ]; then
        env LD_PRELOAD="$CLIB" "$@" >"$W/srv.out" 2>&1 &
    else
        "$@" >"$W/srv.out" 2>&1 &
    fi
    pid=$!
}
# Stops a server and every process under it; SIGNAL (TERM unless given)
# goes to the direct child too (runuser's postgres: INT is its fast
# shutdown; TERM, a smart one, can outlast the wait). Returns when all of
# them are gone, so that the next run can reuse the data directory.
stop_tree() {
    local p kids sig=${2:-TERM}
    kids=$(tree_pids "$1" | tail -n +2)
    kill "-$sig" "$1" $(pgrep -P "$1" 2>/dev/null) 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
    for p in $1 $kids; do kill -KILL "$p" 2>/dev/null || true; done
    wait "$1" 2>/dev/null || true
    for p in $kids; do
        for _ in $(seq 1 40); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    done
}
record() { # server mode rep rate unit errors check [ops cpu_ticks]
    local thr procs us=0
    read -r thr procs <"$W/maxthr" 2>/dev/null || { thr=0; procs=0; }
    # Server CPU time per operation, in microseconds: a figure other work
    # on the machine disturbs less than the rate.
    if [ "${9:-0}" -gt 0 ] && [ "${8:-0}" -gt 0 ]; then
        us=$(awk -v t="$9" -v hz="$(getconf CLK_TCK)" -v n="$8" 'BEGIN{printf "%.2f", t / hz * 1e6 / n}')
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$thr" "$procs" "$us" >>"$OUTF"
    say "$1 $2 #$3: $4 $5, errors $6, reply $7, $thr threads in $procs processes, $us us CPU per op"
}
# wrk against an HTTP URL; prints "rate errors requests".
http_load() {
    wrk -t2 -c200 -d"${DUR}s" --timeout 5s "$1" >"$W/wrk.out" 2>&1 || true
    local rate err non2xx
    rate=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$W/wrk.out")
    err=$(sed -n 's/.*Socket errors: connect \([0-9]*\), read \([0-9]*\), write \([0-9]*\), timeout \([0-9]*\).*/\1 \2 \3 \4/p' "$W/wrk.out" | awk '{print $1+$2+$3+$4}')
    non2xx=$(sed -n 's/.*Non-2xx or 3xx responses: *\([0-9]*\).*/\1/p' "$W/wrk.out")
    echo "${rate:-0} $(( ${err:-0} + ${non2xx:-0} )) $(awk '/requests in/{print $1}' "$W/wrk.out")"
}
# Fetches URL and compares it with the expected md5 ($2).
http_check() {
    local got
    got=$(curl -s --max-time 5 "$1" | md5sum)
    [ "$got" = "$2" ] && echo ok || echo "WRONG"
}
wait_up() { # port
    for _ in $(seq 1 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# ---------------------------------------------------------------- servers
# Each srv_NAME MODE PORT starts the server (sets $pid), and load_NAME PORT
# prints "rate unit errors check".
srv_apache() { apache_with worker "$@"; }
srv_apache_event() { apache_with event "$@"; }
load_apache_event() { load_apache "$@"; }
apache_with() { # mpm mode port
    local mpm=$1; shift
    mkdir -p "$W/apache"
    chmod 777 "$W/apache"
    cat >"$W/apache/httpd.conf" <<CONF
ServerRoot "/etc/apache2"
LoadModule mpm_${mpm}_module /usr/lib/apache2/modules/mod_mpm_${mpm}.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule dir_module /usr/lib/apache2/modules/mod_dir.so
LoadModule mime_module /usr/lib/apache2/modules/mod_mime.so
TypesConfig /etc/mime.types
PidFile $W/apache/httpd.pid
Listen 127.0.0.1:$2
ServerName localhost
User www-data
Group www-data
ErrorLog $W/apache/error.log
DocumentRoot $W/htdocs
<Directory />
  AllowOverride All
</Directory>
<Directory $W/htdocs>
  Require all granted
</Directory>
$(apache_mpm_sizes "$mpm")
MaxConnectionsPerChild 0
MaxKeepAliveRequests 0
Mutex file:$W/apache default
CONF
    launch "$1" apache2 -f "$W/apache/httpd.conf" -DFOREGROUND
}
# Worker MPM: 4 children of 64 threads. The event MPM closes a kept-alive
# connection, after its reply, whenever its child holds more connections
# than ThreadsPerChild + AsyncRequestWorkerFactor x idle workers; with
# every worker busy that is ThreadsPerChild, and an unlucky child of 64
# threads got more of wrk's 200 connections than that (wrk counted read
# errors in both modes: 2-94 a run natively, with any factor). So each of
# its 2 children has 200 threads: room for every connection.
apache_mpm_sizes() {
    if [ "$1" = event ]; then
        printf '%s\n' "StartServers 2" "ServerLimit 2" "ThreadsPerChild 200" "ThreadLimit 200" \
            "MinSpareThreads 200" "MaxSpareThreads 400" "MaxRequestWorkers 400" "AsyncRequestWorkerFactor 4"
    else
        printf '%s\n' "StartServers 4" "ServerLimit 4" "ThreadsPerChild 64" "ThreadLimit 64" \
            "MinSpareThreads 64" "MaxSpareThreads 256" "MaxRequestWorkers 256"
    fi
}
load_apache() {
    local c
    c=$(http_check "http://127.0.0.1:$1/index.html" "$FILE_MD5")
    echo "$(http_load "http://127.0.0.1:$1/index.html") req/s $c" | awk '{print $1, $4, $2, $5, $3}'
}
srv_nginx() {
    mkdir -p "$W/nginx/logs"
    cat >"$W/nginx/nginx.conf" <<CONF
worker_processes 2;
error_log $W/nginx/logs/error.log;
pid $W/nginx/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  server { listen 127.0.0.1:$2; root $W/htdocs; location / { } }
}
CONF
    launch "$1" nginx -p "$W/nginx" -c "$W/nginx/nginx.conf" -g 'daemon off;'
}
load_nginx() { load_apache "$@"; }
srv_lighttpd() {
    mkdir -p "$W/lighttpd"
    cat >"$W/lighttpd/lighttpd.conf" <<CONF
server.document-root = "$W/htdocs"
server.bind = "127.0.0.1"
server.port = $2
server.errorlog = "$W/lighttpd/error.log"
server.max-connections = 4096
mimetype.assign = (".html" => "text/html")
index-file.names = ("index.html")
CONF
    launch "$1" lighttpd -D -f "$W/lighttpd/lighttpd.conf"
}
load_lighttpd() { load_apache "$@"; }
srv_haproxy() {
    mkdir -p "$W/haproxy"
    printf 'hello from haproxy\n' >"$W/haproxy/hello.txt"
    cat >"$W/haproxy/haproxy.cfg" <<CONF
global
  nbthread 2
  maxconn 4096
defaults
  mode http
  timeout client 10s
  timeout server 10s
  timeout connect 5s
frontend fe
  bind 127.0.0.1:$2
  http-request return status 200 content-type text/plain file $W/haproxy/hello.txt
CONF
    launch "$1" haproxy -db -f "$W/haproxy/haproxy.cfg"
}
load_haproxy() {
    local c
    c=$(http_check "http://127.0.0.1:$1/" "$(md5sum <"$W/haproxy/hello.txt")")
    echo "$(http_load "http://127.0.0.1:$1/") req/s $c" | awk '{print $1, $4, $2, $5, $3}'
}
srv_redis() {
    mkdir -p "$W/redis"
    launch "$1" redis-server --port "$2" --bind 127.0.0.1 --save '' --appendonly no \
        --daemonize no --loglevel warning --dir "$W/redis"
}
load_redis() {
    local c=WRONG v n
    redis-cli -p "$1" set bench-key "value-$1" >/dev/null 2>&1 || true
    v=$(redis-cli -p "$1" get bench-key 2>/dev/null || true)
    [ "$v" = "value-$1" ] && c=ok
    # About DUR seconds natively here (SET and GET at ~90k/s each).
    n=$(( DUR * 45000 ))
    # redis-benchmark stops at the first error reply (exit status != 0).
    local rc=0
    redis-benchmark -p "$1" -c 50 -n "$n" -t set,get --csv >"$W/rb.out" 2>&1 || rc=1
    # "SET","91240.88",...: the mean of SET and GET req/s; error replies
    # show as lines with ERR.
    local rate errs
    rate=$(awk -F'"' '$2=="SET"||$2=="GET"{s+=$4; k++} END{if(k) printf "%.0f", s/k; else print 0}' "$W/rb.out")
    errs=$(grep -v '^"' "$W/rb.out" | grep -c -i 'err' || true)
    errs=$(( errs + rc ))
    echo "$rate req/s $errs $c $(( 2 * n ))"
}
srv_memcached() {
    launch "$1" memcached -u root -l 127.0.0.1 -p "$2" -t 4 -c 4096 -U 0 -m 256
}
load_memcached() {
    local c=WRONG
    # A set then a get through the text protocol, checked byte for byte.
    if [ "$(printf 'set bk 0 0 5\r\nhello\r\nget bk\r\nquit\r\n' | timeout 5 python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(sys.stdin.buffer.read()); out = b""
while True:
    d = s.recv(4096)
    if not d: break
    out += d
sys.stdout.write(repr(out))' "$1" 2>/dev/null)" = "b'STORED\\r\\nVALUE bk 0 5\\r\\nhello\\r\\nEND\\r\\n'" ]; then c=ok; fi
    memcaslap -s "127.0.0.1:$1" -T 2 -c 64 -t "${DUR}s" -X 100 >"$W/ms.out" 2>&1 || true
    local rate errs
    rate=$(awk '/^Run time:/{for(i=1;i<=NF;i++) if($i=="TPS:") print $(i+1)}' "$W/ms.out" | tail -1)
    errs=$(grep -ciE 'error|fail' "$W/ms.out" || true)
    echo "${rate:-0} ops/s ${errs:-0} $c $(awk '/^Run time:/{for(i=1;i<=NF;i++) if($i=="Ops:") print $(i+1)}' "$W/ms.out" | tail -1)"
}
PG_READY=""
pg_init() {
    [ -n "$PG_READY" ] && return 0
    mkdir -p "$W/pg"
    chown postgres "$W/pg"
    runuser -u postgres -- initdb -D "$W/pg/data" -A trust -U postgres >"$W/pg/initdb.log" 2>&1 || return 1
    PG_READY=1
}
srv_postgres() {
    pg_init || { say "postgres: initdb failed: $(tail -3 "$W/pg/initdb.log")"; pid=""; return; }
    launch "$1" runuser -u postgres -- env LD_PRELOAD="$([ "$1" = corun ] && echo "$CLIB")" \
        postgres -D "$W/pg/data" -p "$2" -k "$W/pg" -c listen_addresses=127.0.0.1 \
        -c shared_buffers=64MB -c max_connections=50 -c synchronous_commit=off
}
load_postgres() {
    local c=WRONG
    for _ in $(seq 1 50); do pg_isready -q -h 127.0.0.1 -p "$1" && break; sleep 0.1; done
    if [ ! -f "$W/pg/initialised" ]; then
        pgbench -h 127.0.0.1 -p "$1" -U postgres -i -s 4 -q postgres >"$W/pg/pgbench-i.log" 2>&1 && touch "$W/pg/initialised"
    fi
    [ "$(psql -h 127.0.0.1 -p "$1" -U postgres -Atc 'select count(*) from pgbench_branches' postgres 2>/dev/null)" = 4 ] && c=ok
    pgbench -h 127.0.0.1 -p "$1" -U postgres -S -c 8 -j 2 -T "$DUR" postgres >"$W/pgb.out" 2>&1 || true
    local rate errs
    rate=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$W/pgb.out" | head -1)
    errs=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$W/pgb.out")
    echo "${rate:-0} tps ${errs:-0} $c $(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$W/pgb.out")"
}

# ---------------------------------------------------------------- run
one() { # server mode rep
    local port
    port=$(free_port)
    rm -f "$W/maxthr"
    "srv_$1" "$2" "$port"
    if [ -z "${pid:-}" ]; then record "$1" "$2" "$3" 0 - 0 FAILED 0 0; return; fi
    if ! wait_up "$port"; then
        say "$1 $2: did not start: $(tail -3 "$W/srv.out" | tr '\n' ' ')"
        stop_tree "$pid"; record "$1" "$2" "$3" 0 - 0 FAILED 0 0; return
    fi
    sleep 0.5
    sample_threads "$pid" &
    local sampler=$! res cpu0 cpu1
    cpu0=$(tree_cpu "$pid")
    res=$("load_$1" "$port")
    cpu1=$(tree_cpu "$pid")
    kill -0 "$pid" 2>/dev/null || res="0 - 0 DIED 0"
    kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null || true
    stop_tree "$pid" "$([ "$1" = postgres ] && echo INT || echo TERM)"
    [ "$1" = postgres ] && rm -f "$W/pg/data/postmaster.pid"
    # shellcheck disable=SC2086
    record "$1" "$2" "$3" $res $((cpu1 - cpu0))
    sleep 0.5
}
for rep in $(seq 1 "$REPS"); do
    for s in $LIST; do
        # Alternate which mode goes first, so a slow phase of the machine
        # does not always hit the same one.
        if (( rep % 2 )); then one "$s" native "$rep"; one "$s" corun "$rep"
        else one "$s" corun "$rep"; one "$s" native "$rep"; fi
    done
done
# ---------------------------------------------------------------- pairs
# (Shorter back-to-back runs do not fix the swing: lighttpd alone, twice
# each, interleaved, on a loaded machine, 2026-12-02: 4 x 4 s gave run
# ratios with a standard deviation of 0.23 and 0.31 in 47-48 s; 8 x 2 s,
# 0.26 and 0.31 in 63-71 s, the fixed start/check/stop cost of each run
# making it dearer. Either way the median is uncertain by ~10%.)
PAIR_LIST=""
for s in $LIST; do case $s in lighttpd|nginx|redis|memcached|postgres) PAIR_LIST="$PAIR_LIST $s" ;; esac; done
PAIRF="$RAWD/servers_paired.tsv"
: >"$PAIRF"
if [ -n "$PAIR_LIST" ] && [ "${SERVERS_PAIR_REPS:-4}" -gt 0 ]; then
    say "pairs (scripts/servers_paired.sh):$PAIR_LIST"
    # shellcheck disable=SC2086
    PAIR_REPS=${SERVERS_PAIR_REPS:-4} PAIR_DURATION=${SERVERS_PAIR_DURATION:-4} PAIR_TSV=$PAIRF \
        BENCH_LIB=$CLIB "$ROOT/scripts/servers_paired.sh" $PAIR_LIST | sed 's/^/  /' || say "pairs: FAILED"
    SELF_LIST=""
    for s in ${SERVERS_PAIR_SELF-lighttpd postgres}; do [[ " $PAIR_LIST " == *" $s "* ]] && SELF_LIST="$SELF_LIST $s"; done
    if [ -n "$SELF_LIST" ]; then
        say "pairs, native against native:$SELF_LIST"
        # shellcheck disable=SC2086
        PAIR_SELF=1 PAIR_REPS=${SERVERS_PAIR_REPS:-4} PAIR_DURATION=${SERVERS_PAIR_DURATION:-4} PAIR_TSV=$PAIRF \
            "$ROOT/scripts/servers_paired.sh" $SELF_LIST | sed 's/^/  /' || say "pairs: FAILED"
    fi
fi
say "done in $(( $(date +%s) - start_s )) s"
