# The first look a coroutine's futex wait takes at its word costs about a
# system call (src/hooks/syscall/futex.rs): c-tests/futex_pingpong.c hands
# a turn back and forth 30,000 times between two threads through
# syscall(SYS_futex) on 1 worker (every wait parks) and must use less than
# 1 s of CPU time (natively ~50 ms; here ~20 ms). When that look was a
# FUTEX_WAIT with a deadline already past, each armed and fired a kernel
# timer: 1.3 s of system time for these rounds on a 2-CPU VM (a rayon
# program making many small parallel calls spent a third of its CPU there).
source "$(dirname "$0")/../lib.sh"

"$BIN/futex_pingpong" 30000 >"$TMPD/native" || fail "natively: exit $?"
grep -qx done "$TMPD/native" || fail "natively: $(cat "$TMPD/native")"
native=$(sed -n 's/^cpu_ms //p' "$TMPD/native")
CORUN_WORKERS=1 timeout 60 env LD_PRELOAD="$LIB" "$BIN/futex_pingpong" 30000 >"$TMPD/w1" \
    || fail "1 worker: exit $?"
grep -qx done "$TMPD/w1" || fail "1 worker: $(cat "$TMPD/w1")"
ms=$(sed -n 's/^cpu_ms //p' "$TMPD/w1")
[ "$ms" -lt 1000 ] || fail "30,000 futex round trips on 1 worker used $ms ms of CPU (natively $native ms)"
ok "30,000 futex round trips on 1 worker: $ms ms of CPU (natively $native ms)"
