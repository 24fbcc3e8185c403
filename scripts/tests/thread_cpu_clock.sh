# Each thread's CPU clock counts that thread only (src/sched/cpuclock.rs,
# src/hooks/clock.rs): a thread computing 300 ms and one sleeping 400 ms
# read their own CLOCK_THREAD_CPUTIME_ID; pthread_getcpuclockid gives a
# clock other threads read; a joined thread's clock is gone. Same lines
# natively and under corun (1 worker, where both share a worker, and the
# default); then CPython's own test of pthread_getcpuclockid.
source "$(dirname "$0")/../lib.sh"
same_output_native_and_corun "$BIN/thread_cpu_clock"
grep -q ": NO$\|still there" "$TMPD/native" && fail "natively: $(cat "$TMPD/native")"
out=$(LD_PRELOAD="$LIB" timeout 120 python3 -m test test_time -m test_pthread_getcpuclockid -m test_thread_time 2>&1) \
    || fail "CPython's test_time under corun: $(echo "$out" | tail -20)"
ok "thread CPU clocks as natively; CPython's test_pthread_getcpuclockid passes under corun"
