# A blocking call that succeeds leaves errno alone (c-tests/errno_after_park.c):
# read, recv, recvmsg, accept, write, send and connect that park under
# corun (one worker, every wait parked) report the errno the program had
# before the call, as natively, not the EAGAIN or EINPROGRESS of the
# non-blocking attempt made before the park.
source "$(dirname "$0")/../lib.sh"
same_transcript errno_after_park
grep -c "errno ENOTTY" "$TMPD/errno_after_park.native" | grep -qx 7 || fail "natively, not every call left errno alone"
ok "errno_after_park: $(wc -l <"$TMPD/errno_after_park.native") calls leave errno alone natively and under corun"
