# Signal handlers interrupt sleeps and waits as the kernel does (signal(7)):
# alarm(1); sleep(2) returns early with the seconds left, nanosleep and a
# relative clock_nanosleep report the time left, poll/select/epoll_wait
# fail with EINTR even with SA_RESTART, a read goes on with SA_RESTART and
# fails without, and the masks of pselect/ppoll/epoll_pwait let SIGCHLD in
# while parked (how make waits for its children). The transcript must be
# the native one, with one worker and with the default.
# Whether a call returned in time is wall-clock time, which a loaded
# machine stretches natively too (epoll_wait's EINTR took 1.25 s for a
# signal at 0.2 s, load 22): when a run printed NOT IN TIME, natively or
# under corun, the comparison is made again, up to 3 times. A call that
# is not interrupted (2 s) is late every time; any other difference fails
# at once.
source "$(dirname "$0")/../lib.sh"
for try in 1 2 3; do
    rm -f "$TMPD"/native "$TMPD"/corun.*
    # A subshell: same_output_native_and_corun exits on a difference.
    (same_output_native_and_corun "$BIN/sig_sleep") && ! grep -q "NOT IN TIME" "$TMPD/native" && break
    late=$(grep -l "NOT IN TIME" "$TMPD"/native "$TMPD"/corun.* 2>/dev/null | xargs -r -n1 basename | tr '\n' ' ')
    [ -n "$late" ] && [ "$try" -lt 3 ] || fail "sig_sleep (try $try): $( [ -n "$late" ] && echo "late in: $late")$(cat "$TMPD/native")"
    echo "sig_sleep: a call returned late in $late(try $try of 3), again"
done
grep -q "WRONG" "$TMPD/native" && fail "natively: $(cat "$TMPD/native")"
true
