# pthread_cancel of a thread waiting in pause, sigsuspend, sigwait,
# sigwaitinfo or sigtimedwait for a signal that never comes
# (c-tests/cancel_sigwait.c): each is a cancellation point natively, so the
# thread ends, its cleanup handler runs and its join gives
# PTHREAD_CANCELED; deferred and asynchronous, and a request already
# pending when the wait begins. Before, under corun none of the five acted
# on a cancellation and the join waited for ever (the program reports a
# join still waiting after 10 s). The cleanup handler of a thread cancelled
# while it waits in sigsuspend sees sigsuspend's mask, as natively; before,
# corun put the thread's own mask back first. Outputs are diffed natively, with
# CORUN_THREADS=native and under corun (1 and default workers).
source "$(dirname "$0")/../lib.sh"
same_everywhere cancel_sigwait "$BIN/cancel_sigwait"
grep -qx "cancel_sigwait: all checks passed" "$TMPD/cancel_sigwait.native" || fail "cancel_sigwait: no success line"
ok "cancellation in the 5 signal waits: identical natively and under corun"
