# Robust mutexes whose owner thread returned holding them, in the process
# and in a forked child (c-tests/robust_owner_died.c): the next lock gets
# EOWNERDEAD, pthread_mutex_consistent makes the mutex usable again; the
# same natively and under corun (1 and default workers). Before, a
# coroutine's robust list (in its own glibc descriptor) was never walked:
# the mutexes stayed locked and each timed lock ended with ETIMEDOUT.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=30 same_everywhere robust "$BIN/robust_owner_died"
[ "$(grep -c 'lock EOWNERDEAD, consistent 0, unlock 0, relock 0' "$TMPD/robust.native")" = 4 ] || fail "natively: $(cat "$TMPD/robust.native")"
ok "4 robust mutexes whose owner died: EOWNERDEAD as natively"
