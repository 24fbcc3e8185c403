# A pending cancellation request acts at read, write, readv, writev,
# pread, pwrite, open, openat and close even when the call would not wait
# (a regular file, /dev/null), as glibc's wrappers do before the system
# call (c-tests/cancel_nowait_calls.c). netdata 1.37, stopped with SIGTERM
# under corun, waited 5 s now and then ("Main thread PLUGIN[proc] takes
# too long to exit"): its proc plugin, cancelled while it read /proc files,
# went on to its own exit and met the request in its cleanup handler's
# pthread_join, which cut the handler short. Outputs are diffed natively,
# with CORUN_THREADS=native and under corun (1 and default workers).
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=30 same_everywhere cancel_nowait_calls "$BIN/cancel_nowait_calls"
grep -qx "cancel_nowait_calls: all checks passed" "$TMPD/cancel_nowait_calls.native" \
    || fail "cancel_nowait_calls: no success line natively"
ok "a due cancellation acts at 9 kinds of call that do not wait: identical natively and under corun"
