# The cost of a yield round trip in instructions (callgrind: deterministic,
# unlike a wall-clock time on a shared machine): two coroutines alternating
# on one worker with corun_yield (co_bench_micro pingpong), at two
# iteration counts, so that start-up and exit cancel out. Each round trip
# is two switches through the scheduler, with everything that makes a
# coroutine a thread carried across them (errno, signal delivery, the
# debugger's registers). 507 instructions before the FIFO ring and the
# run queue's fast path (main's library at 56db1b2), 451 after; the bound
# leaves room for compiler variation and catches a return to the old path.
source "$(dirname "$0")/../lib.sh"
command -v valgrind >/dev/null 2>&1 || { echo "SKIP: valgrind is not installed"; exit 0; }
MAX=480
ir() {
    CORUN_WORKERS=1 LD_PRELOAD="$LIB" timeout 120 valgrind --tool=callgrind \
        --callgrind-out-file="$TMPD/cg.$1" "$BIN/co_bench_micro" pingpong "$1" 1 \
        >"$TMPD/out.$1" 2>"$TMPD/err.$1" || fail "pingpong $1: $(cat "$TMPD/out.$1" "$TMPD/err.$1")"
    grep -q '^RESULT pingpong' "$TMPD/out.$1" || fail "pingpong $1 printed no result"
    sed -n 's/.*Collected : //p' "$TMPD/err.$1"
}
a=$(ir 20000)
b=$(ir 40000)
# A trial and its warm-up each make N round trips: 2 x 20,000 more.
per=$(( (b - a) / 40000 ))
echo "instructions a yield round trip: $per ($a at 20,000, $b at 40,000)"
[ "$per" -gt 0 ] || fail "no instructions counted"
[ "$per" -le "$MAX" ] || fail "$per instructions a round trip, more than $MAX"
ok "a yield round trip takes $per instructions (at most $MAX)"
