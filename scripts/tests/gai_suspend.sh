# gai_suspend parks (src/hooks/gai.rs): waits for getaddrinfo_a lookups
# that a DNS server answers after 300 ms (c-tests/gai_suspend.c): a
# timeout (EAI_AGAIN), a completion (0, the address), nothing left to wait
# for (glibc's answer), one request done and one pending (glibc waits for
# the pending one), a handler without SA_RESTART (EAI_INTR) and with it
# (the wait goes on). The same output natively, with interposition off,
# with one worker and with the default; a ticker thread runs during every
# wait (glibc's inline futex wait held the worker before: "NO").
# In a network and mount namespace of its own (lib.sh's
# slow_dns_namespace); without unshare or root, SKIP.
source "$(dirname "$0")/../lib.sh"
slow_dns_namespace 0.3
RUN_TIMEOUT=30 same_everywhere gai_suspend "$BIN/gai_suspend"
cat "$TMPD/gai_suspend.native"
grep -q "NO$" "$TMPD/gai_suspend.native" && fail "natively (machine too loaded?): $(cat "$TMPD/gai_suspend.native")"
grep -qx "done: 0" "$TMPD/gai_suspend.native" || fail "the lookup did not complete natively"
ok "gai_suspend parks, with glibc's results"
