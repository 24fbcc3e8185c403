# A thread's nice value and policy are its own (src/hooks/pthread/
# sched_attr.rs): set, read back, inherited, and not reaching main or
# the threads main makes; the same output natively, with interposition
# off, with one worker and with the default.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=20 same_everywhere thread_nice "$BIN/thread_nice"
ok "a thread's nice value and policy are its own, as natively"
