# Threads looping on read, write, readv, writev, pread and pwrite calls that
# never wait (a regular file, /dev/null) leave the CPU to a thread that
# sleeps 20 ms ten times (c-tests/slice_rw_calls.c): each sleep ends
# within 250 ms, natively, with CORUN_THREADS=native and under corun (1
# and default workers). Before, such a loop was almost never preempted
# (its pc is in glibc or corun nearly all the time, where preemption
# refuses) and the sleeper on its worker waited up to 3.4 s on 1 worker,
# 0.7 s on 2; seen as a /proc-reading netdata thread's neighbours.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=30 same_everywhere slice_rw_calls "$BIN/slice_rw_calls"
grep -q "worst delay under 250 ms: yes" "$TMPD/slice_rw_calls.native" \
    || fail "slice_rw_calls: the sleeper was late natively (a loaded machine?)"
ok "a 20 ms sleeper beside 6 threads looping on file calls wakes in time, natively and under corun"
