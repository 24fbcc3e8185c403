# corun_mutex_t, corun_cond_t, corun_sem_t and corun_wg_t
# (c-tests/co_sync.c) between coroutines on all workers, on one worker,
# and with pthreads as kernel threads (CORUN_THREADS=native).
source "$(dirname "$0")/../lib.sh"
for mode in "" "CORUN_WORKERS=1" "CORUN_THREADS=native"; do
    out=$(timeout -k 5 60 env $mode LD_PRELOAD="$LIB" "$BIN/co_sync" 2>&1) || fail "co_sync ($mode): $out"
    [ "$out" = "co_sync: ok" ] || fail "co_sync ($mode) printed: $out"
done
ok "mutex, condition variable, semaphore, wait group: coroutines and native threads"
