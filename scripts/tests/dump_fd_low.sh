# Under CORUN_DUMP_SIGNAL the program's fd 3 is still its own
# (c-tests/dump_fd_low.c): the first open gets 3, dup2 onto 3 and close(3)
# work. corun's dump eventfd stayed at the lowest free number, which the
# dup2/close hooks refuse as corun's own (a Ruby spawn with 3=>w failed
# with EBADF); it is now moved high like the workers' fds. Same output
# natively and under corun, 1 worker and the default.
source "$(dirname "$0")/../lib.sh"
export CORUN_DUMP_SIGNAL=USR2
RUN_TIMEOUT=30 same_output_native_and_corun "$BIN/dump_fd_low"
grep -q "first open: fd 3" "$TMPD/native" || fail "natively: $(cat "$TMPD/native")"
grep -q "read through it: 1 'x'" "$TMPD/native" || fail "natively: $(cat "$TMPD/native")"
ok "the dump signal's eventfd leaves the program's low fds alone"
