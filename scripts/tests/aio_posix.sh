# POSIX AIO waits park (src/hooks/aio.rs): aio_suspend (until done,
# timed out with EAGAIN, cut by a handler with EINTR) and
# lio_listio(LIO_WAIT) (pipes answered later, a file written and read
# back byte for byte, EIO for a failing request): the same output
# natively, with interposition off, with one worker and with the
# default; a pthread ticker runs during every wait (glibc's futex wait
# held the worker before).
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=20 same_everywhere aio_posix "$BIN/aio_posix"
grep -q "NO$" "$TMPD/aio_posix.native" && fail "natively (machine too loaded?): $(cat "$TMPD/aio_posix.native")"
ok "POSIX AIO waits park, with glibc's results"
