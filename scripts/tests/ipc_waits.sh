# Waits on System V message queues and semaphores and on POSIX message
# queues park the thread, not its worker (src/hooks/ipc.rs): each wait is
# ended by another process 200 ms later while a 1 ms ticker thread keeps
# running; timeouts, EIDRM, EINTR and the kernel's immediate errors are
# as natively. Same output natively and under corun (1 worker, default).
source "$(dirname "$0")/../lib.sh"
same_output_native_and_corun "$BIN/ipc_waits"
grep -q ": NO$" "$TMPD/native" && fail "natively: $(cat "$TMPD/native")"
ok "message queues and semaphores wait as natively, the worker free"
