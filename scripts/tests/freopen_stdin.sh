# freopen of stdin (glibc closes and reopens fd 0 itself): a later read of
# fd 0 that parks must wake when the new file has data, as natively; with
# one worker and the default.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=10 same_everywhere freopen "$BIN/freopen_stdin"
grep -c "(ok)" "$TMPD/freopen.native" | grep -qx 2 || fail "expected two good reads: $(cat "$TMPD/freopen.native")"
ok "freopen of stdin: $(tr '\n' ';' <"$TMPD/freopen.native")"
