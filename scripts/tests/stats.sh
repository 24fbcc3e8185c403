# CORUN_STATS=1 prints, at exit, counts that match a program whose waits
# are known: 100 threads each park once on a pipe read while main sleeps
# 200 ms, then main writes each its byte and joins them. The program prints
# the same natively and under corun (one worker and the default);
# CORUN_STATS=0 prints nothing.
source "$(dirname "$0")/../lib.sh"
"$BIN/parked_threads" stats 100 >"$TMPD/native" || fail "natively"
grep -qx "100 threads each read their byte" "$TMPD/native" || fail "natively: $(cat "$TMPD/native")"
# stat NAME FILE: the value of "  NAME: value" in a report.
stat() { sed -n "s/^  $1: \([0-9]*\)\$/\1/p" "$2"; }
for w in 1 default; do
    envs=(-u CORUN_WORKERS); [ $w = default ] || envs=(CORUN_WORKERS=$w)
    env "${envs[@]}" CORUN_STATS=1 LD_PRELOAD="$LIB" timeout 60 "$BIN/parked_threads" stats 100 >"$TMPD/out.$w" 2>"$TMPD/err.$w" \
        || fail "workers=$w: exit $?: $(cat "$TMPD/err.$w")"
    cmp -s "$TMPD/native" "$TMPD/out.$w" || fail "workers=$w: stdout differs from the native one"
    cat "$TMPD/err.$w"
    grep -qx "corun stats:" "$TMPD/err.$w" || fail "workers=$w: no report"
    spawned=$(stat "coroutines spawned" "$TMPD/err.$w")
    peak=$(stat "coroutines alive at most" "$TMPD/err.$w")
    switches=$(stat "context switches" "$TMPD/err.$w")
    fdread=$(stat "parks on fd read" "$TMPD/err.$w")
    timer=$(stat "parks on timer" "$TMPD/err.$w")
    parks=$(stat "parks" "$TMPD/err.$w")
    stalls=$(stat "stalls" "$TMPD/err.$w")
    held=$(stat "coroutine records held" "$TMPD/err.$w")
    # Every thread was made by main (not main itself); all 100 and main were
    # alive at once (each waits for main's byte); each thread ran at least
    # twice (before and after its read parked); each read parked once.
    [ "$spawned" = 100 ] || fail "workers=$w: spawned $spawned, expected 100"
    [ "$peak" = 101 ] || fail "workers=$w: at most $peak alive, expected 101"
    # Every thread was joined: no record of one is held any more (main's is).
    [ -n "$held" ] && [ "$held" -le 1 ] || fail "workers=$w: ${held:-no} coroutine records held after every join"
    [ "${switches:-0}" -ge 200 ] || fail "workers=$w: $switches switches, expected 200 or more"
    [ "${fdread:-0}" -ge 100 ] || fail "workers=$w: $fdread parks on fd read, expected 100 or more"
    [ "${timer:-0}" -ge 1 ] || fail "workers=$w: $timer parks on timer (main's sleep), expected 1 or more"
    [ "$parks" -ge $((fdread + timer)) ] || fail "workers=$w: $parks parks in all, fewer than by cause"
    [ "$stalls" = 0 ] || fail "workers=$w: $stalls stalls"
    # Wake-up to run (wake_latency.rs): the 100 reads and main's timer and
    # joins are wake-ups that queued; with one worker all of them on their
    # own worker. The longest took less than the second that a bad clock
    # or a stale stamp would show as.
    own=$(sed -n 's/^  wake-up to run, woken on its own worker: \([0-9]*\) wake-ups;.*/\1/p' "$TMPD/err.$w")
    other=$(sed -n 's/^  wake-up to run, woken by another thread: \([0-9]*\) wake-ups;.*/\1/p' "$TMPD/err.$w")
    [ $((${own:-0} + ${other:-0})) -ge 101 ] || fail "workers=$w: ${own:-no} + ${other:-no} wake-ups, expected 101 or more"
    if [ $w = 1 ]; then [ -z "$other" ] || fail "workers=1: $other wake-ups by another thread"; fi
    longest=$(sed -n 's/^  wake-up to run.*longest < \([0-9]*\) \(us\|ms\)$/\1 \2/p' "$TMPD/err.$w" |
        awk '{v = $2 == "ms" ? $1 * 1000 : $1; if (v > m) m = v} END {print m + 0}')
    [ "$longest" -gt 0 ] && [ "$longest" -le 1024000 ] || fail "workers=$w: longest wake-up to run: ${longest} us"
    ok "workers=$w: spawned $spawned, peak $peak, $switches switches, $fdread parks on fd read, $timer on timer, $((${own:-0} + ${other:-0})) wake-ups"
done
CORUN_STATS=0 LD_PRELOAD="$LIB" "$BIN/parked_threads" stats 10 >/dev/null 2>"$TMPD/err0" || fail "CORUN_STATS=0 run"
[ ! -s "$TMPD/err0" ] || fail "CORUN_STATS=0 printed: $(cat "$TMPD/err0")"
ok "CORUN_STATS=0: nothing"
