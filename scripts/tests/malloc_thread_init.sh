# A program's own malloc with per-thread state set up at a thread's first
# call, as jemalloc's (redis-server): c-tests/malloc_thread_init calls
# pthread_setspecific and takes a contended mutex inside that setup, in 256
# threads. Under corun those hooks must not allocate through the program's
# malloc (the re-entry crashed redis at startup: jemalloc read a NULL
# tcache bin), and the value set there must stay the thread's (its
# destructor runs at the thread's exit). Same lines natively, with
# CORUN_THREADS=native and under corun (1 and default workers).
source "$(dirname "$0")/../lib.sh"
same_everywhere malloc_thread_init "$BIN/malloc_thread_init"
out="$TMPD/malloc_thread_init.native"
grep -qx "malloc_thread_init: all checks passed" "$out" || fail "malloc_thread_init: no success line"
ok "malloc_thread_init: identical natively and under corun: $(sed -n 2p "$out")"
