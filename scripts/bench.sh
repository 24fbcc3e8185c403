#!/usr/bin/env bash
# make bench: every figure of corun next to what a program would use instead,
# measured in the same run on this machine. Writes bench/RESULTS.md,
# bench/throughput.svg and bench/latency.svg (regenerated, never edited).
#
# Parts:
#   1. micro: yield round trip (corun vs swapcontext vs kernel-thread
#      eventfd ping-pong), spawn+join (vs pthread_create+join), 100,000
#      coroutines sleeping 1 ms (vs 100,000 kernel threads); median of 5.
#   2. memory per idle connection in threaded_http (and threaded_echo): native
#      threads vs corun (epoll_http as the floor), as server RSS and as the
#      machine's MemAvailable drop (kernel stacks included); median of 3.
#   3. wrk: threaded_http natively, under corun (1 worker and all workers),
#      and epoll_http, at 100, 1,000 and 10,000 keep-alive connections.
#   4. MariaDB (Debian's mariadbd, default configuration) under sysbench
#      oltp_read_write, 64 threads: natively and under corun.
#   5. real servers (scripts/bench_servers.sh): Apache worker MPM, nginx,
#      lighttpd, HAProxy, Redis, memcached, PostgreSQL from Debian packages,
#      each natively and under corun, replies checked; then lighttpd,
#      nginx and Redis as native and corun copies at the same time, their
#      CPU per operation compared; about 7 minutes.
#   5. perf profiles of corun's hot paths (where the machine allows).
#
# Peers, built here and put in the micro, memory and wrk tables: Go (a raw
# net.Conn server with a goroutine per connection, c-tests/go/http_server.go,
# and c-tests/go/micro.go) with Debian's golang-go, and may, the Rust
# stackful-coroutine runtime under may_minihttp (bench/may_http, built with
# cargo into target/may-http), and libco, Tencent's C++ stackful-coroutine
# library with its system-call hooks (bench/libco, from a clone of its
# repository or LIBCO_SRC=checkout, scripts/build_libco.sh). The three
# servers send threaded_http's exact bytes.
#
# Environment (for quick trials; the defaults are the benchmark):
#   BENCH_DURATION=10 seconds per wrk point   BENCH_CONNS="100 1000 10000"
#   BENCH_BODY=128 response body bytes        BENCH_IDLE_CONNS=10000
#   BENCH_QUICK=1 fewer micro iterations      BENCH_OUT=bench
#   BENCH_REPS=3 wrk repetitions of each point of 1,000 connections or more
#   (points of fewer connections run once); the report takes medians.
#   BENCH_MARIADB_TIME=30 seconds of sysbench per MariaDB run
#   BENCH_PARTS="micro idle wrk mariadb servers perf" the parts to run
#   SERVERS_DURATION=4 SERVERS_REPS=4 SERVERS="apache nginx ..." (servers)
#   SERVERS_PAIR_REPS=4 SERVERS_PAIR_DURATION=4 SERVERS_PAIR_SELF=lighttpd
#   (servers: native and corun copies at once, scripts/servers_paired.sh)
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

DUR=${BENCH_DURATION:-10}
CONNS=${BENCH_CONNS:-100 1000 10000}
BODY=${BENCH_BODY:-128}
IDLE_N=${BENCH_IDLE_CONNS:-10000}
OUT=${BENCH_OUT:-$ROOT/bench}
QUICK=${BENCH_QUICK:-0}
REPS=${BENCH_REPS:-3}
MDB_TIME=${BENCH_MARIADB_TIME:-30}
PARTS=" ${BENCH_PARTS:-micro idle wrk mariadb servers perf} "
part() { [[ "$PARTS" == *" $1 "* ]]; }
NCPU=$(nproc)
RAW="$OUT/raw" # the raw figures, kept next to the report they make
rm -rf "$RAW"
mkdir -p "$OUT" "$RAW"
ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge 10100 ] || echo "bench: warning: RLIMIT_NOFILE $(ulimit -n) is below 10,100; 10,000-connection points will fail" >&2
start_s=$(date +%s)
say() { printf '[%4ss] %s\n' "$(( $(date +%s) - start_s ))" "$*"; }
# MemAvailable KernelStack PageTables Slab, in KiB, tab-separated: each the
# median of 5 samples 0.2 s apart (other processes move these figures).
meminfo() {
    local samples
    samples=$(for _ in 1 2 3 4 5; do
        awk '/^(MemAvailable|KernelStack|PageTables|Slab):/{v[$1]=$2}
             END{printf "%d %d %d %d\n", v["MemAvailable:"], v["KernelStack:"], v["PageTables:"], v["Slab:"]}' /proc/meminfo
        sleep 0.2
    done)
    local i out=()
    for i in 1 2 3 4; do out+=("$(cut -d' ' -f"$i" <<<"$samples" | sort -n | sed -n 3p)"); done
    (IFS=$'\t'; echo "${out[*]}")
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hwm_kib() { awk '/^VmHWM/{print $2}' "/proc/$1/status"; }
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# ---------------------------------------------------------------- machine
{
    echo "date	$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "cpu	$(awk -F: '/model name/{gsub(/^ +/,"",$2); print $2; exit}' /proc/cpuinfo)"
    echo "cpus	$NCPU"
    echo "mem	$(awk '/MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
    echo "kernel	$(uname -r)"
    echo "glibc	$(ldd --version 2>&1 | head -1 | awk '{print $NF}')"
    echo "gcc	$(gcc -dumpfullversion)"
    echo "rustc	$(rustc --version 2>/dev/null | awk '{print $2}')"
    echo "wrk	$(wrk -v 2>&1 | head -1 | awk '{print $2}')"
    echo "mariadb	$(/usr/sbin/mariadbd --version 2>/dev/null | awk '{print $3}')"
    echo "sysbench	$(sysbench --version 2>/dev/null | awk '{print $2}')"
    echo "mariadb_time	$MDB_TIME"
    echo "commit	$(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo ' (dirty)')"
    echo "duration	$DUR"
    echo "body	$BODY"
    echo "idle_n	$IDLE_N"
    echo "nofile	$(ulimit -n)"
    echo "quick	$QUICK"
    echo "load_start	$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "procs_start	$(ps -e --no-headers | wc -l)"
} >"$RAW/meta.tsv"
say "machine: $NCPU CPUs, $(awk -F'\t' '$1=="cpu"{print $2}' "$RAW/meta.tsv"), kernel $(uname -r)"

# ---------------------------------------------------------------- peers
# Go and may builds; a peer that cannot be built leaves its rows FAILED.
PEERS="$ROOT/target/bench-peers"
mkdir -p "$PEERS"
GO_MICRO="$PEERS/go_micro"; GO_HTTP="$PEERS/go_http"
MAY_DIR="$ROOT/target/may-http/release"
MAY_MICRO="$MAY_DIR/may_micro"; MAY_HTTP="$MAY_DIR/may_http"
command -v go >/dev/null 2>&1 || { apt-get -o DPkg::Lock::Timeout=600 install -y -qq golang-go >/dev/null 2>&1 || true; }
for g in micro:"$GO_MICRO" http_server:"$GO_HTTP"; do
    src=${g%%:*}; exe=${g#*:}
    GOCACHE="$ROOT/target/go-cache" go build -o "$exe" "$ROOT/c-tests/go/$src.go" 2>"$TMPD/go-$src.err" ||
        { rm -f "$exe"; say "peers: Go $src not built: $(head -c 200 "$TMPD/go-$src.err")"; }
done
cargo build -q --release --manifest-path "$ROOT/bench/may_http/Cargo.toml" \
    --target-dir "$ROOT/target/may-http" 2>"$TMPD/may.err" ||
    { rm -f "$MAY_MICRO" "$MAY_HTTP"; say "peers: may not built: $(tail -3 "$TMPD/may.err" | tr '\n' ' ')"; }
# libco: built from a checkout (LIBCO_SRC) or a clone (scripts/build_libco.sh).
LIBCO_DIR="$PEERS/libco"; LIBCO_MICRO="$LIBCO_DIR/libco_micro"; LIBCO_HTTP="$LIBCO_DIR/libco_http"
bash "$ROOT/scripts/build_libco.sh" "$LIBCO_DIR" 2>"$TMPD/libco.err" ||
    { rm -f "$LIBCO_MICRO" "$LIBCO_HTTP"; say "peers: $(tail -1 "$TMPD/libco.err")"; }
echo "libco	$(cut -c1-12 "$LIBCO_DIR/libco.commit" 2>/dev/null || echo '?')" >>"$RAW/meta.tsv"
echo "go	$(go version 2>/dev/null | awk '{print $3}')" >>"$RAW/meta.tsv"
echo "may	$(awk '/^name = "may"$/{getline; print $3}' "$ROOT/bench/may_http/Cargo.lock" 2>/dev/null | tr -d '"')" >>"$RAW/meta.tsv"
# peer KEY EXE CMD...: micro KEY CMD..., or a FAILED row if EXE is missing.
peer() {
    local key=$1 exe=$2; shift 2
    if [ -x "$exe" ]; then micro "$key" "$@"
    else printf '%s\tFAILED %s was not built\n' "$key" "$(basename "$exe")" >>"$RAW/micro.tsv"; fi
}

# ---------------------------------------------------------------- 1. micro
# micro KEY CMD...: runs CMD, keeps its RESULT line as KEY (or FAILED).
micro() {
    local key=$1; shift
    local out
    if out=$("$@" 2>"$TMPD/micro.err") && grep -q '^RESULT' <<<"$out"; then
        local r
        r=$(grep '^RESULT' <<<"$out" | head -1)
        printf '%s\t%s\n' "$key" "${r#RESULT * }" >>"$RAW/micro.tsv"
        say "micro $key: $(sed 's/ trials=.*//' <<<"${r#RESULT * }")"
    else
        local why
        why=$(tr '\n' ' ' <"$TMPD/micro.err" | cut -c1-200)
        printf '%s\tFAILED %s\n' "$key" "${why:-exit status $?}" >>"$RAW/micro.tsv"
        say "micro $key: FAILED: $why"
    fi
}
co() { env LD_PRELOAD="$LIB" "$@"; }
: >"$RAW/micro.tsv"
YI=2000000; EI=100000; SI=100000; PI=20000; XI=500; TR=5
[ "$QUICK" = 1 ] && { YI=200000; EI=20000; SI=20000; PI=2000; XI=100; TR=3; }
if part micro; then
micro pingpong_w1 env CORUN_WORKERS=1 LD_PRELOAD="$LIB" "$BIN/co_bench_micro" pingpong $YI $TR
micro yield_alone co "$BIN/co_bench_micro" yield $YI $TR
micro swapcontext "$BIN/bench_baselines" swapcontext $YI $TR
micro eventfd_pinned "$BIN/bench_baselines" eventfd $EI $TR 0
micro eventfd_unpinned "$BIN/bench_baselines" eventfd $((EI / 4)) $TR -1
micro spawn_w1 env CORUN_WORKERS=1 LD_PRELOAD="$LIB" "$BIN/co_bench_micro" spawn $SI $TR
micro spawn_wall co "$BIN/co_bench_micro" spawn $SI $TR
micro pthread "$BIN/bench_baselines" pthread $PI $TR
# Threads as coroutines with their own TLS (the default) and sharing
# their worker's (CORUN_TLS=worker): what a thread pointer switch costs.
micro thread_spawn_w1 env CORUN_WORKERS=1 LD_PRELOAD="$LIB" "$BIN/bench_baselines" pthread $SI $TR
micro thread_spawn_w1_shared env CORUN_WORKERS=1 CORUN_TLS=worker LD_PRELOAD="$LIB" "$BIN/bench_baselines" pthread $SI $TR
micro thread_yield_w1 env CORUN_WORKERS=1 LD_PRELOAD="$LIB" "$BIN/bench_baselines" thread_yield $YI $TR
micro thread_yield_w1_shared env CORUN_WORKERS=1 CORUN_TLS=worker LD_PRELOAD="$LIB" "$BIN/bench_baselines" thread_yield $YI $TR
micro sleepers_100k co "$BIN/co_bench_micro" sleepers 100000 1 $TR
if grep -q '^sleepers_100k	FAILED' "$RAW/micro.tsv"; then
    micro sleepers_30k co "$BIN/co_bench_micro" sleepers 30000 1 $TR
fi
micro sleepers_threads "$BIN/bench_baselines" sleepers 100000 1 3
# corun at 1 and 2 workers next to Go (GOMAXPROCS) and may (MAY_WORKERS)
# at 1 and 2: yield round trip, spawn+join, 100,000 sleepers.
micro spawn_w2 env CORUN_WORKERS=2 LD_PRELOAD="$LIB" "$BIN/co_bench_micro" spawn $SI $TR
micro sleepers_w1 env CORUN_WORKERS=1 LD_PRELOAD="$LIB" "$BIN/co_bench_micro" sleepers 100000 1 $TR
micro sleepers_w2 env CORUN_WORKERS=2 LD_PRELOAD="$LIB" "$BIN/co_bench_micro" sleepers 100000 1 $TR
for n in 1 2; do
    peer go_pingpong_p$n "$GO_MICRO" env GOMAXPROCS=$n "$GO_MICRO" pingpong $YI $TR
    peer go_spawn_p$n "$GO_MICRO" env GOMAXPROCS=$n "$GO_MICRO" spawn $SI $TR
    peer go_sleepers_p$n "$GO_MICRO" env GOMAXPROCS=$n "$GO_MICRO" sleepers 100000 1 $TR
    peer may_pingpong_w$n "$MAY_MICRO" env MAY_WORKERS=$n "$MAY_MICRO" pingpong $YI $TR
    peer may_spawn_w$n "$MAY_MICRO" env MAY_WORKERS=$n "$MAY_MICRO" spawn $((SI / 10)) $TR
    peer may_sleepers_w$n "$MAY_MICRO" env MAY_WORKERS=$n "$MAY_MICRO" sleepers 100000 1 $TR
done
# libco runs its coroutines on the thread that made them: 1 worker only.
peer libco_pingpong_w1 "$LIBCO_MICRO" "$LIBCO_MICRO" pingpong $YI $TR
peer libco_spawn_w1 "$LIBCO_MICRO" "$LIBCO_MICRO" spawn $SI $TR
peer libco_sleepers_w1 "$LIBCO_MICRO" "$LIBCO_MICRO" sleepers 100000 1 $TR
# Channels (issue 15): corun's unbuffered ping-pong next to Go's, when Go
# can be had (installed here if missing; the row says FAILED otherwise).
CI=200000; [ "$QUICK" = 1 ] && CI=20000
micro chan_w1 env CORUN_WORKERS=1 LD_PRELOAD="$LIB" "$BIN/co_bench_micro" chan $CI $TR
micro chan_wall co "$BIN/co_bench_micro" chan $((CI / 20)) $TR
command -v go >/dev/null 2>&1 || { apt-get -o DPkg::Lock::Timeout=600 install -y -qq golang-go >/dev/null 2>&1 || true; }
if command -v go >/dev/null 2>&1 && GOCACHE="$ROOT/target/go-cache" go build -o "$TMPD/chan_pingpong" "$ROOT/c-tests/go/chan_pingpong.go" 2>"$TMPD/go.err"; then
    micro go_chan "$TMPD/chan_pingpong" $CI $TR
    micro go_chan_p1 env GOMAXPROCS=1 "$TMPD/chan_pingpong" $CI $TR
else
    printf 'go_chan\tFAILED Go is not available (apt-get install golang-go)\n' >>"$RAW/micro.tsv"
fi
micro mutex_corun co "$BIN/co_bench_micro" mutex $YI $TR
micro mutex_pthread co "$BIN/co_bench_micro" pthread_mutex $YI $TR
# Waits that park (issue 11): two threads ping-ponging over eventfds (each
# read parks on the fd), and a turn handed between two processes through a
# process-shared condition variable (glibc's wait on a blocking-pool
# helper), under corun with one worker next to the same natively.
PC=5000; [ "$QUICK" = 1 ] && PC=1000
micro eventfd_threads_w1 env CORUN_WORKERS=1 LD_PRELOAD="$LIB" "$BIN/bench_baselines" eventfd $((EI / 4)) $TR -1
micro pshared_cond "$BIN/bench_baselines" pshared_cond $PC $TR
micro pshared_cond_w1 env CORUN_WORKERS=1 LD_PRELOAD="$LIB" "$BIN/bench_baselines" pshared_cond $PC $TR
# A process's start and end, natively and with the child under corun (the
# parent stays native): what a build or a shell script pays per command.
micro exec_native "$BIN/bench_baselines" exec $XI $TR
# A fork-per-connection server's child (fork, a 5-byte echo, exit, wait):
# the forking program natively and under corun.
micro fork_native "$BIN/bench_baselines" fork $((XI * 4)) $TR
micro fork_corun co "$BIN/bench_baselines" fork $((XI * 4)) $TR
micro exec_corun "$BIN/bench_baselines" exec $XI $TR "$LIB"
fi

# ---------------------------------------------------------------- 2. memory
# idle VARIANT REP: N idle keep-alive connections parked in a fresh server
# (threaded_http; echo_*: threaded_echo, held by scripts/hold_conns.py).
: >"$RAW/idle.tsv"
idle() {
    local v=$1 rep=$2 port srv cli pre="" prog=threaded_http exe
    case $v in
        corun|echo_corun) pre=$LIB ;;
        epoll) prog=epoll_http ;;
    esac
    [[ $v == echo_* ]] && prog=threaded_echo
    exe="$BIN/$prog"
    case $v in go) exe=$GO_HTTP ;; may) exe=$MAY_HTTP ;; libco) exe=$LIBCO_HTTP ;; esac
    if [ ! -x "$exe" ]; then printf '%s\t%s\tFAILED\n' "$v" "$rep" >>"$RAW/idle.tsv"; return; fi
    port=$(free_port)
    env LD_PRELOAD="$pre" "$exe" "$port" "$BODY" 2>"$TMPD/idle-srv.err" &
    srv=$!
    wait_port "$port"
    sleep 2
    local rss0 m0 rss1 m1 thr
    rss0=$(rss_kib "$srv"); m0=$(meminfo)
    rm -f "$TMPD/ready"
    if [[ $v == echo_* ]]; then
        python3 "$ROOT/scripts/hold_conns.py" 127.0.0.1 "$port" "$IDLE_N" "$TMPD/ready" >"$TMPD/idle.out" 2>&1 &
        cli=$!
        for _ in $(seq 1 1200); do
            [ -s "$TMPD/ready" ] && { echo "idle: $(cat "$TMPD/ready")" >>"$TMPD/idle.out"; break; }
            kill -0 "$cli" 2>/dev/null || break
            sleep 0.1
        done
    else
        "$BIN/http_client" idle "$port" "$IDLE_N" "$BODY" >"$TMPD/idle.out" 2>&1 &
        cli=$!
    fi
    for _ in $(seq 1 1200); do
        grep -q '^idle:' "$TMPD/idle.out" && break
        kill -0 "$cli" 2>/dev/null || break
        sleep 0.1
    done
    if ! grep -q '^idle:' "$TMPD/idle.out"; then
        say "idle $v: FAILED: $(head -c 300 "$TMPD/idle.out")"
        printf '%s\t%s\tFAILED\n' "$v" "$rep" >>"$RAW/idle.tsv"
        stop "$cli"; stop "$srv"; return
    fi
    sleep 2
    rss1=$(rss_kib "$srv"); m1=$(meminfo); thr=$(nthreads "$srv")
    stop "$cli"; stop "$srv"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$v" "$rep" "$rss0" "$rss1" "$thr" "$m0" "$m1" >>"$RAW/idle.tsv"
    say "idle $v #$rep: $IDLE_N conns: server RSS +$(( (rss1 - rss0) / 1024 )) MiB, MemAvailable -$(( (${m0%%$'\t'*} - ${m1%%$'\t'*}) / 1024 )) MiB, $thr kernel threads"
    sleep 3 # the kernel frees the last run's memory lazily
}
if part idle; then
for rep in 1 2 3; do
    for v in native corun epoll go may libco; do idle "$v" "$rep"; done
    if [ -x "$BIN/threaded_echo" ] && [ -f "$ROOT/scripts/hold_conns.py" ]; then
        for v in echo_native echo_corun; do idle "$v" "$rep"; done
    fi
done
fi

# ---------------------------------------------------------------- 3. wrk
cat >"$TMPD/summary.lua" <<'LUA'
done = function(s, lat, req)
  local e = s.errors
  io.write(string.format(
    "SUMMARY requests=%d duration_us=%d connect=%d read=%d write=%d timeout=%d status=%d p50_us=%d p99_us=%d max_us=%d\n",
    s.requests, s.duration, e.connect, e.read, e.write, e.timeout, e.status,
    lat:percentile(50), lat:percentile(99), lat.max))
end
LUA
: >"$RAW/wrk.tsv"
# point GROUP VARIANT CONNS. GROUP pinned: server on CPU 1, wrk on CPU 0;
# shared: both free on all CPUs.
point() {
    local group=$1 v=$2 c=$3 rep=$4 port srv pre="" prog=threaded_http workers=0
    local spin=() cpin=() exe peer_env=()
    case $v in
        native) ;;
        corun1) pre=$LIB; workers=1 ;;
        corunN) pre=$LIB; workers=$NCPU ;;
        epoll) prog=epoll_http ;;
    esac
    exe="$BIN/$prog"
    # The peers with as many threads as corun has workers in the group.
    case $v in
        go1) exe=$GO_HTTP; peer_env=(GOMAXPROCS=1) ;;
        goN) exe=$GO_HTTP; peer_env=(GOMAXPROCS="$NCPU") ;;
        may1) exe=$MAY_HTTP; peer_env=(MAY_WORKERS=1) ;;
        mayN) exe=$MAY_HTTP; peer_env=(MAY_WORKERS="$NCPU") ;;
        libco1) exe=$LIBCO_HTTP; peer_env=(LIBCO_THREADS=1) ;;
        libcoN) exe=$LIBCO_HTTP; peer_env=(LIBCO_THREADS="$NCPU") ;;
    esac
    [ -x "$exe" ] || { say "wrk $group $v c=$c: not built, skipped"; return; }
    if [ "$group" = pinned ]; then spin=(taskset -c 1); cpin=(taskset -c 0); fi
    port=$(free_port)
    if [ "$workers" -gt 0 ]; then
        "${spin[@]}" env CORUN_WORKERS="$workers" LD_PRELOAD="$pre" "$exe" "$port" "$BODY" 2>"$TMPD/srv.err" &
    else
        "${spin[@]}" env "${peer_env[@]}" LD_PRELOAD="$pre" "$exe" "$port" "$BODY" 2>"$TMPD/srv.err" &
    fi
    srv=$!
    wait_port "$port"
    sleep 0.3
    local t0 maxthr=0 maxrss=0
    t0=$(cpu_ticks "$srv")
    (
        m=0; r=0
        while kill -0 "$srv" 2>/dev/null; do
            n=$(nthreads "$srv" 2>/dev/null || echo 0); [ "${n:-0}" -gt "$m" ] && m=$n
            echo "$m" >"$TMPD/maxthr.new" && mv "$TMPD/maxthr.new" "$TMPD/maxthr"
            sleep 0.5
        done
    ) &
    local sampler=$!
    "${cpin[@]}" wrk -t "$NCPU" -c "$c" -d "${DUR}s" --timeout 10s --latency -s "$TMPD/summary.lua" \
        "http://127.0.0.1:$port/" >"$TMPD/wrk.out" 2>&1 || true
    local line alive=yes
    line=$(grep '^SUMMARY' "$TMPD/wrk.out" || echo "SUMMARY requests=0 duration_us=1 connect=0 read=0 write=0 timeout=0 status=0 p50_us=0 p99_us=0 max_us=0")
    kill -0 "$srv" 2>/dev/null || alive=no
    local ticks=0 hwm=0
    if [ $alive = yes ]; then
        ticks=$(( $(cpu_ticks "$srv" 2>/dev/null || echo "$t0") - t0 )); hwm=$(hwm_kib "$srv" 2>/dev/null || echo 0)
    fi
    maxthr=$(cat "$TMPD/maxthr" 2>/dev/null || true)
    stop "$srv"; stop "$sampler"
    maxthr=${maxthr:-0}; ticks=${ticks:-0}; hwm=${hwm:-0}
    val() { local x; x=$(sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$line"); echo "${x:-0}"; }
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$group" "$v" "$c" "$rep" \
        "$(val requests)" "$(val duration_us)" "$(val p50_us)" "$(val p99_us)" "$(val max_us)" \
        "$(val connect)" "$(val read)" "$(val write)" "$(val timeout)" "$(val status)" \
        "$hwm" "$maxthr" "$ticks" >>"$RAW/wrk.tsv"
    local rps
    rps=$(awk -v r="$(val requests)" -v d="$(val duration_us)" 'BEGIN{printf "%.0f", r / (d / 1e6)}')
    say "wrk #$rep $group $v c=$c: $rps req/s, p50 $(( $(val p50_us) / 1000 )) ms, p99 $(( $(val p99_us) / 1000 )) ms, errors $(( $(val connect) + $(val read) + $(val write) + $(val timeout) )), peak RSS $(( hwm / 1024 )) MiB, $maxthr threads$([ $alive = yes ] || echo ', SERVER DIED')"
    [ $alive = yes ] || echo "$group $v $c: $(tail -5 "$TMPD/srv.err")" >>"$RAW/died.txt"
    rm -f "$TMPD/maxthr"
    sleep 0.5
}
if part wrk; then
# Repetitions go round the whole sweep, so that a slow phase of the
# machine hits every variant alike.
for rep in $(seq 1 "$REPS"); do
    for c in $CONNS; do
        [ "$c" -lt 1000 ] && [ "$rep" -gt 1 ] && continue
        for v in native corun1 epoll go1 may1 libco1; do point pinned "$v" "$c" "$rep"; done
        for v in native corunN epoll goN mayN libcoN; do point shared "$v" "$c" "$rep"; done
    done
done
fi

# ---------------------------------------------------------------- 4. mariadb
# A real thread-per-connection server: scripts/mariadb_sysbench.sh starts
# a fresh mariadbd, runs sysbench against it and shuts it down; natively,
# then under corun (all workers).
: >"$RAW/mariadb.tsv"
if part mariadb; then
    for v in native corun; do
        if out=$(MARIADB_TIME=$MDB_TIME bash "$ROOT/scripts/mariadb_sysbench.sh" "$v" "$TMPD/mariadb" 2>&1) &&
            r=$(grep '^RESULT' <<<"$out"); then
            printf '%s\t%s\n' "$v" "${r#RESULT }" >>"$RAW/mariadb.tsv"
            say "mariadb $v: $(sed 's/.* tps=\([^ ]*\).* ignored=\([^ ]*\).* threads=\([^ ]*\).*/\1 transactions\/s, \2 ignored errors, \3 kernel threads/' <<<"$r")"
        else
            printf '%s\tFAILED %s\n' "$v" "$(tail -3 <<<"$out" | tr '\n' ' ' | cut -c1-300)" >>"$RAW/mariadb.tsv"
            say "mariadb $v: FAILED: $(tail -3 <<<"$out")"
        fi
    done
fi

# ---------------------------------------------------------------- 5. servers
if part servers; then
    echo "servers_duration	${SERVERS_DURATION:-4}" >>"$RAW/meta.tsv"
    echo "servers_reps	${SERVERS_REPS:-4}" >>"$RAW/meta.tsv"
    echo "servers_pair_reps	${SERVERS_PAIR_REPS:-4}" >>"$RAW/meta.tsv"
    echo "servers_pair_duration	${SERVERS_PAIR_DURATION:-4}" >>"$RAW/meta.tsv"
    say "real servers (scripts/bench_servers.sh)"
    "$ROOT/scripts/bench_servers.sh" "$RAW" || say "servers: FAILED (exit $?)"
fi

# ---------------------------------------------------------------- 5. perf
: >"$RAW/perf.txt"
if ! part perf; then
    echo "(not run)" >"$RAW/perf.txt"
elif perf record -q -e cpu-clock -o "$TMPD/probe.data" true >/dev/null 2>&1; then
    profile() { # TITLE DATA
        {
            echo "### $1"
            echo
            echo '```'
            perf report -i "$2" --stdio --no-children --sort dso,symbol --percent-limit 1.5 2>/dev/null |
                grep -v '^#' | grep -v '^$' | sed -E 's/[[:space:]]+-[[:space:]]+-[[:space:]]*$//' | head -25 || true
            echo '```'
            echo
        } >>"$RAW/perf.txt"
    }
    # threaded_http under corun, 1 worker pinned, 1,000 connections.
    port=$(free_port)
    taskset -c 1 env CORUN_WORKERS=1 LD_PRELOAD="$LIB" "$BIN/threaded_http" "$port" "$BODY" 2>/dev/null &
    srv=$!
    wait_port "$port"
    taskset -c 0 wrk -t "$NCPU" -c 1000 -d 8s "http://127.0.0.1:$port/" >/dev/null 2>&1 &
    wrkpid=$!
    sleep 2
    perf record -q -e cpu-clock -F 4000 -a -C 1 -o "$TMPD/http.data" -- sleep 5 >/dev/null 2>&1 || true
    wait "$wrkpid" || true
    stop "$srv"
    profile "threaded_http under corun (1 worker, CPU 1), wrk 1,000 connections (CPU 0): all of CPU 1" "$TMPD/http.data"
    # The same load on epoll_http, for comparison.
    port=$(free_port)
    taskset -c 1 "$BIN/epoll_http" "$port" "$BODY" 2>/dev/null &
    srv=$!
    wait_port "$port"
    taskset -c 0 wrk -t "$NCPU" -c 1000 -d 8s "http://127.0.0.1:$port/" >/dev/null 2>&1 &
    wrkpid=$!
    sleep 2
    perf record -q -e cpu-clock -F 4000 -a -C 1 -o "$TMPD/epoll.data" -- sleep 5 >/dev/null 2>&1 || true
    wait "$wrkpid" || true
    stop "$srv"
    profile "epoll_http, same load (the limit)" "$TMPD/epoll.data"
    perf record -q -e cpu-clock -F 4000 -o "$TMPD/yield.data" -- \
        env CORUN_WORKERS=1 LD_PRELOAD="$LIB" "$BIN/co_bench_micro" pingpong $YI 1 >/dev/null 2>&1 || true
    profile "yield ping-pong (co_bench_micro pingpong, 1 worker)" "$TMPD/yield.data"
    perf record -q -e cpu-clock -F 4000 -o "$TMPD/spawn.data" -- \
        env LD_PRELOAD="$LIB" "$BIN/co_bench_micro" spawn $SI 1 >/dev/null 2>&1 || true
    profile "spawn+join ($NCPU workers)" "$TMPD/spawn.data"
    perf record -q -e cpu-clock -F 4000 -o "$TMPD/sleep.data" -- \
        env LD_PRELOAD="$LIB" "$BIN/co_bench_micro" sleepers 30000 1 1 >/dev/null 2>&1 || true
    profile "30,000 sleepers of 1 ms" "$TMPD/sleep.data"
    say "perf profiles taken"
fi
# Syscalls per operation where a micro goal depends on them (strace counts
# exactly; its own slowdown does not matter for counts).
if part perf && command -v strace >/dev/null; then
    sysc() { # TITLE OPS CMD...
        local title=$1 ops=$2; shift 2
        strace -f -c -o "$TMPD/strace.out" "$@" >/dev/null 2>&1 || true
        {
            echo "### syscalls per operation: $title"
            echo
            echo '```'
            awk -v ops="$ops" '$1 ~ /^[0-9.]+$/ && NF >= 5 { n = $4; name = $NF;
                 if (n / ops >= 0.01) printf "%10.2f  %s\n", n / ops, name }' "$TMPD/strace.out" | sort -rn | head -12
            echo '```'
            echo
        } >>"$RAW/perf.txt"
    }
    sysc "spawn+join, $NCPU workers (20,000 spawns incl. warm-up)" 20000 \
        env LD_PRELOAD="$LIB" "$BIN/co_bench_micro" spawn 10000 1
    sysc "spawn+join, 1 worker (20,000 spawns incl. warm-up)" 20000 \
        env CORUN_WORKERS=1 LD_PRELOAD="$LIB" "$BIN/co_bench_micro" spawn 10000 1
    sysc "100,000 sleepers of 1 ms, $NCPU workers (per sleeper)" 100000 \
        env LD_PRELOAD="$LIB" "$BIN/co_bench_micro" sleepers 100000 1 1
else
    echo "perf record does not work here (perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null))" >"$RAW/perf.txt"
    say "perf unavailable"
fi
perf stat -e instructions true >"$TMPD/pstat" 2>&1 || true
grep -q 'not supported' "$TMPD/pstat" && echo "hwcounters	no" >>"$RAW/meta.tsv" || echo "hwcounters	yes" >>"$RAW/meta.tsv"

# ---------------------------------------------------------------- report
echo "elapsed	$(( $(date +%s) - start_s ))" >>"$RAW/meta.tsv"
echo "load_end	$(cut -d' ' -f1-3 /proc/loadavg)" >>"$RAW/meta.tsv"
python3 "$ROOT/scripts/bench_report.py" "$RAW" "$OUT"
say "wrote $OUT/RESULTS.md, $OUT/throughput.svg, $OUT/latency.svg, $OUT/servers.svg"
sed -n '/^## Goals/,/^## /p' "$OUT/RESULTS.md" | sed '$d'
