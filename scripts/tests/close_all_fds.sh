# closefrom / close_range / a close() loop over every fd leave corun's own
# fds open, and coroutines keep parking and waking afterwards.
source "$(dirname "$0")/../lib.sh"
for w in 1 2; do
    out=$(CORUN_WORKERS=$w corun "$BIN/co_closeall") || fail "workers=$w: $out"
    echo "$out"
done
ok "closing every fd spares the runtime"
