# A thread's timer slack (prctl PR_[GS]ET_TIMERSLACK) and I/O priority
# (syscall ioprio_[gs]et) are its own, inherited by the threads it makes,
# and readable by others through its tid (c-tests/thread_slack_ioprio.c),
# on 1 worker and the default. They were the worker's, shared by every
# thread there.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=20 same_output_native_and_corun "$BIN/thread_slack_ioprio"
