# A fault handler that waits for another thread (c-tests/fault_handler_waits.c),
# as SBCL's garbage collector waits inside its allocation trap's SIGTRAP
# handler for every other thread to stop: the handler runs as the faulting
# coroutine's own code when the fault interrupted it at a safe point
# (src/sched/fault_park.rs), so its semaphore wait parks. It blocked the
# worker before: on one worker the thread that answers never ran, and each
# of the handler's waits timed out. The same output natively, with
# interposition off, on one worker and the default: every trap answered,
# and the value held in registers across each trap intact.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=40 same_everywhere fault_handler_waits "$BIN/fault_handler_waits"
grep -qx "400 traps handled by a wait another thread ended, 0 timed out" "$TMPD/fault_handler_waits.native" \
    || fail "natively: $(cat "$TMPD/fault_handler_waits.native")"
ok "400 fault handlers waited for a thread of their worker, as natively"
