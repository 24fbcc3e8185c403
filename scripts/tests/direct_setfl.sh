# A file opened without O_DIRECT, written once (on ext4 corun then makes
# its small writes inline: the filesystem refuses RWF_NOWAIT for buffered
# writes and the kernel only copies them into the page cache), then given
# O_DIRECT with fcntl(F_SETFL): each O_DIRECT write waits for the device
# (50-200 us on this machine's virtio disk, 55 ms for the first), so under
# corun it must go to the blocking pool, not wait on the worker. Before,
# the fd kept its "inline" decision and all 40 writes waited on the worker
# (0 hand-offs). c-tests/direct_setfl.c checks every byte read back.
# Skipped where the test directory's filesystem takes buffered RWF_NOWAIT
# or refuses O_DIRECT (tmpfs): there no write is made inline.
source "$(dirname "$0")/../lib.sh"
N=40
probe=$("$BIN/direct_setfl" probe "$TMPD")
case $probe in
    yes:*) ;;
    *) echo "SKIP: $TMPD: $probe"; exit 0 ;;
esac
want="a buffered record, then $N O_DIRECT writes after F_SETFL: every byte read back"
out=$(timeout 60 "$BIN/direct_setfl" run "$TMPD" $N) || fail "natively: $out"
[ "$out" = "$want" ] || fail "natively: $out"
for w in 1 default; do
    envs=(-u CORUN_WORKERS); [ $w = default ] || envs=(CORUN_WORKERS=$w)
    out=$(env "${envs[@]}" CORUN_STATS=1 LD_PRELOAD="$LIB" timeout 60 "$BIN/direct_setfl" run "$TMPD" $N 2>"$TMPD/err.$w") \
        || fail "workers=$w: exit $?: $out $(cat "$TMPD/err.$w")"
    [ "$out" = "$want" ] || fail "workers=$w: $out"
    pool=$(sed -n 's/^  blocking-pool hand-offs: \([0-9]*\)$/\1/p' "$TMPD/err.$w")
    [ "${pool:-0}" -ge $N ] || fail "workers=$w: $pool blocking-pool hand-offs for $N O_DIRECT writes: they waited for the device on the worker"
done
ok "O_DIRECT set by F_SETFL on a file written inline before: its $N writes went to the blocking pool, every byte read back"
