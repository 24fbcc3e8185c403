# Threads that fork, children that make threads and end by their only
# thread's return (c-tests/fork_lists.c; src/ctx/fork_lists.rs): every
# child and grandchild exits 0 with its threads' stack sums right, with 1
# and 2 workers, as natively. Under corun a child forked by a coroutine
# gave the stack its kernel thread ran on to its next thread (glibc's fork
# had put it in its stack cache as free): SIGSEGV in the child, with 2
# workers 15 of 20 children lost. Then CPython's own test of that case
# (test_threading's test_3_join_in_forked_from_thread), natively and under
# corun, where the child died silently and the test failed.
source "$(dirname "$0")/../lib.sh"
want="20 of 20 children exited 0, 20 with good sums and a grandchild that exited 0"
out=$(timeout 60 "$BIN/fork_lists" 2>&1) || fail "natively: $out"
[ "$out" = "$want" ] || fail "natively: $out"
for w in 1 2; do
    out=$(CORUN_WORKERS=$w LD_PRELOAD="$LIB" timeout 60 "$BIN/fork_lists" 2>&1) || fail "$w workers: exit $?: $out"
    [ "$out" = "$want" ] || fail "$w workers: $out"
done
ok "threads fork children that make threads: all exit 0 with 1 and 2 workers"

py=$(command -v python3 || true)
if [ -n "$py" ] && "$py" -c 'import test.test_threading' 2>/dev/null; then
    t=test.test_threading.ThreadJoinOnShutdown
    for mode in native corun; do
        pre=""; [ $mode = corun ] && pre="$LIB"
        set +e
        LD_PRELOAD="$pre" CORUN_WORKERS=2 timeout 120 "$py" -m unittest -v \
            "$t.test_1_join_on_shutdown" "$t.test_2_join_in_forked_process" \
            "$t.test_3_join_in_forked_from_thread" >"$TMPD/py.$mode" 2>&1
        echo "rc=$?" >>"$TMPD/py.$mode"
        set -e
    done
    grep -q '^OK' "$TMPD/py.native" || fail "CPython's test natively: $(tail -5 "$TMPD/py.native")"
    grep -q '^rc=0' "$TMPD/py.corun" && grep -q '^OK' "$TMPD/py.corun" ||
        fail "CPython's ThreadJoinOnShutdown under corun: $(grep -E 'FAIL|Error|rc=' "$TMPD/py.corun" | head -8)"
    ok "CPython's ThreadJoinOnShutdown tests (a thread forks, the child joins the stopped main) pass under corun"
else
    echo "no CPython test package: its test left out"
fi
