# Ruby 3.1 with a thread that computes (src/sched/preempt_safe.rs): the
# main thread sleeps 0.1 s, kills the computing thread and joins it. Ruby's
# threads take turns holding its VM lock, so the main thread runs again only
# if the computing coroutine is preempted. Its interpreter frames hold stale
# return addresses into malloc just above its sp, and its thread start
# reserves a 1 MiB frame: the word-by-word stack scan refused every request
# and this hung for good on 1 worker (SIGTERM too: Ruby runs its signal
# work in the main thread). Each case 5 times on 1 and 2 workers, bounded
# by a KILL after 30 s; output must be "ok" exactly, and CORUN_STATS must
# show preemptions made.
source "$(dirname "$0")/../lib.sh"
command -v ruby >/dev/null 2>&1 || { echo "SKIP: ruby not installed"; exit 0; }

prog='c = Thread.new { loop {} }; sleep 0.1; c.kill; c.join; puts :ok'
[ "$(ruby -e "$prog")" = ok ] || fail "natively: $(ruby -e "$prog" 2>&1 | head -3)"
for workers in 1 2; do
    for run in 1 2 3 4 5; do
        out=$(CORUN_WORKERS=$workers CORUN_STATS=1 timeout -k 2 30 env LD_PRELOAD="$LIB" \
            ruby -e "$prog" 2>"$TMPD/err") && rc=0 || rc=$?
        [ $rc -eq 0 ] && [ "$out" = ok ] \
            || fail "$workers worker(s), run $run: exit $rc, output '$out' (a hang is exit 124/137): $(grep -E 'preempt' "$TMPD/err")"
        made=$(awk '/^ *preemptions:/ { print $2 }' "$TMPD/err")
        [ "${made:-0}" -gt 0 ] || [ "$workers" -gt 1 ] \
            || fail "1 worker, run $run: ok without a preemption? $(grep preempt "$TMPD/err")"
    done
    ok "ruby, $workers worker(s): 5 runs printed ok; last: $(grep -E 'preemptions:' "$TMPD/err" | sed 's/^ *//')"
done
