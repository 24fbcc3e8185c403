# accept/connect/recv*/send*/shutdown/setsockopt/getsockopt and the
# fortified recv names: the transcript of c-tests/hooks_sock.c under corun
# (one worker, every wait parked) is the native one, call by call, result
# and errno, including SO_RCVTIMEO/SO_SNDTIMEO expiry and a connect timing
# out on a full backlog.
source "$(dirname "$0")/../lib.sh"
same_transcript hooks_sock
syms=$(nm "$BIN/hooks_sock")
for f in __recv_chk __recvfrom_chk recvmmsg sendmmsg; do
    grep -q "U $f" <<<"$syms" || fail "hooks_sock does not call $f"
done
ok "hooks_sock: $(wc -l <"$TMPD/hooks_sock.native") calls, same transcript natively and under corun"
