# A once whose routine does not return runs again at the next call, as with
# glibc (c-tests/cxx_once_retry.cpp): a C++ exception out of
# std::call_once's callable (retried by the same thread, and by main waiting
# on the flag meanwhile), pthread_exit and a cancellation inside
# pthread_once's routine while main waits. Under corun the once stayed "in
# progress" and the next call waited for ever (src/hooks/pthread_sync/
# once.rs: runs under way are given back when abandoned).
source "$(dirname "$0")/../lib.sh"
cat >"$TMPD/cxx_once_retry.want" <<'OUT'
1: caught first
1: 2 attempts
2: thread caught second
2: 2 tries, main's callable ran: yes
3: routine ran 2 times
4: cancelled, routine ran 2 times
OUT
expect_output cxx_once_retry native
expect_output cxx_once_retry corun-1-worker LD_PRELOAD="$LIB" CORUN_WORKERS=1
expect_output cxx_once_retry corun LD_PRELOAD="$LIB"
ok "cxx_once_retry: the same $(wc -l <"$TMPD/cxx_once_retry.want") lines natively, under corun with one worker and with $(nproc)"
