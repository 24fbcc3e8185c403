# A thread's CPU affinity is its own (src/hooks/pthread/affinity.rs): the
# mask a thread sets (pthread_setaffinity_np, sched_setaffinity on 0,
# pthread_attr_setaffinity_np, another thread's pthread_setaffinity_np) is
# what it reads back, with the kernel's EINVALs; threads and forked
# children inherit it; setting it changes no other thread (main's library
# pinned the worker, so main, sharing it, changed too). Same output
# natively and under corun, 1 worker and the default, and on one CPU.
source "$(dirname "$0")/../lib.sh"
same_output_native_and_corun "$BIN/thread_affinity"
grep -q "main's mask unchanged" "$TMPD/native" || fail "natively: $(cat "$TMPD/native")"
cpu=$(taskset -pc $$ | sed 's/.*: *//; s/[,-].*//')
taskset -c "$cpu" "$BIN/thread_affinity" >"$TMPD/one.native"
taskset -c "$cpu" env LD_PRELOAD="$LIB" "$BIN/thread_affinity" >"$TMPD/one.corun"
diff -u "$TMPD/one.native" "$TMPD/one.corun" || fail "on CPU $cpu alone: the output differs"
ok "thread affinity kept per thread, same as natively (also on CPU $cpu alone)"
