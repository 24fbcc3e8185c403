# C++20 synchronisation, whose waits are syscall(SYS_futex) inside
# libstdc++ (c-tests/cxx_sync.cpp: latch, barrier, counting_semaphore,
# atomic wait/notify, promise/future/async with a producer that makes the
# consumer wait, timed waits): natively, under corun with one worker (a
# futex wait that held its worker would deadlock there), with the default
# worker count, and with CORUN_THREADS=native (kernel threads waking and
# woken by main, a coroutine). The same output every way, and the exact
# counts below. Each run is bounded in time.
source "$(dirname "$0")/../lib.sh"
cat >"$TMPD/cxx_sync.want" <<'OUT'
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
expect_output cxx_sync native
expect_output cxx_sync corun-1-worker LD_PRELOAD="$LIB" CORUN_WORKERS=1
expect_output cxx_sync corun LD_PRELOAD="$LIB"
expect_output cxx_sync corun-native-threads LD_PRELOAD="$LIB" CORUN_THREADS=native CORUN_WORKERS=1
ok "cxx_sync: $(wc -l <"$TMPD/cxx_sync.want") lines as expected natively, under corun with one worker, $(nproc) workers, and native threads"
