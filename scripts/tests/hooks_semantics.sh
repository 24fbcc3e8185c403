# The interposed calls keep their native semantics. c-tests/hooks_semantics
# (a plain pthread program) runs one list of scenarios (blocking and partial
# reads, EOF, ECONNRESET, EPIPE/SIGPIPE, big blocking writes, pipes, the
# program's own O_NONBLOCK / FIONBIO / SOCK_NONBLOCK / MSG_DONTWAIT, accept,
# connect, dup, bad fds, sleeps, SO_RCVTIMEO...) twice: from a constructor
# (under corun: outside any coroutine, every hook a passthrough) and from main
# (under corun: a coroutine, waits park). Its transcript (results, errno,
# F_GETFL flags; never fd numbers or ports) must be the same natively and
# under corun, line for line.
source "$(dirname "$0")/../lib.sh"
prog="$BIN/hooks_semantics"
[ -x "$prog" ] || fail "$prog is missing (run make)"

# Both runs at once (they are independent; this halves the wall time).
set +e
timeout -k 2 30 "$prog" >"$TMPD/native.out" 2>"$TMPD/native.err" &
npid=$!
timeout -k 2 30 env LD_PRELOAD="$LIB" "$prog" >"$TMPD/corun.out" 2>"$TMPD/corun.err" &
cpid=$!
wait $npid; nrc=$?
wait $cpid; crc=$?
set -e

[ $nrc -eq 0 ] || fail "native run exited $nrc: $(cat "$TMPD/native.err")"

# The native transcript is the reference: check it is sane before using it.
section() { sed -n "/^== $1 ==\$/,/^== /{/^== /d;p}" "$2"; }
section ctor "$TMPD/native.out" >"$TMPD/native.ctor"
section main "$TMPD/native.out" >"$TMPD/native.main"
n=$(wc -l <"$TMPD/native.main")
[ "$n" -gt 100 ] || fail "native transcript too short ($n lines)"
diff -u "$TMPD/native.ctor" "$TMPD/native.main" >"$TMPD/native.diff" ||
    fail "native run: constructor and main transcripts differ (the test is unstable):
$(cat "$TMPD/native.diff")"
if grep -E '(data|intact|same|immediate|timely)=no|slept>=[0-9]+ms: no' "$TMPD/native.main"; then
    fail "native run: the lines above are wrong natively (the test is broken)"
fi

echo "--- corun stderr"; cat "$TMPD/corun.err"
[ $crc -eq 0 ] || {
    diff -u "$TMPD/native.out" "$TMPD/corun.out" || true
    fail "run under corun exited $crc (142 = SIGALRM: a call hung)"
}
grep -q '^phase ctor: corun loaded, in coroutine: no' "$TMPD/corun.err" ||
    fail "under corun the constructor phase was not outside a coroutine"
grep -q '^phase main: corun loaded, in coroutine: yes' "$TMPD/corun.err" ||
    fail "under corun main did not run in a coroutine"
grep -q 'in coroutine: yes' "$TMPD/native.err" && fail "native run claims a coroutine"

if ! diff -u "$TMPD/native.out" "$TMPD/corun.out" >"$TMPD/diff"; then
    cat "$TMPD/diff"
    names=$(grep '^+[^+]' "$TMPD/diff" | sed 's/^+//' | awk '{print $1}' | sort -u | tr '\n' ' ')
    fail "transcripts differ natively vs under corun ('-' native, '+' corun, full diff above); scenarios: $names"
fi
ok "$n calls x 2 phases (constructor: passthrough, main: coroutine) identical natively and under corun"
