# sigwait/sigtimedwait park instead of holding a worker; `while (!flag)
# pause();` and sigsuspend see the handlers' flags while other coroutines
# keep running.
source "$(dirname "$0")/../lib.sh"
for w in 1 2; do
    # Bounded: a sigwait that holds its worker stops main or the ticker
    # main waits for (c-tests/co_sigwait.c, until_ticked) for good.
    out=$(CORUN_WORKERS=$w timeout -k 5 60 env LD_PRELOAD="$LIB" "$BIN/co_sigwait") || fail "workers=$w (exit $?, 124: hung): $out"
    echo "workers=$w: $out"
done
ok "sigwait parks"
