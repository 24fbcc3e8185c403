# read/write/readv/writev/pread/pwrite/__read_chk: the transcript of
# c-tests/hooks_rw.c under corun (one worker, every wait parked) is the
# native one, call by call, result and errno.
source "$(dirname "$0")/../lib.sh"
same_transcript hooks_rw
nm "$BIN/hooks_rw" | grep -q "U __read_chk" || fail "hooks_rw does not call __read_chk (fortify off?)"
ok "hooks_rw: $(wc -l <"$TMPD/hooks_rw.native") calls, same transcript natively and under corun"
