# The watchdog names a coroutine that holds its worker once, by what the
# user knows it as: a C start routine (spin_forever), the callable of a C++
# std::thread (a lambda of main, or the function spin_for), a Rust
# std::thread by its program and closure (not std's trampoline alone); an
# echo on the other worker keeps answering meanwhile. It stays quiet for a
# coroutine that yields with nothing else to run, and for main creating
# 100,000 threads without a pause. Each program prints natively what it
# prints under corun (one worker and the default).
source "$(dirname "$0")/../lib.sh"
# With preemption on, a coroutine that computes no longer holds its worker
# (the switch count moves): these reports are the cooperative scheduler's.
export CORUN_PREEMPT_MS=0
# The watchdog prints only when CORUN_STALL_MS is set (then also a
# coroutine that computes); by default stderr stays the native one.
CORUN_STALL_MS=100 CORUN_WORKERS=2 corun "$BIN/co_multicore" stall 500 >"$TMPD/out" 2>"$TMPD/err" || fail "stall run failed: $(cat "$TMPD/out" "$TMPD/err")"
cat "$TMPD/out" "$TMPD/err"
n=$(grep -c "corun: worker .* stalled for .* in coroutine .* (started at spin_forever)" "$TMPD/err" || true)
[ "$n" = 1 ] || fail "expected one watchdog line naming spin_forever, got $n"
probe=$(sed -n 's/.*longest \([0-9.]*\) ms$/\1/p' "$TMPD/out")
awk -v p="$probe" 'BEGIN { exit !(p < 100) }' || fail "the echo on the other worker stalled ${probe} ms"
# CORUN_STALL_MS=0 turns it off.
CORUN_STALL_MS=0 CORUN_WORKERS=2 corun "$BIN/co_multicore" stall 300 >/dev/null 2>"$TMPD/err2"
grep -q stalled "$TMPD/err2" && fail "watchdog printed with CORUN_STALL_MS=0"
ok "watchdog named the spinning C coroutine once"
env -u CORUN_STALL_MS CORUN_WORKERS=2 LD_PRELOAD="$LIB" "$BIN/co_multicore" stall 500 >/dev/null 2>"$TMPD/err3" \
    || fail "stall run (default threshold) failed: $(cat "$TMPD/err3")"
grep -q stalled "$TMPD/err3" && fail "a computing coroutine was reported without CORUN_STALL_MS: $(cat "$TMPD/err3")"
ok "without CORUN_STALL_MS, a coroutine that computes is not reported"

# runs NAME WANT_STALL_PATTERN CMD...: natively, then under corun with one
# worker and the default; the same stdout each time; under corun exactly
# one stall line, matching the pattern (none if the pattern is empty).
runs() {
    local name=$1 want=$2; shift 2
    timeout 60 "$@" >"$TMPD/$name.native" 2>/dev/null || fail "$name natively: exit $?"
    [ -s "$TMPD/$name.native" ] || fail "$name printed nothing natively"
    local w out
    for w in 1 default; do
        out="$TMPD/$name.$w"
        if [ $w = default ]; then
            timeout 60 env -u CORUN_WORKERS LD_PRELOAD="$LIB" "$@" >"$out" 2>"$out.err" || fail "$name (workers=$w): exit $?: $(cat "$out.err")"
        else
            timeout 60 env CORUN_WORKERS=$w LD_PRELOAD="$LIB" "$@" >"$out" 2>"$out.err" || fail "$name (workers=$w): exit $?: $(cat "$out.err")"
        fi
        cmp -s "$TMPD/$name.native" "$out" || fail "$name (workers=$w): stdout differs from the native one: $(cat "$out")"
        n=$(grep -c "stalled" "$out.err" || true)
        if [ -z "$want" ]; then
            [ "$n" = 0 ] || fail "$name (workers=$w): the watchdog spoke: $(cat "$out.err")"
        else
            [ "$n" = 1 ] || fail "$name (workers=$w): expected one stall line, got $n: $(cat "$out.err")"
            grep -q -- "$want" "$out.err" || fail "$name (workers=$w): the stall line does not match '$want': $(cat "$out.err")"
        fi
        ok "$name (workers=$w): $(cat "$out.err" | head -1)"
    done
}
# A nanosleep of 500 ms made by an inline system call blocks the worker where corun cannot see. By
# default the watchdog prints nothing (stderr stays the native one, empty
# here; main's library printed a stall line) but still sees the stall
# (CORUN_STATS counts it); with CORUN_STALL_MS set it names block_for.
(unset CORUN_STALL_MS; runs cxx_block_quiet "" "$BIN/watchdog_names" block 500)
timeout 60 env -u CORUN_STALL_MS CORUN_STATS=1 CORUN_WORKERS=1 LD_PRELOAD="$LIB" "$BIN/watchdog_names" block 500 \
    >/dev/null 2>"$TMPD/block_stats.err" || fail "block with CORUN_STATS=1: $(cat "$TMPD/block_stats.err")"
grep -q stalled "$TMPD/block_stats.err" && fail "the watchdog printed a stall without CORUN_STALL_MS: $(cat "$TMPD/block_stats.err")"
stalls=$(sed -n 's/^  stalls: \([0-9]*\)$/\1/p' "$TMPD/block_stats.err")
[ "${stalls:-0}" -ge 1 ] || fail "the blocked worker was not counted as a stall by default: $(cat "$TMPD/block_stats.err")"
ok "by default a blocked worker is counted ($stalls stall) and not printed"
export CORUN_STALL_MS=100
runs cxx_block "in coroutine [0-9]* (started at std::thread running block_for(long)); other" "$BIN/watchdog_names" block 500
runs cxx_lambda "in coroutine [0-9]* (started at std::thread running main::{lambda()#1}); other" "$BIN/watchdog_names" lambda 500
runs cxx_fnptr "in coroutine [0-9]* (started at std::thread running spin_for(long)); other" "$BIN/watchdog_names" fnptr 500
# Quiet cases: a 250 ms threshold, so that a loaded machine descheduling a
# worker for a moment is not taken for a stall.
CORUN_STALL_MS=250 runs cxx_yield "" "$BIN/watchdog_names" yield 1000
# The watchdog learns std's thread start from the first (300 ms) spinning
# thread, then names the closure of the second.
CORUN_STALL_MS=500 runs rust_spin "(started at Rust std::thread of rust_threads, closure at rust_threads+0x[0-9a-f]*); other" "$BIN/rust_threads" spin 1000
# main creating threads without a pause (about 300 ms for 100,000 under
# corun; it was reported as stalled before): natively 2,000 (a kernel
# thread each), under corun 100,000.
timeout 60 "$BIN/watchdog_names" create 2000 >"$TMPD/create.native" || fail "create natively"
for w in 1 2; do
    CORUN_STALL_MS=100 CORUN_WORKERS=$w timeout 120 env LD_PRELOAD="$LIB" "$BIN/watchdog_names" create 100000 >"$TMPD/create.$w" 2>"$TMPD/create.$w.err" \
        || fail "create 100000 (workers=$w): $(cat "$TMPD/create.$w.err")"
    cmp -s "$TMPD/create.native" "$TMPD/create.$w" || fail "create (workers=$w): $(cat "$TMPD/create.$w")"
    grep -q stalled "$TMPD/create.$w.err" && fail "create (workers=$w): the watchdog called main stalled: $(cat "$TMPD/create.$w.err")"
done
ok "main creating 100,000 threads is not a stall"
