# C11 <threads.h> (src/hooks/c11threads.rs): thrd_*, mtx_*, cnd_*,
# call_once, tss_* give the same results natively, under corun with
# interposition off, with one worker and with the default; every wait of
# main lets a pthread ticker run (a C11 wait held its worker before, and
# a mtx_lock on a mutex a pthread held deadlocked with one worker).
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=20 same_everywhere c11_threads "$BIN/c11_threads"
grep -q ": NO$\|NO " "$TMPD/c11_threads.native" && fail "natively (machine too loaded?): $(cat "$TMPD/c11_threads.native")"
ok "C11 threads are coroutines; their waits park"
