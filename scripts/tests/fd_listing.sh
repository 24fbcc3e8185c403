# A process's listing of its own fds (/proc/self/fd, /dev/fd, /proc/PID/fd;
# readdir, readdir64, fdopendir; from main and from a thread) shows the
# same fds natively and under corun: corun's epoll and eventfds are left
# out (src/hooks/own_fds.rs). Closing every listed fd keeps the process
# working. Then CPython's own check of it (test_subprocess's
# test_pass_fds_redirected) under corun.
source "$(dirname "$0")/../lib.sh"
same_output_native_and_corun "$BIN/fd_listing"
out=$(LD_PRELOAD="$LIB" timeout 120 python3 -m test test_subprocess -m test_pass_fds_redirected -m test_close_fds 2>&1) \
    || fail "CPython's test_subprocess under corun: $(echo "$out" | tail -20)"
ok "fd listings as natively; CPython's pass_fds/close_fds tests pass under corun"
