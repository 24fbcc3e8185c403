# A stop-the-world in bdwgc's way (c-tests/stop_world.c: guile and every
# program on Boehm GC with threads): the collector pthread_kills each
# parked mutator, whose handler acknowledges on a semaphore, then waits in
# sigsuspend for the restart signal. A handler corun runs in a coroutine
# that resumes is that coroutine's code, and its sigsuspend parks
# (sched/park.rs in_coroutine); it blocked the worker before, and the
# first collection hung (no other thread of that worker ran again). Two
# mutators compute: one interrupted on another worker is preempted at a
# safe point and runs the handler as its own code (sched/preempt.rs
# redirect_for_signals); in the kernel's frame its sigsuspend blocked that
# worker. 50 rounds: every mutator stops, none works while stopped, all
# restart; the same output natively, with interposition off, on one
# worker and the default.
# Each handler's ucontext holds the thread's stack pointer and a pc, as
# Mono's suspend handler reads them (zeroed, Mono retried every suspend).
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=40 same_everywhere stop_world "$BIN/stop_world"
grep -qx "50 rounds of stop and restart, 8 of 8 mutators worked between them" "$TMPD/stop_world.native" \
    || fail "natively: $(cat "$TMPD/stop_world.native")"
grep -qx "each handler's context held its thread's stack pointer and pc: yes" "$TMPD/stop_world.native" \
    || fail "natively: $(cat "$TMPD/stop_world.native")"
ok "50 stop-the-world rounds of parked and computing mutators, as natively"
