# Reads of /proc files in a threaded program are made inline, not on the
# blocking pool (src/hooks/file.rs `learn_reads`): procfs refuses
# RWF_NOWAIT, and each read went to the pool, two thread hand-offs for a
# read the kernel makes from memory (an open, read and close of
# /proc/self/stat: 10-115 us under corun, 3 us natively).
# c-tests/proc_reads.c checks every read's content (the pid in stat and
# status, a pread against a read); here the same output as natively, and
# corun's stats: at most 10 blocking-pool hand-offs for its 3,000 reads
# (the old runtime: over 3,000).
source "$(dirname "$0")/../lib.sh"
"$BIN/proc_reads" >"$TMPD/native" 2>"$TMPD/native.err" || fail "natively: $(cat "$TMPD/native.err")"
for w in 1 2; do
    CORUN_WORKERS=$w CORUN_STATS=1 LD_PRELOAD="$LIB" timeout -s KILL 60 "$BIN/proc_reads" \
        >"$TMPD/corun" 2>"$TMPD/corun.err" || fail "$w workers: $(cat "$TMPD/corun.err")"
    diff -u "$TMPD/native" "$TMPD/corun" || fail "$w workers: the output differs from the native one"
    n=$(sed -n 's/^ *blocking-pool hand-offs: \([0-9]*\).*/\1/p' "$TMPD/corun.err")
    [ -n "$n" ] || fail "$w workers: no hand-off count in the stats"
    [ "$n" -le 10 ] || fail "$w workers: $n blocking-pool hand-offs for 3,000 reads of /proc"
    ok "$w workers: as natively, $n blocking-pool hand-offs"
done
