# SBCL gives every Lisp thread a stack it allocated (pthread_attr_setstack)
# and its collector looks for each stopped thread's stack pointer in it:
# under corun the threads ran on corun's stacks and the collector died with
# "garbage_collect: no SP known for thread" (or hung). Now they run on
# SBCL's memory (src/ctx/stack.rs GuardedStack::program): the same output
# and exit status 4 as natively, on 1 and 2 workers. Skipped without sbcl.
source "$(dirname "$0")/../lib.sh"
command -v sbcl >/dev/null || { echo "SKIP: no sbcl"; exit 0; }
prog="$(dirname "$0")/data/sbcl_threads.lisp"
set +e
timeout -k 5 20 sbcl --script "$prog" >"$TMPD/native" 2>&1
rc=$?
set -e
[ "$rc" = 4 ] || fail "natively: exit $rc: $(tail -3 "$TMPD/native")"
for w in 1 2; do
    set +e
    CORUN_WORKERS=$w timeout -k 5 20 env LD_PRELOAD="$LIB" sbcl --script "$prog" >"$TMPD/w$w" 2>&1
    rc=$?
    set -e
    [ "$rc" = 4 ] || fail "$w worker(s): exit $rc (4 natively): $(tail -3 "$TMPD/w$w")"
    cmp -s "$TMPD/native" "$TMPD/w$w" || fail "$w worker(s): output differs: $(diff "$TMPD/native" "$TMPD/w$w" | head -5)"
    ok "$w worker(s): same $(wc -l <"$TMPD/w$w") lines as natively, exit 4"
done
