# system() and lockf(F_LOCK) park (c-tests/system_lockf.c): a ticker keeps
# running during each, and system's statuses, SIGINT's action after it and
# the command's environment are glibc's; natively, with interposition off,
# and under corun with one worker and the default. Before, both waited
# inside libc and held the worker (the ticker stopped).
source "$(dirname "$0")/../lib.sh"
SYSTEM_LOCKF=here RUN_TIMEOUT=30 same_everywhere sl "$BIN/system_lockf"
[ "$(grep -c "the other thread ran meanwhile: yes" "$TMPD/sl.native")" = 2 ] || fail "natively: $(cat "$TMPD/sl.native")"
grep -qx "command sees SYSTEM_LOCKF=here" "$TMPD/sl.native" || fail "natively: no environment: $(cat "$TMPD/sl.native")"
ok "system and lockf: same results, the ticker ran during both"
