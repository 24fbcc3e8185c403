# Every channel function and corun_select (c-tests/co_chan.c) between
# coroutines on all workers, on one worker, and with pthreads as kernel
# threads (CORUN_THREADS=native) talking to coroutines.
source "$(dirname "$0")/../lib.sh"
for mode in "" "CORUN_WORKERS=1" "CORUN_THREADS=native"; do
    out=$(timeout -k 5 60 env $mode LD_PRELOAD="$LIB" "$BIN/co_chan" 2>&1) || fail "co_chan ($mode): $out"
    [ "$out" = "co_chan: ok" ] || fail "co_chan ($mode) printed: $out"
done
ok "channels and select: coroutines on all workers, one worker, and native threads"
