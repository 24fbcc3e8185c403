# pthread_exit and deferred pthread_cancel behave under corun as natively:
#   cxx_exit_cancel  pthread_exit from nested C++ frames (RAII objects, a
#                    std::lock_guard, a cleanup handler, catch of
#                    abi::__forced_unwind) unwinds them all and frees the
#                    mutex; cancel of a thread parked in read(); a cancel
#                    held while disabled, then acted on by pthread_testcancel
#   cancel_read      the same in C (setjmp-based cleanup buffers): nested
#                    handlers on cancel in read(), nanosleep and
#                    pthread_cond_wait, pop(0/1), disable/testcancel, and
#                    pthread_exit through nested handlers
# Each program checks its events against glibc's order and joins with a
# 10 s limit (a thread that was not cancelled fails instead of hanging);
# outputs are diffed natively, with CORUN_THREADS=native and under corun
# (1 and default workers).
source "$(dirname "$0")/../lib.sh"
for prog in cancel_read cxx_exit_cancel; do
    same_everywhere "$prog" "$BIN/$prog"
    grep -qx "$prog: all checks passed" "$TMPD/$prog.native" || fail "$prog: no success line"
    ! grep -q "NOT REACHED\|^FAIL" "$TMPD/$prog.native" || fail "$prog: $(grep -m1 "NOT REACHED\|^FAIL" "$TMPD/$prog.native")"
    ok "$prog: identical natively and under corun ($(grep -c '^ok: ' "$TMPD/$prog.native") checks)"
done
