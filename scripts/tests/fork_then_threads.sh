# A forked child's threads use the workers as a process's do: a child (and
# a grandchild) making 2 CPU-bound threads runs them on 2 kernel threads
# with 2 workers, as natively. Under corun a forked child kept only the
# forking worker for good, so all the threads it made shared one CPU (an
# Apache worker-MPM child; a daemon that forks before it starts its
# threads). The child's other workers are renewed at its first spawn
# (src/sched/workers.rs, fork.rs). With 1 worker, 1 kernel thread.
source "$(dirname "$0")/../lib.sh"
prog="$BIN/fork_then_threads"
native=$(timeout 60 "$prog" 2) || fail "natively: $native"
echo "$native" | grep -q "child: 2 threads ran on 2 kernel threads" || fail "natively: $native"
# Placement spreads a spawn unless the spawner has held its worker for a
# while; a loaded machine can still put both on one worker now and then:
# one of 5 runs must show both workers, and none may fail.
spread=0
for try in 1 2 3 4 5; do
    out=$(CORUN_WORKERS=2 LD_PRELOAD="$LIB" timeout 60 "$prog" 2) || fail "2 workers: exit $?: $out"
    echo "$out"
    if echo "$out" | grep -q "^child: 2 threads ran on 2 kernel threads" \
        && echo "$out" | grep -q "^grandchild: 2 threads ran on 2 kernel threads"; then
        spread=1
        break
    fi
done
[ $spread = 1 ] || fail "in 5 runs, a forked child's 2 CPU-bound threads never ran on 2 workers: $out"
out=$(CORUN_WORKERS=1 LD_PRELOAD="$LIB" timeout 60 "$prog" 3) || fail "1 worker: exit $?: $out"
echo "$out" | grep -q "^grandchild: 3 threads ran on 1 kernel threads" || fail "1 worker: $out"
ok "a forked child's and grandchild's threads spread over the workers"
