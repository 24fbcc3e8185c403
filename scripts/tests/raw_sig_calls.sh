# The signal calls made through syscall(2) (rt_sigpending, rt_sigtimedwait,
# rt_sigsuspend, sigaltstack, rt_sigaction) see and change the thread's own
# signal state, as their libc names do (c-tests/raw_sig_calls.c), on 1
# worker and the default. They went to the kernel: the worker's pending
# set and mask, and a raw rt_sigsuspend waited for ever.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=20 same_output_native_and_corun "$BIN/raw_sig_calls"
