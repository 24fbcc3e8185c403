# corun dump of a forked child (no exec): the child starts its own dump
# thread (before, the parent's did not survive the fork and the dump of a
# preforking server's worker, uWSGI's, waited 10 s for nothing). The
# child of c-tests/fork_parked.c parks a thread on a read of stdin: its
# dump names the child's pid, the thread parked on fd 0 (read) with
# forked_reader in its backtrace; then the program ends as natively.
source "$(dirname "$0")/../lib.sh"
CORUN="$ROOT/scripts/corun"
for w in 1 default; do
    rm -f "$TMPD/fifo"; mkfifo "$TMPD/fifo"
    envs=(-u CORUN_WORKERS); [ "$w" = default ] || envs=(CORUN_WORKERS="$w")
    env "${envs[@]}" CORUN_DUMP_SIGNAL=USR2 LD_PRELOAD="$LIB" "$BIN/fork_parked" \
        <"$TMPD/fifo" >"$TMPD/out" 2>"$TMPD/err" &
    pid=$!
    exec 7>"$TMPD/fifo"
    for _ in $(seq 1 200); do grep -q ready "$TMPD/out" && break; sleep 0.05; done
    child=$(sed -n 's/^child \([0-9]*\) ready$/\1/p' "$TMPD/out")
    [ -n "$child" ] || fail "workers=$w: the child never got ready: $(cat "$TMPD/err")"
    "$CORUN" dump "$child" >"$TMPD/dump" 2>"$TMPD/dump.err" || fail "workers=$w: corun dump of the forked child: $(cat "$TMPD/dump.err")"
    grep -q "^corun dump of pid $child: " "$TMPD/dump" || fail "workers=$w: not the child's dump: $(head -3 "$TMPD/dump")"
    grep -q "(started at forked_reader), worker [0-9]*: parked on fd 0 (read) for [0-9.]* s$" "$TMPD/dump" ||
        fail "workers=$w: no thread parked on fd 0 in the dump: $(cat "$TMPD/dump")"
    grep -qx "    #1 forked_reader (fork_parked)" "$TMPD/dump" || fail "workers=$w: no forked_reader frame: $(cat "$TMPD/dump")"
    echo x >&7; exec 7>&-
    wait "$pid" || fail "workers=$w: the program failed: $(cat "$TMPD/err")"
    [ "$(sed 1d "$TMPD/out")" = "child exited 0" ] || fail "workers=$w: $(cat "$TMPD/out")"
done
ok "corun dump of a forked child's parked thread (1 and default workers)"
