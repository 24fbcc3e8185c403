# daemon() and forkpty() from a program with threads (c-tests/daemon_fork.c;
# src/hooks/process/daemon.rs): libc forks inside them, and no interposed
# fork saw it, so the child kept the parent's runtime: a thread the parent
# had (a ticker) went on ticking in the daemon and in the pty child (with
# 1 worker), which natively have only the thread that forked. Same report
# natively and under corun with 1 and 2 workers: own session, ticker gone,
# new threads right, cwd "/" and stdio on /dev/null for the daemon, a
# terminal for the pty child, status 0.
source "$(dirname "$0")/../lib.sh"
# run_daemon ENV...: runs the daemon mode, waits for its report, prints it.
run_daemon() {
    local out="$TMPD/daemon.$RANDOM"
    env "$@" timeout 20 "$BIN/daemon_fork" daemon "$out" || fail "daemon ($*): the parent exited $?"
    for _ in $(seq 1 100); do [ -s "$out" ] && break; sleep 0.1; done
    [ -s "$out" ] || fail "daemon ($*): no report in 10 s"
    cat "$out"
}
native_d=$(run_daemon X=1)
native_p=$(timeout 20 "$BIN/daemon_fork" forkpty) || fail "forkpty natively"
echo "$native_d"; echo "$native_p"
[ "$native_d" = "daemon: own session yes, ticker gone, 50 of 50 threads right, cwd /, stdio /dev/null" ] || fail "natively: $native_d"
echo "$native_p" | grep -qx "child status 0" || fail "forkpty natively: $native_p"
for w in 1 2; do
    d=$(run_daemon CORUN_WORKERS=$w LD_PRELOAD="$LIB")
    [ "$d" = "$native_d" ] || fail "daemon, $w workers: $d"
    p=$(CORUN_WORKERS=$w LD_PRELOAD="$LIB" timeout 20 "$BIN/daemon_fork" forkpty) || fail "forkpty, $w workers: exit $?"
    [ "$p" = "$native_p" ] || fail "forkpty, $w workers: $p"
done
ok "daemon() and forkpty() children have only the forking thread, as natively, with 1 and 2 workers"
