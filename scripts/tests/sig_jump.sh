# The read-timeout pattern: a SIGALRM handler leaves a blocked read with
# siglongjmp, 1,000 times in main and 1,000 times in a thread (main blocks
# SIGALRM and joins), while another thread ticks. Afterwards SIGALRM is not
# left blocked and reads and sleeps still work. As natively, with one
# worker and with the default.
source "$(dirname "$0")/../lib.sh"
same_output_native_and_corun "$BIN/sig_jump"
