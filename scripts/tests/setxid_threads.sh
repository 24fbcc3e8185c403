# setuid/setgid/setegid/setresgid/setgroups from a thread, from a forked
# child's thread (h2o's neverbleed helper) and from main beside computing
# threads; as root, a thread's setegid reaches every kernel thread
# (c-tests/setxid_threads.c). Each returns 0 natively and under corun (1
# and default workers). Before, glibc's SIGSETXID handler cleared its
# "done" flag in the coroutine's descriptor instead of the worker's, and
# glibc signalled the worker again for ever: the first call never returned.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=30 same_everywhere setxid "$BIN/setxid_threads"
[ "$(grep -c ': setgid 0, setegid 0, setresgid 0, setgroups 0, setuid 0$' "$TMPD/setxid.native")" = 2 ] \
    || fail "natively: $(cat "$TMPD/setxid.native")"
grep -q '^thread setegid(65534) 0, on every task yes; back 0, on every task yes$' "$TMPD/setxid.native" \
    || fail "natively: $(cat "$TMPD/setxid.native")"
ok "setxid calls from threads, a forked child's thread and beside computing threads: as natively"
