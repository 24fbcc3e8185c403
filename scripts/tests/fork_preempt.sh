# In a forked child, a thread that computes gives way to main's 10 ms
# sleeps (c-tests/fork_preempt.c): the preemption monitor's view of the
# worker's thread (/proc files kept open, sched/proc_view.rs) is reopened
# for the child's thread; left describing the parent's, asleep in waitpid,
# it stopped every preemption and main's sleep took the whole 3 s.
source "$(dirname "$0")/../lib.sh"
native=$(timeout 30 "$BIN/fork_preempt") || fail "natively: $native"
for w in 1 2; do
    out=$(CORUN_WORKERS=$w corun timeout 30 "$BIN/fork_preempt") || fail "$w workers: $out"
    [ "$out" = "$native" ] || fail "$w workers: $out (natively: $native)"
done
ok "a forked child's computing thread is preempted for main's sleeps, on 1 and 2 workers"
