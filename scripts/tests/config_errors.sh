# A bad CORUN_* value stops the program before main with a message naming
# the variable and what it accepts; good values start it. A switch is 1 or
# 0 (yes/on are refused, with the message that says so); an empty value is
# unset; a misspelled CORUN_* name is reported once with the closest known
# name, and the program runs.
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
check_bad CORUN_STATS maybe "is not a switch; use 1 (on) or 0 (off)"
check_bad CORUN_STATS yes "is not a switch; use 1 (on) or 0 (off)"
check_bad CORUN_STATS on "is not a switch; use 1 (on) or 0 (off)"
check_bad CORUN_TLS shared "thread .* or worker"
check_bad CORUN_DUMP_SIGNAL KILL "a number or a name"
check_bad CORUN_DUMP_SIGNAL USR9 "such as USR2"
check_bad CORUN_STALL_MS soon "milliseconds"
check_bad CORUN_PREEMPT_MS fast "milliseconds from 0 (off) to 1000"
check_bad CORUN_PREEMPT_MS 5000 "milliseconds from 0 (off) to 1000"
check_bad CORUN_BLOCKING_THREADS -3 "whole number"
out=$(CORUN_STACK_SIZE=1m CORUN_WORKERS=3 LD_PRELOAD="$LIB" /bin/echo main-ran)
[ "$out" = main-ran ] || fail "good values: $out"
# Empty values are unset; blanks around a value are ignored.
out=$(CORUN_STATS= CORUN_WORKERS= CORUN_STACK_SIZE=" 512k " LD_PRELOAD="$LIB" /bin/echo main-ran 2>&1)
[ "$out" = main-ran ] || fail "empty values: $out"
# A misspelled name: one line naming the closest known one; main runs.
CORUN_WORKRES=2 LD_PRELOAD="$LIB" /bin/echo main-ran >"$TMPD/o" 2>"$TMPD/e" || fail "CORUN_WORKRES=2: exit $?"
[ "$(cat "$TMPD/o")" = main-ran ] || fail "CORUN_WORKRES=2: main did not run"
[ "$(wc -l <"$TMPD/e")" = 1 ] || fail "CORUN_WORKRES=2: expected one line on stderr: $(cat "$TMPD/e")"
grep -qx "corun: CORUN_WORKRES is not a corun variable (ignored); did you mean CORUN_WORKERS? see corun(1)" "$TMPD/e" \
    || fail "CORUN_WORKRES=2: $(cat "$TMPD/e")"
CORUN_STAL_MS=5 LD_PRELOAD="$LIB" /bin/true 2>"$TMPD/e" || fail "CORUN_STAL_MS: exit $?"
grep -q "did you mean CORUN_STALL_MS?" "$TMPD/e" || fail "CORUN_STAL_MS: $(cat "$TMPD/e")"
ok "misspelled names: $(cat "$TMPD/e")"
# Said once per process tree: a shell under corun running three commands.
CORUN_WORKRES=2 LD_PRELOAD="$LIB" /bin/sh -c '/bin/true; /bin/echo a; /bin/echo b' >"$TMPD/o" 2>"$TMPD/e" \
    || fail "CORUN_WORKRES=2 sh -c: exit $?"
[ "$(cat "$TMPD/o")" = "$(printf 'a\nb')" ] || fail "sh -c: output $(cat "$TMPD/o")"
[ "$(grep -c CORUN_WORKRES "$TMPD/e")" = 1 ] || fail "sh -c: the warning is not said once: $(cat "$TMPD/e")"
ok "misspelled name said once for a shell and its three children"
out=$("$ROOT/scripts/corun" --workers 2 --stack-size 512k -- /bin/echo via-launcher)
[ "$out" = via-launcher ] || fail "launcher: $out"
set +e
"$ROOT/scripts/corun" --workers zero -- /bin/true 2>"$TMPD/e"
rc=$?
set -e
[ $rc -ne 0 ] && grep -q CORUN_WORKERS "$TMPD/e" || fail "launcher did not reject a bad --workers"
ok "all bad values rejected"
