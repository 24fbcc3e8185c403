# Preemption of a thread computing on a stack it switched to itself, as
# user-level fiber libraries do (src/sched/foreign_stack.rs):
# c-tests/preempt_foreign_stack.c runs spinners on their own mmap'd stacks
# until main, which sleeps meanwhile, says stop. On 1 worker (2 spinners)
# and 2 workers (4 spinners: every worker busy) main runs again only if a
# spinner is preempted there. The handler refused every request for an sp
# off the coroutine's stack ("stack room"), and this hung for good, as
# Boost.Fiber's work_stealing scheduler did (its dispatcher spins on its
# own fiber stack). 3 runs each, bounded by a KILL after 30 s; the output
# must be the native one, and CORUN_STATS must show preemptions made.
source "$(dirname "$0")/../lib.sh"

"$BIN/preempt_foreign_stack" 2 >"$TMPD/native.2" || fail "natively: exit $?"
"$BIN/preempt_foreign_stack" 4 >"$TMPD/native.4" || fail "natively (4): exit $?"
for w in 1 2; do
    n=$((w * 2))
    for run in 1 2 3; do
        CORUN_WORKERS=$w CORUN_STATS=1 timeout -k 2 30 env LD_PRELOAD="$LIB" \
            "$BIN/preempt_foreign_stack" $n >"$TMPD/out" 2>"$TMPD/err" && rc=0 || rc=$?
        [ $rc -eq 0 ] || fail "$w worker(s), $n spinners, run $run: exit $rc (a hang is 124/137): $(grep -E 'preempt' "$TMPD/err")"
        diff -u "$TMPD/native.$n" "$TMPD/out" || fail "$w worker(s), run $run: output differs"
        made=$(awk '/^ *preemptions:/ { print $2 }' "$TMPD/err")
        [ "${made:-0}" -gt 0 ] || fail "$w worker(s), run $run: stopped without a preemption? $(grep preempt "$TMPD/err")"
    done
    ok "$w worker(s), $n spinners on their own stacks: 3 runs stopped; last: $(grep -E '^ *preemptions:' "$TMPD/err" | sed 's/^ *//')"
done
