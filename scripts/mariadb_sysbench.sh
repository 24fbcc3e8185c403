#!/usr/bin/env bash
# mariadb_sysbench.sh MODE LOGDIR: Debian's MariaDB server, with its default
# configuration (InnoDB, io_uring, one thread per connection), on a fresh
# datadir, loaded with sysbench oltp_read_write, then shut down with
# mariadb-admin; natively (MODE native) or under corun (MODE corun:
# LD_PRELOAD, CORUN_WORKERS as the environment has it). As root, on
# 127.0.0.1, a free port, its own socket, pid file and datadir. Every step
# is bounded in time; a server that hangs has its stacks written to
# LOGDIR/MODE-stacks.txt (gdb), and under corun its coroutines' waits to
# LOGDIR/corun-dump.txt (corun dump), before it is killed.
#
# Prints one line and exits 0:
#   RESULT mode=M tps=T transactions=N ignored=E lat_avg_ms=A lat_p95_ms=P
#          start_ms=S shutdown_ms=D threads=K hwm_kib=H corun_msgs=C
# (ignored: sysbench's ignored errors, i.e. deadlocks and lock wait
# timeouts; threads: the most kernel threads the server had; corun_msgs:
# lines corun wrote to the server's error log, e.g. the watchdog's), or
# prints why it failed and exits 1. Logs stay in LOGDIR.
#
# Environment: MARIADB_THREADS=64 MARIADB_TIME=30 (s) MARIADB_TABLES=4
# MARIADB_TABLE_SIZE=10000; MARIADB_SYSBENCH_OPTS="--histogram ..." more
# options for the sysbench run (split on spaces). Used by scripts/tests/mariadb.sh and make bench.
source "$(dirname "$0")/lib.sh"
mode=${1:?usage: mariadb_sysbench.sh native|corun LOGDIR}
logs=${2:?usage: mariadb_sysbench.sh native|corun LOGDIR}
THREADS=${MARIADB_THREADS:-64}
TIME=${MARIADB_TIME:-30}
TABLES=${MARIADB_TABLES:-4}
SIZE=${MARIADB_TABLE_SIZE:-10000}
export PATH="$PATH:/usr/sbin"
for c in mariadbd mariadb-install-db mariadb-admin mariadb sysbench; do
    command -v "$c" >/dev/null || fail "$c is missing (scripts/deps.sh installs mariadb-server and sysbench)"
done
[ "$mode" = native ] || [ "$mode" = corun ] || fail "mode must be native or corun, not $mode"
mkdir -p "$logs"
d="$TMPD/$mode"
mkdir -p "$d"
err="$logs/$mode-server.err"
ms() { echo $(($(date +%s%N) / 1000000)); }
srv=""
# Writes the server's stacks to LOGDIR (for a hang), then kills it. Under
# corun, first what each coroutine waits on (corun dump: the server runs
# with CORUN_DUMP_SIGNAL=USR2, which mariadbd leaves alone), to
# LOGDIR/corun-dump.txt: gdb sees only the workers' stacks.
stacks_and_kill() {
    [ -n "$srv" ] && kill -0 "$srv" 2>/dev/null || return 0
    if [ "$mode" = corun ]; then
        timeout -k 5 30 "$ROOT/scripts/corun" dump "$srv" >"$logs/corun-dump.txt" 2>&1 || true
    fi
    if command -v gdb >/dev/null; then
        timeout -k 5 60 gdb -p "$srv" -batch -ex 'thread apply all bt 30' >"$logs/$mode-stacks.txt" 2>&1 || true
    fi
    kill -9 "$srv" 2>/dev/null || true
    wait "$srv" 2>/dev/null || true
}
die() { stacks_and_kill; fail "mariadb ($mode): $*"; }
admin() { timeout -k 5 "$1" mariadb-admin --no-defaults -uroot --socket="$d/sock" --connect-timeout=5 "${@:2}"; }

timeout -k 5 120 mariadb-install-db --no-defaults --datadir="$d/data" --user=root \
    --auth-root-authentication-method=normal --skip-test-db >"$logs/$mode-install.log" 2>&1 \
    || fail "mariadb ($mode): mariadb-install-db failed: $(tail -5 "$logs/$mode-install.log")"

port=$(free_port)
args=(--no-defaults --datadir="$d/data" --user=root --bind-address=127.0.0.1 --port="$port"
    --socket="$d/sock" --pid-file="$d/mariadbd.pid" --log-error="$err")
t0=$(ms)
if [ "$mode" = corun ]; then
    CORUN_DUMP_SIGNAL=USR2 LD_PRELOAD="$LIB" mariadbd "${args[@]}" >"$logs/$mode-server.out" 2>&1 &
else
    mariadbd "${args[@]}" >"$logs/$mode-server.out" 2>&1 &
fi
srv=$!
up=0
for _ in $(seq 1 300); do # 60 s
    kill -0 "$srv" 2>/dev/null || fail "mariadb ($mode): mariadbd exited while starting: $(tail -5 "$err" "$logs/$mode-server.out")"
    if admin 5 ping >/dev/null 2>&1; then up=1; break; fi
    sleep 0.2
done
[ $up = 1 ] || die "no answer to ping within 60 s of starting: $(tail -3 "$err")"
start_ms=$(($(ms) - t0))

# The most kernel threads the server has, sampled twice a second.
(
    m=0
    while kill -0 "$srv" 2>/dev/null; do
        n=$(nthreads "$srv" 2>/dev/null || echo 0)
        [ "${n:-0}" -gt "$m" ] && m=$n && echo "$m" >"$d/maxthr"
        sleep 0.5
    done
) &

timeout -k 5 30 mariadb --no-defaults -uroot --socket="$d/sock" -e "CREATE DATABASE sbtest" \
    >"$logs/$mode-create.log" 2>&1 || die "CREATE DATABASE failed: $(tail -3 "$logs/$mode-create.log")"
sb=(sysbench oltp_read_write --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port"
    --mysql-user=root --mysql-db=sbtest --tables="$TABLES" --table-size="$SIZE")
timeout -k 5 120 "${sb[@]}" --threads="$TABLES" prepare >"$logs/$mode-prepare.log" 2>&1 \
    || die "sysbench prepare failed or took over 120 s: $(tail -5 "$logs/$mode-prepare.log")"
read -r -a sb_extra <<<"${MARIADB_SYSBENCH_OPTS:-}"
rc=0
timeout -k 5 $((TIME + 60)) "${sb[@]}" --threads="$THREADS" --time="$TIME" "${sb_extra[@]}" run >"$logs/$mode-run.log" 2>&1 || rc=$?
[ $rc = 124 ] && die "sysbench run still running $((TIME + 60)) s after it started (a $TIME s run): $(tail -5 "$logs/$mode-run.log")"
[ $rc = 0 ] || die "sysbench run failed (exit $rc): $(grep -m3 -iE 'fatal|error' "$logs/$mode-run.log")"
kill -0 "$srv" 2>/dev/null || fail "mariadb ($mode): mariadbd died during the run: $(tail -5 "$err")"
hwm=$(awk '/^VmHWM/{print $2}' "/proc/$srv/status" 2>/dev/null || echo 0)
val() { sed -n "s/^ *$1 *\([0-9.]*\).*/\1/p" "$logs/$mode-run.log" | head -1; }
tx=$(val 'transactions:')
tps=$(sed -n 's/^ *transactions: *[0-9]* *(\([0-9.]*\) per sec.*/\1/p' "$logs/$mode-run.log" | head -1)
ign=$(val 'ignored errors:')
avg=$(val 'avg:')
p95=$(val '95th percentile:')
[ -n "$tx" ] && [ -n "$tps" ] && [ -n "$ign" ] || die "cannot read sysbench's figures: $(tail -20 "$logs/$mode-run.log")"
[ "$tx" -gt 0 ] || die "sysbench made no transaction"

t1=$(ms)
admin 60 shutdown >"$logs/$mode-shutdown.log" 2>&1 || die "mariadb-admin shutdown failed or took over 60 s: $(tail -3 "$logs/$mode-shutdown.log")"
for _ in $(seq 1 300); do # 60 s
    kill -0 "$srv" 2>/dev/null || break
    sleep 0.2
done
kill -0 "$srv" 2>/dev/null && die "mariadbd still running 60 s after mariadb-admin shutdown: $(tail -3 "$err")"
src=0
wait "$srv" || src=$?
shutdown_ms=$(($(ms) - t1))
[ $src = 0 ] || fail "mariadb ($mode): mariadbd exited with status $src after shutdown: $(tail -5 "$err")"
grep -q "Shutdown complete" "$err" || fail "mariadb ($mode): no 'Shutdown complete' in the error log: $(tail -5 "$err")"
msgs=$(grep -c '^corun:' "$err" || true)
echo "RESULT mode=$mode tps=$tps transactions=$tx ignored=$ign lat_avg_ms=$avg lat_p95_ms=$p95" \
    "start_ms=$start_ms shutdown_ms=$shutdown_ms threads=$(cat "$d/maxthr" 2>/dev/null || echo 0)" \
    "hwm_kib=${hwm:-0} corun_msgs=${msgs:-0}"
