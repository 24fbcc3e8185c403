# Preemption of coroutines that compute (src/sched/preempt.rs):
# - c-tests/preempt_compute.c: 4 compute threads (integer, SSE/AVX
#   vectors, x87) and a thread ticking every 2 ms, on one worker: every
#   result bit equals the native run's, and the ticker ticks during the
#   computation at >= 50% of its native rate; with CORUN_PREEMPT_MS=0 (the
#   cooperative behaviour) the results are the same and it never ticks;
# - c-tests/preempt_signal.c: main parked in sigwait (SIGTERM) or pause
#   (SIGINT handler) while 4 compute threads fill the workers gets the
#   signal kill sent within 150 ms, on 1 and 2 workers;
# - c-tests/preempt_libc.c: compute threads living in malloc/free/snprintf
#   and printf to a shared stdout, and computing with stdout locked by
#   flockfile, end (no deadlock on a glibc lock held by a preempted
#   coroutine: without the flockfile count they hung on 1 and 2 workers)
#   with the native lines, and were preempted;
# - c-tests/preempt_cxx.cpp: std::threads that compute and throw give the
#   native checksums and are preempted (they start in libstdc++, whose
#   frame at the base of their stack kept every one of them unpreempted).
source "$(dirname "$0")/../lib.sh"

# The ticker's rate (ticks per second) in a run's stderr.
rate() { awk '/^ticks/ { if ($4 > 0) printf "%d", $2 * 1000 / $4; else print 0 }' "$1"; }

"$BIN/preempt_compute" >"$TMPD/pc.native" 2>"$TMPD/pc.native.err" || fail "preempt_compute failed natively"
native_rate=$(rate "$TMPD/pc.native.err")
[ "$native_rate" -gt 0 ] || fail "the ticker never ticked natively: $(cat "$TMPD/pc.native.err")"
for try in 1 2 3; do
    CORUN_WORKERS=1 CORUN_STATS=1 timeout 60 env LD_PRELOAD="$LIB" "$BIN/preempt_compute" \
        >"$TMPD/pc.w1" 2>"$TMPD/pc.w1.err" || fail "preempt_compute under corun: exit $?"
    diff -u "$TMPD/pc.native" "$TMPD/pc.w1" || fail "preempt_compute: results differ from the native run's"
    r=$(rate "$TMPD/pc.w1.err")
    # A loaded machine may starve the monitor thread for a while: retried.
    [ $((r * 2)) -ge "$native_rate" ] && break
    [ "$try" -lt 3 ] || fail "ticker at $r/s under corun, $native_rate/s natively (< 50%): $(grep -E 'ticks|preempt' "$TMPD/pc.w1.err")"
done
ok "preempt_compute, 1 worker: results bit for bit native; ticker $r/s (native $native_rate/s); $(grep preemptions "$TMPD/pc.w1.err" | sed 's/^ *//')"

timeout 60 env CORUN_WORKERS=1 CORUN_PREEMPT_MS=0 LD_PRELOAD="$LIB" "$BIN/preempt_compute" \
    >"$TMPD/pc.off" 2>"$TMPD/pc.off.err" || fail "preempt_compute, preemption off: exit $?"
diff -u "$TMPD/pc.native" "$TMPD/pc.off" || fail "preempt_compute, preemption off: results differ"
grep -q '^ticks 0 ' "$TMPD/pc.off.err" || fail "CORUN_PREEMPT_MS=0 should be cooperative (no tick while computing): $(cat "$TMPD/pc.off.err")"
timeout 60 env LD_PRELOAD="$LIB" "$BIN/preempt_compute" >"$TMPD/pc.wdef" 2>/dev/null || fail "preempt_compute, default workers: exit $?"
diff -u "$TMPD/pc.native" "$TMPD/pc.wdef" || fail "preempt_compute, default workers: results differ"
ok "preempt_compute: CORUN_PREEMPT_MS=0 ticks 0 times (cooperative), same results; default workers same results"

# signal_latency MODE SIG WORKERS: ms from kill to the program's report.
signal_latency() {
    local mode=$1 sig=$2 w=$3 out="$TMPD/ps.$1.$3" pid t0 t1 i
    CORUN_WORKERS=$w LD_PRELOAD="$LIB" "$BIN/preempt_signal" "$mode" >"$out" 2>&1 &
    pid=$!
    for i in $(seq 1 250); do grep -q ready "$out" && break; sleep 0.02; done
    grep -q ready "$out" || fail "preempt_signal $mode: never ready"
    sleep 0.2
    t0=$(date +%s%N)
    kill "-$sig" "$pid"
    wait "$pid" || fail "preempt_signal $mode on $w workers: exit $?: $(cat "$out")"
    grep -q '^4 threads joined$' "$out" || fail "preempt_signal $mode: $(cat "$out")"
    t1=$(sed -n 's/^got SIG[A-Z]* at //p' "$out")
    echo $(((t1 - t0) / 1000000))
}
for w in 1 2; do
    for m in "sigwait TERM" "pause INT"; do
        set -- $m
        for try in 1 2 3; do
            ms=$(signal_latency "$1" "$2" "$w")
            [ "$ms" -lt 150 ] && break
            [ "$try" -lt 3 ] || fail "preempt_signal $1 on $w workers: SIG$2 taken after $ms ms"
        done
        ok "preempt_signal: SIG$2 to a thread in $1 while 4 threads compute on $w worker(s): taken after $ms ms"
    done
done

"$BIN/preempt_libc" | sort >"$TMPD/pl.native" || fail "preempt_libc failed natively"
for w in 1 2; do
    timeout 30 env CORUN_WORKERS=$w CORUN_STATS=1 LD_PRELOAD="$LIB" "$BIN/preempt_libc" \
        2>"$TMPD/pl.$w.err" | sort >"$TMPD/pl.$w"
    [ "${PIPESTATUS[0]}" = 0 ] || fail "preempt_libc on $w workers: exit ${PIPESTATUS[0]} (124: a deadlock)"
    diff -q "$TMPD/pl.native" "$TMPD/pl.$w" >/dev/null || fail "preempt_libc on $w workers: lines differ from the native run's"
    n=$(sed -n 's/^ *preemptions: \([0-9]*\).*/\1/p' "$TMPD/pl.$w.err")
    [ "${n:-0}" -gt 0 ] || fail "preempt_libc on $w workers: never preempted: $(grep preempt "$TMPD/pl.$w.err")"
    ok "preempt_libc on $w worker(s): $(wc -l <"$TMPD/pl.$w") lines as natively, $n preemptions"
done

"$BIN/preempt_cxx" >"$TMPD/cxx.native" || fail "preempt_cxx failed natively"
for w in 1 2; do
    timeout 30 env CORUN_WORKERS=$w CORUN_STATS=1 LD_PRELOAD="$LIB" "$BIN/preempt_cxx" \
        >"$TMPD/cxx.$w" 2>"$TMPD/cxx.$w.err" || fail "preempt_cxx on $w workers: exit $?"
    diff -u "$TMPD/cxx.native" "$TMPD/cxx.$w" || fail "preempt_cxx on $w workers: checksums differ"
    n=$(sed -n 's/^ *preemptions: \([0-9]*\).*/\1/p' "$TMPD/cxx.$w.err")
    [ "${n:-0}" -gt 0 ] || fail "preempt_cxx on $w workers: never preempted: $(grep preempt "$TMPD/cxx.$w.err")"
    ok "preempt_cxx on $w worker(s): checksums as natively, $n preemptions"
done
