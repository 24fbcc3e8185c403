# stdio output into a full pipe waits parked (src/hooks/stdio_write.rs):
# fputs, fwrite, fprintf, putc, unbuffered and line-buffered streams,
# fclose, vfprintf, dprintf, printf/puts/putchar on stdout; the reader
# checks every byte; a handler without SA_RESTART ends fflush with EINTR,
# the error flag and the pending bytes dropped, as natively. The same
# output natively, with interposition off, with one worker and with the
# default; a ticker thread runs during every wait (glibc's internal write
# held the worker before).
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=30 same_everywhere stdio_write_pipe "$BIN/stdio_write_pipe"
grep -q "NO$" "$TMPD/stdio_write_pipe.native" && fail "natively (machine too loaded?): $(cat "$TMPD/stdio_write_pipe.native")"
ok "stdio output into a full pipe parks"
