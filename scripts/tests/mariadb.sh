# Debian's MariaDB server (issues 10 and 11), unchanged, with its default
# configuration (InnoDB on io_uring, a thread per connection, C++
# thread_local, futexes through syscall(2)), natively and then under corun
# (default workers), each on a fresh datadir: it must start, serve
# sysbench oltp_read_write (64 threads, 12 s, 4 tables of 10,000 rows) with
# no failed run and some transactions, and shut down cleanly with
# mariadb-admin. Under corun sysbench's ignored errors (deadlocks, lock
# wait timeouts) may be at most max(10, 50 %) more than natively: they
# depend on timing, which differs from run to run even natively.
# See scripts/mariadb_sysbench.sh for each run's steps and bounds.
source "$(dirname "$0")/../lib.sh"
"$ROOT/scripts/deps.sh" # mariadb-server, sysbench
export MARIADB_THREADS=64 MARIADB_TIME=12 MARIADB_TABLES=4 MARIADB_TABLE_SIZE=10000
logs="$ROOT/target/test-logs/mariadb"
rm -rf "$logs"
mkdir -p "$logs"
declare -A R
for mode in native corun; do
    out=$(bash "$ROOT/scripts/mariadb_sysbench.sh" "$mode" "$logs" 2>&1) \
        || fail "$(tail -5 <<<"$out") (logs: $logs)"
    line=$(grep '^RESULT' <<<"$out") || fail "mariadb ($mode): no result: $out"
    echo "$line"
    R[$mode]=$line
done
get() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"${R[$1]}"; }
n_ign=$(get native ignored)
c_ign=$(get corun ignored)
allowed=$((n_ign + (n_ign / 2 > 10 ? n_ign / 2 : 10)))
[ "$c_ign" -le "$allowed" ] \
    || fail "mariadb: $c_ign ignored errors (deadlocks) under corun, $n_ign natively (at most $allowed allowed)"
ok "mariadb: sysbench oltp_read_write, $MARIADB_THREADS threads, ${MARIADB_TIME} s:" \
    "native $(get native tps) tps ($(get native ignored) ignored errors, $(get native threads) kernel threads)," \
    "corun $(get corun tps) tps ($(get corun ignored) ignored errors, $(get corun threads) kernel threads," \
    "$(get corun corun_msgs) corun messages); shutdown $(get native shutdown_ms) ms native, $(get corun shutdown_ms) ms corun"
