# pthread spinlocks under contention (c-tests/spin_threads.c: 4 threads x
# 100,000 lock/unlock, holders that sleep inside the critical section,
# trylock of a held lock, a private and a process-shared lock): natively,
# under corun with one worker and with the default worker count. glibc's
# x86_64 spinlock is 1 when free; a hook that waited for 0 never returned.
source "$(dirname "$0")/../lib.sh"
cat >"$TMPD/want" <<'OUT'
private: word when free 1
trylock of a held lock: EBUSY
trylock of a free lock: 0
4 threads x 100000: counter 400000, word after 1
shared: word when free 1
trylock of a held lock: EBUSY
trylock of a free lock: 0
4 threads x 100000: counter 400000, word after 1
OUT
run() { # TAG [VAR=VALUE...]: runs spin_threads with the given environment, at most 60 s.
    local tag=$1; shift
    local rc=0
    timeout -k 5 60 env "$@" "$BIN/spin_threads" >"$TMPD/$tag.out" 2>"$TMPD/$tag.err" || rc=$?
    [ $rc = 0 ] || fail "spin_threads $tag: exit $rc$([ $rc = 124 ] && echo ' (hung)'): $(tail -3 "$TMPD/$tag.err")"
    diff -u "$TMPD/want" "$TMPD/$tag.out" || fail "spin_threads $tag: output is not the expected one"
}
run native
run corun-1-worker LD_PRELOAD="$LIB" CORUN_WORKERS=1
run corun LD_PRELOAD="$LIB"
ok "spinlocks: exact counts natively, under corun with one worker and with $(nproc) workers"
