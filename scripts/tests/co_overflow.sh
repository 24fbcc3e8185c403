# A coroutine that recurses past its stack gets corun's overflow message
# (naming the coroutine and its stack size) and a non-zero exit; a bigger
# CORUN_STACK_SIZE changes the size reported.
source "$(dirname "$0")/../lib.sh"
set +e
corun "$BIN/co_overflow" >"$TMPD/out" 2>"$TMPD/err"
rc=$?
set -e
cat "$TMPD/err"
[ $rc -ne 0 ] || fail "exit status 0 after a stack overflow"
grep -q "corun: coroutine 2 overflowed its 262144-byte stack; raise CORUN_STACK_SIZE" "$TMPD/err" || fail "no overflow message"
grep -q survived "$TMPD/out" && fail "the program went on after overflowing"
set +e
CORUN_STACK_SIZE=1m corun "$BIN/co_overflow" >/dev/null 2>"$TMPD/err2"
rc=$?
set -e
[ $rc -ne 0 ] || fail "exit 0 with 1m stack"
grep -q "overflowed its 1048576-byte stack" "$TMPD/err2" || fail "size not reported: $(cat "$TMPD/err2")"
ok "overflow reported, exit $rc"
