# Blocking reads on a TCP connection after a read that returned less than
# asked (corun parks them without a first attempt: src/hooks/drained.rs):
# data in parts, data already there, urgent data, poll then read, a full
# buffer, SO_RCVTIMEO, a dup, end of file. The transcript of
# c-tests/tcp_drained.c under corun (one worker, every wait parked) is the
# native one, byte for byte.
source "$(dirname "$0")/../lib.sh"
same_transcript tcp_drained
grep -q '^read after the urgent mark = 3' "$TMPD/tcp_drained.native" ||
    fail "natively the read after the urgent mark did not get the 3 bytes after it"
ok "tcp_drained: $(wc -l <"$TMPD/tcp_drained.native") lines, same transcript natively and under corun"
