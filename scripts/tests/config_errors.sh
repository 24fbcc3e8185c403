# A bad CORUN_* value stops the program before main with a message naming
# the variable and what it accepts; good values start it.
source "$(dirname "$0")/../lib.sh"
check_bad() {
    local var=$1 val=$2 accepted=$3
    set +e
    out=$(env "$var=$val" LD_PRELOAD="$LIB" /bin/echo main-ran 2>&1)
    rc=$?
    set -e
    [ $rc -ne 0 ] || fail "$var=$val: exit 0"
    echo "$out" | grep -q "main-ran" && fail "$var=$val: main ran"
    echo "$out" | grep -q "corun: $var=" || fail "$var=$val: message does not name it: $out"
    echo "$out" | grep -q -- "$accepted" || fail "$var=$val: message does not say what is accepted: $out"
    ok "$var=$val -> $out"
}
check_bad CORUN_STACK_SIZE lots "256k"
check_bad CORUN_STACK_SIZE 1k "from 16k"
check_bad CORUN_WORKERS 0 "from 1 to"
check_bad CORUN_WORKERS two "whole number"
check_bad CORUN_THREADS green "coroutine or native"
check_bad CORUN_STATS maybe "1 or 0"
check_bad CORUN_STALL_MS soon "milliseconds"
check_bad CORUN_BLOCKING_THREADS -3 "whole number"
out=$(CORUN_STACK_SIZE=1m CORUN_WORKERS=3 LD_PRELOAD="$LIB" /bin/echo main-ran)
[ "$out" = main-ran ] || fail "good values: $out"
out=$("$ROOT/scripts/corun" --workers 2 --stack-size 512k -- /bin/echo via-launcher)
[ "$out" = via-launcher ] || fail "launcher: $out"
set +e
"$ROOT/scripts/corun" --workers zero -- /bin/true 2>"$TMPD/e"
rc=$?
set -e
[ $rc -ne 0 ] && grep -q CORUN_WORKERS "$TMPD/e" || fail "launcher did not reject a bad --workers"
ok "all bad values rejected"
