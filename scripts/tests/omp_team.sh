# An OpenMP program (GCC's libgomp) with more team threads than workers
# runs under corun as natively (src/hooks/pthread/foreign.rs): libgomp's
# threads wait in inline futex system calls, so they stay kernel threads
# (as coroutines they held every worker: the program hung). A reduction,
# 2,000 regions with a barrier, tasks and a critical section, from main
# and from a pthread: the same output natively and under corun (1 worker,
# default), with no stall reported (the pthread waits 300 ms asleep in
# libgomp's futex for its team; the watchdog knows that code is libgomp's).
source "$(dirname "$0")/../lib.sh"
[ -x "$BIN/omp_team" ] || fail "omp_team was not built (gcc -fopenmp)"
same_output_native_and_corun "$BIN/omp_team"
grep -q "stalled" "$TMPD/corun.err" && fail "corun reported a stall: $(cat "$TMPD/corun.err")"
ok "an OpenMP program with 8-thread teams: same output natively and under corun"
