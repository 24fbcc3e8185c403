# A logger's pattern (c-tests/file_lock_log.c): two threads each append
# 500 lines to one file, each line between a lock and an unlock (fcntl
# F_SETLKW, F_OFD_SETLKW, flock, lockf), as Kea's log4cplus appender does;
# then a lock a child holds for 300 ms is waited for while another thread
# runs. Output diffed natively, with CORUN_THREADS=native and under corun
# (1 and default workers). Then corun's statistics: uncontended locks and
# unlocks are answered inline (the form that does not wait first), and so
# are the small appends on a local filesystem that refuses RWF_NOWAIT for
# buffered writes (ext4 here), so only a handful of calls reach the
# blocking pool. Before, every lock, unlock and append was a hand-off
# (about 4,000 here), and Kea answered 3-5 times slower than natively on a
# loaded machine.
source "$(dirname "$0")/../lib.sh"
same_everywhere file_lock_log "$BIN/file_lock_log" "$TMPD/log.txt"
grep -qx "file_lock_log: all checks passed" "$TMPD/file_lock_log.native" || fail "no success line"
CORUN_STATS=1 CORUN_WORKERS=1 LD_PRELOAD="$LIB" timeout 60 "$BIN/file_lock_log" "$TMPD/log.txt" >"$TMPD/out" 2>"$TMPD/err" \
    || fail "stats run: $(tail -3 "$TMPD/err")"
handoffs=$(sed -n 's/^ *blocking-pool hand-offs: *\([0-9]*\).*/\1/p' "$TMPD/err")
[ -n "$handoffs" ] || fail "no hand-off count in the statistics: $(cat "$TMPD/err")"
echo "blocking-pool hand-offs: $handoffs (2,000 locks and unlocks, 1,000 appends)"
[ "$handoffs" -lt 100 ] || fail "$handoffs hand-offs: uncontended locks, unlocks or small appends went to the blocking pool"
ok "file locks and small appends inline, a held lock waited for parked"
