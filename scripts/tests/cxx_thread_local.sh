# C++ thread_local objects, __thread and errno belong to each thread under
# corun as natively: c-tests/cxx_thread_local (1,000 std::threads that park
# in usleep and read() between uses of their values; every thread_local
# destructor once, on its own thread, in reverse order of construction;
# distinct addresses) prints the same lines natively, with
# CORUN_THREADS=native and under corun (1 and default workers), all checks
# passed.
source "$(dirname "$0")/../lib.sh"
same_everywhere cxx_thread_local "$BIN/cxx_thread_local"
out="$TMPD/cxx_thread_local.native"
grep -qx "cxx_thread_local: all checks passed" "$out" || fail "cxx_thread_local: no success line"
grep -qx "thread_local A: 1000 constructed, 1000 destroyed, 1000 threads' exactly once" "$out" || fail "cxx_thread_local: A's destructors"
grep -qx "distinct addresses: errno 1000, __thread int 1000, thread_local A 1000, B 1000" "$out" || fail "cxx_thread_local: addresses"
ok "cxx_thread_local: identical natively and under corun: $(sed -n 2p "$out")"
