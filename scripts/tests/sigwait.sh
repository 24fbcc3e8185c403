# sigwait/sigtimedwait park instead of holding a worker; `while (!flag)
# pause();` and sigsuspend see the handlers' flags while other coroutines
# keep running.
source "$(dirname "$0")/../lib.sh"
for w in 1 2; do
    out=$(CORUN_WORKERS=$w corun "$BIN/co_sigwait") || fail "workers=$w: $out"
    echo "workers=$w: $out"
done
ok "sigwait parks"
