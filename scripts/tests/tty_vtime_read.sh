# Reads of a pty slave in non-canonical mode with VMIN = 0
# (c-tests/tty_vtime_read.c): read, readv and fgetc return 0 (EOF) once
# VTIME passed with no input, at once with VTIME 0, and the input that
# arrives while they wait. corun waited for readability and then read, so
# they waited for ever (Ruby's IO#getch(min: 0, time: 0.1) hung its
# TestIO_Console#test_raw_timeout); src/hooks/tty_read.rs. Same output
# natively and under corun, 1 worker and the default.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=30 same_output_native_and_corun "$BIN/tty_vtime_read"
grep -q 'with input: "ab"' "$TMPD/native" || fail "natively: $(cat "$TMPD/native")"
grep -q WRONG "$TMPD/native" && fail "natively: $(cat "$TMPD/native")"
ok "terminal reads with VMIN 0 end after VTIME"
