# A thread's blocking write of 8 KiB to a pty slave while main reads the
# master (c-tests/pty_big_write.c, libuv's tty_pty_partial pattern): a tty
# write larger than 256 bytes runs on the blocking pool while the thread
# parks (src/hooks/rw.rs write_other_big); made inline after POLLOUT it
# waited in the kernel for room and held the worker the reader needed (a
# hang on 1 worker). Every byte checked; two writers' 4 KiB blocks arrive
# whole as natively; /dev/null takes its 64 KiB inline. Same output
# natively and under corun, 1 worker and the default.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=20 same_output_native_and_corun "$BIN/pty_big_write"
grep -q "pty: 65536 bytes read, 0 wrong" "$TMPD/native" || fail "natively: $(cat "$TMPD/native")"
ok "big writes to a pty do not hold the worker the reader needs"
