# Signal masks are per thread, and a signal goes to the thread Linux gives
# it to: a process signal to a thread that does not block it (main first),
# pthread_kill to the named thread (pending there while it blocks it, run
# when it unblocks it), sigwait in a thread that blocks it, raise to the
# caller; SIGPIPE pending for a thread that blocks it; children start with
# their thread's mask; uc_sigmask changes the thread's mask. Same output
# natively and under corun (1 worker, default).
source "$(dirname "$0")/../lib.sh"
same_output_native_and_corun "$BIN/sig_masks"
