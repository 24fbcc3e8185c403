# Signal handlers interrupt sleeps and waits as the kernel does (signal(7)):
# alarm(1); sleep(2) returns early with the seconds left, nanosleep and a
# relative clock_nanosleep report the time left, poll/select/epoll_wait
# fail with EINTR even with SA_RESTART, a read goes on with SA_RESTART and
# fails without, and the masks of pselect/ppoll/epoll_pwait let SIGCHLD in
# while parked (how make waits for its children). The transcript must be
# the native one, with one worker and with the default.
source "$(dirname "$0")/../lib.sh"
same_output_native_and_corun "$BIN/sig_sleep"
grep -q "NOT IN TIME\|WRONG" "$TMPD/native" && fail "natively (machine too loaded?): $(cat "$TMPD/native")"
true
