# Asynchronous cancellation (PTHREAD_CANCEL_ASYNCHRONOUS) acts wherever the
# thread is, as natively (c-tests/cancel_async.c): threads waiting for a
# mutex another holds, a process-shared robust mutex, an rwlock, a futex
# syscall, a condition and a read of an empty pipe, and one computing, are cancelled
# and joined (10 s limit each), their cleanup handlers run, and the mutex
# a cancelled thread waited for still reaches the waiter behind it.
# uWSGI's graceful reload cancels its threads so; before, corun treated it
# as deferred and the mutex waiter never ended. Outputs are diffed
# natively, with CORUN_THREADS=native and under corun (1 and default
# workers).
source "$(dirname "$0")/../lib.sh"
same_everywhere cancel_async "$BIN/cancel_async"
grep -qx "cancel_async: all checks passed" "$TMPD/cancel_async.native" || fail "cancel_async: no success line"
ok "asynchronous cancellation in 7 kinds of wait and a loop: identical natively and under corun"
