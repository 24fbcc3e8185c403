# syscall(SYS_sched_getattr/SYS_sched_setattr) take a coroutine thread's
# own tid (src/hooks/pthread/tid.rs), as GLib's thread creation needs:
# the same output natively, with interposition off, with one worker and
# with the default (GLib's thread-pool, task, socket-service tests failed
# with "Failed to set scheduler settings: No such process" before).
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=20 same_everywhere sched_attr "$BIN/sched_attr"
ok "sched_getattr/setattr on a thread's own tid, as natively"
