# C++20 synchronisation, whose waits are syscall(SYS_futex) inside
# libstdc++ (c-tests/cxx_sync.cpp: latch, barrier, counting_semaphore,
# atomic wait/notify, promise/future/async with a producer that makes the
# consumer wait, timed waits): natively, under corun with one worker (a
# futex wait that held its worker would deadlock there), with the default
# worker count, and with CORUN_THREADS=native (kernel threads waking and
# woken by main, a coroutine). The same output every way, and the exact
# counts below. Each run is bounded in time.
source "$(dirname "$0")/../lib.sh"
cat >"$TMPD/want" <<'OUT'
latch: 400 arrived, 400 released
barrier: 300 phases, sum 1800, 0 bad phases
semaphore: 3000 items, sum right
atomic: 2000 pings, 2000 pongs, 160 released by notify_all
future: sum 80200 (want 80200), async squares 2870, shared 40
timed: try_acquire_for 30ms with nobody posting: 0, waited >= 30ms: 1
timed: try_acquire_for 10s, posted after a nap: 1
timed: future wait_for 30ms: timeout, waited >= 30ms: 1
timed: future wait_until +10s, set after a nap: ready
OUT
nm -D "$BIN/cxx_sync" | grep -q " U syscall" || fail "cxx_sync does not call syscall (libstdc++ inlined differently?)"
run() { # TAG [VAR=VALUE...]: runs cxx_sync with the given environment, at most 60 s.
    local tag=$1; shift
    local rc=0
    timeout -k 5 60 env "$@" "$BIN/cxx_sync" >"$TMPD/$tag.out" 2>"$TMPD/$tag.err" || rc=$?
    [ $rc = 0 ] || fail "cxx_sync $tag: exit $rc$([ $rc = 124 ] && echo ' (hung)'): $(tail -3 "$TMPD/$tag.err")"
    diff -u "$TMPD/want" "$TMPD/$tag.out" || fail "cxx_sync $tag: output is not the expected one"
    ok "cxx_sync $tag: $(wc -l <"$TMPD/$tag.out") lines as expected"
}
run native
run corun-1-worker LD_PRELOAD="$LIB" CORUN_WORKERS=1
run corun LD_PRELOAD="$LIB"
run corun-native-threads LD_PRELOAD="$LIB" CORUN_THREADS=native CORUN_WORKERS=1
