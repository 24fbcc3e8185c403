# sem_post from a signal handler (async-signal-safe) wakes a thread waiting
# in sem_wait: a 20 us interval timer posts, main takes SIG_SEM_ROUNDS
# (default 50,000) posts, retrying on EINTR, while another thread waits on
# a condition variable. With one worker and the default; output as native
# (stdout: main busy taking posts in place for 100 ms makes the watchdog
# speak on stderr, which is not the program's output).
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=90 same_output_native_and_corun "$BIN/sig_sem" "${SIG_SEM_ROUNDS:-50000}"
