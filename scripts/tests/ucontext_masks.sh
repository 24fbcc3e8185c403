# Signal masks set by the ucontext calls (getcontext, setcontext,
# swapcontext and a makecontext function's uc_link return make their
# rt_sigprocmask inline, past the sigprocmask hooks) and by a raw
# syscall(SYS_rt_sigprocmask) are the coroutine's own, as natively a
# thread's: c-tests/ucontext_masks.c prints the masks it sees, a pending
# pthread_kill, and waits for a SIGALRM while another thread sits in a
# context that blocks everything. Same output natively and under corun
# (1 worker, default). Before, the masks stayed the sigprocmask ones and
# the inline calls set the worker's kernel mask: on 1 worker every signal
# stayed pending in the kernel and the process hung, deaf even to SIGTERM
# (hence SIGKILL here).
source "$(dirname "$0")/../lib.sh"
P="$BIN/ucontext_masks"
timeout -s KILL 15 "$P" >"$TMPD/native" 2>&1 || fail "natively: $(cat "$TMPD/native")"
for w in 1 2; do
    rc=0
    CORUN_WORKERS=$w LD_PRELOAD="$LIB" timeout -s KILL 15 "$P" >"$TMPD/corun.$w" 2>&1 || rc=$?
    diff -u "$TMPD/native" "$TMPD/corun.$w" || fail "workers=$w (exit $rc): the output differs from the native one"
    [ "$rc" = 0 ] || fail "workers=$w: exit $rc"
    ok "workers=$w: $(wc -l <"$TMPD/corun.$w") lines as natively"
done
