# waitpid, wait, wait4, wait3 and waitid each return the child's status
# while another thread keeps ticking (c-tests/wait_family.c), natively and
# under corun with one worker and the default: a wait that held the worker
# would stop the ticker. wait3 did (glibc's wait3 calls its own wait4,
# which no hook saw).
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=30 same_everywhere waits "$BIN/wait_family"
[ "$(grep -c "ticker ran during the wait: yes" "$TMPD/waits.native")" = 5 ] \
    || fail "natively: $(cat "$TMPD/waits.native")"
ok "waitpid, wait, wait4, wait3, waitid: status and a running ticker, as natively"
