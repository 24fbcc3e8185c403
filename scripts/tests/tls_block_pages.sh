# Memory of a thread's own TLS block (src/ctx/tls_storage.rs): 2,000
# threads idle in read() (c-tests/idle_tls_threads.c), under corun with a
# TLS block per thread (the default) and with CORUN_TLS=worker (none); the
# difference of RSS per thread is what a block costs. Blocks from malloc
# lie end to end, every page of them resident (5.1 KiB a thread here);
# a slot of zero pages with the written part in one page costs that page
# and the DTV ld.so mallocs (4.4 KiB). The bound is between the two.
source "$(dirname "$0")/../lib.sh"
N=2000
per() { # CORUN_TLS value
    CORUN_WORKERS=1 CORUN_TLS=$1 corun "$BIN/idle_tls_threads" $N >"$TMPD/out" 2>"$TMPD/err" \
        || fail "CORUN_TLS=$1: exit $?: $(cat "$TMPD/err")"
    [ -s "$TMPD/err" ] && fail "CORUN_TLS=$1: stderr: $(cat "$TMPD/err")"
    awk '/^rss_per_thread/{print $2}' "$TMPD/out"
}
own=$(per thread)
shared=$(per worker)
[ -n "$own" ] && [ -n "$shared" ] || fail "no figure: own '$own' shared '$shared'"
block=$((own - shared))
ok "RSS per idle thread: $own bytes with its own TLS block, $shared without: a block costs $block bytes"
[ "$block" -le 4800 ] || fail "a TLS block costs $block bytes of RSS (more than one page and its DTV: 4,800)"
