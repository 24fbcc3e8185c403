# read/write/readv/writev/pread/pwrite/__read_chk/__pread_chk: the transcript of
# c-tests/hooks_rw.c under corun (one worker, every wait parked) is the
# native one, call by call, result and errno.
source "$(dirname "$0")/../lib.sh"
same_transcript hooks_rw
nm "$BIN/hooks_rw" >"$TMPD/syms"
for f in __read_chk __pread_chk readv writev pwrite preadv2 pwritev2; do
    grep -q "U $f" "$TMPD/syms" || fail "hooks_rw does not call $f (fortify off?)"
done
ok "hooks_rw: $(wc -l <"$TMPD/hooks_rw.native") calls, same transcript natively and under corun"
