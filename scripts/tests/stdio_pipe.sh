# stdio input (fgets, getline, fread, fgetc, getc_unlocked, getchar, the
# scanf family) on an
# empty pipe waits parked, not holding its worker (src/hooks/stdio.rs, stdio_scanf.rs):
# a ticker thread on the same worker keeps running during each wait; a
# handler without SA_RESTART ends fgets with EINTR and the error flag.
# Same output natively and under corun (1 worker, default).
source "$(dirname "$0")/../lib.sh"
same_output_native_and_corun "$BIN/stdio_pipe"
grep -q ": NO$" "$TMPD/native" && fail "natively: $(cat "$TMPD/native")"
ok "stdio input on a pipe parks"
