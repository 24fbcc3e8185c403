# A burst of 20,000 coroutines that each sleep 1 ms faults in fewer pages
# than half a page a coroutine (c-tests/co_burst_stacks.c), on one worker
# (the default workers' figure is shown, not checked: there the other
# worker runs part of the burst while main spawns, and the figure, about
# 0.5 a coroutine, moved little): tasks start on the stacks that ended tasks
# left on their worker (src/sched/stack_pool.rs, recent_stack), and woken
# tasks run before never-run ones (src/sched/run_queue.rs), so the stacks
# the spawns reserved stay untouched. Before, each coroutine faulted in its
# own reserved stack (1.2 faults a coroutine; the heap blocks of the
# 20,000 tasks are about 0.16).
source "$(dirname "$0")/../lib.sh"
out=$(CORUN_WORKERS=1 timeout -k 5 60 env LD_PRELOAD="$LIB" "$BIN/co_burst_stacks" 20000 2>"$TMPD/err") \
    || fail "1 worker: $out $(tail -3 "$TMPD/err")"
f=$(sed -n 's/.*sleepers: \([0-9]*\) .*/\1/p' <<<"$out")
[ -n "$f" ] || fail "no figure in: $out"
[ "$f" -lt 10000 ] || fail "1 worker: $f page faults for 20,000 sleepers (fewer than 10,000 wanted): $out"
ok "1 worker: $out"
out=$(timeout -k 5 60 env LD_PRELOAD="$LIB" "$BIN/co_burst_stacks" 20000 2>"$TMPD/err") \
    || fail "default workers: $out $(tail -3 "$TMPD/err")"
ok "default workers (not checked): $out"
