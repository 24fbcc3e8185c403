# A coroutine that recurses past its stack gets corun's overflow message
# (naming the coroutine and its stack size) and a non-zero exit; a bigger
# CORUN_STACK_SIZE changes the size reported. The size suggested is always
# bigger than the one that overflowed (twice it).
source "$(dirname "$0")/../lib.sh"
set +e
corun "$BIN/co_overflow" >"$TMPD/out" 2>"$TMPD/err"
rc=$?
set -e
cat "$TMPD/err"
[ $rc -ne 0 ] || fail "exit status 0 after a stack overflow"
grep -q "corun: coroutine 2 overflowed its 262144-byte stack; raise CORUN_STACK_SIZE (e.g. CORUN_STACK_SIZE=512k) or the thread's stack size attribute" "$TMPD/err" || fail "no overflow message suggesting 512k"
grep -q survived "$TMPD/out" && fail "the program went on after overflowing"
set +e
CORUN_STACK_SIZE=1m corun "$BIN/co_overflow" >/dev/null 2>"$TMPD/err2"
rc=$?
set -e
[ $rc -ne 0 ] || fail "exit 0 with 1m stack"
grep -q "overflowed its 1048576-byte stack; raise CORUN_STACK_SIZE (e.g. CORUN_STACK_SIZE=2m)" "$TMPD/err2" || fail "size not reported, or 2m not suggested: $(cat "$TMPD/err2")"
# The size of a native thread's stack: the suggestion must not be smaller.
set +e
CORUN_STACK_SIZE=8m corun "$BIN/co_overflow" >/dev/null 2>"$TMPD/err3"
rc=$?
set -e
[ $rc -ne 0 ] || fail "exit 0 with 8m stack"
grep -q "overflowed its 8388608-byte stack; raise CORUN_STACK_SIZE (e.g. CORUN_STACK_SIZE=16m)" "$TMPD/err3" || fail "8m: 16m not suggested: $(cat "$TMPD/err3")"
ok "overflow reported, exit $rc"
