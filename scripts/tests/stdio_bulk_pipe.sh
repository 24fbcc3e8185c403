# An fwrite of much more than a pipe holds waits parked, under the FILE's
# lock (src/hooks/stdio_bulk.rs): 1 MiB buffered and unbuffered, two
# threads writing 512 KiB each on one FILE with a third printing a line
# (never interleaved), a reader that leaves (short count, ferror, EPIPE);
# a slow reader checks every byte. The same output natively, with
# interposition off, with one worker and with the default; a ticker
# thread runs during every write (glibc's internal write held the worker
# for the whole transfer before: "NO").
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=30 same_everywhere stdio_bulk_pipe "$BIN/stdio_bulk_pipe"
cat "$TMPD/stdio_bulk_pipe.native"
grep -q "NO$" "$TMPD/stdio_bulk_pipe.native" && fail "natively (machine too loaded?): $(cat "$TMPD/stdio_bulk_pipe.native")"
ok "a large fwrite into a slow pipe parks, bytes and results as natively"
