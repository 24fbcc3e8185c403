# pthread spinlocks under contention (c-tests/spin_threads.c: 4 threads x
# 100,000 lock/unlock, holders that sleep inside the critical section,
# trylock of a held lock, a private and a process-shared lock): natively,
# under corun with one worker and with the default worker count. glibc's
# x86_64 spinlock is 1 when free; a hook that waited for 0 never returned.
source "$(dirname "$0")/../lib.sh"
cat >"$TMPD/spin_threads.want" <<'OUT'
private: word when free 1
trylock of a held lock: EBUSY
trylock of a free lock: 0
4 threads x 100000: counter 400000, word after 1
shared: word when free 1
trylock of a held lock: EBUSY
trylock of a free lock: 0
4 threads x 100000: counter 400000, word after 1
OUT
expect_output spin_threads native
expect_output spin_threads corun-1-worker LD_PRELOAD="$LIB" CORUN_WORKERS=1
expect_output spin_threads corun LD_PRELOAD="$LIB"
ok "spinlocks: exact counts natively, under corun with one worker and with $(nproc) workers"
