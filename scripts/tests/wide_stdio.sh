# Wide-character stdio on pipes from threads (c-tests/wide_stdio.c):
# fgetws, fgetwc, fwscanf and getwc waiting for a writer thread, and
# fputws/fputwc/fwprintf into a pipe that fills before its reader reads.
# glibc reads and writes these through its internal read/write, which no
# hook sees: under corun with one worker the waiting call held the worker
# and the other thread never ran (a deadlock). The same output natively and
# under corun with one worker and the default (src/hooks/stdio_wide.rs).
source "$(dirname "$0")/../lib.sh"
same_output_native_and_corun "$BIN/wide_stdio"
grep -qx "readers: fgetws 36 chars, fgetwc 36 chars, fwscanf 30 chars, getwc 3 o-umlauts" "$TMPD/native" \
    || fail "natively: $(cat "$TMPD/native")"
ok "wide_stdio: $(tr '\n' ' ' <"$TMPD/native")"
