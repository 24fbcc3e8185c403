# getaddrinfo of a numeric host and port, and getnameinfo with
# NI_NUMERICHOST|NI_NUMERICSERV, answer inline: glibc needs no file and no
# DNS for them (src/hooks/dns.rs). Every such call went to the blocking
# pool and back (a proxy resolving each request's "127.0.0.1", privoxy,
# paid that hand-off per request: 60 hand-offs here). Names, service names,
# AI_CANONNAME and reverse lookups still go to the pool (20 hand-offs: 5
# calls in 4 threads). Results identical to native with 1 and 2 workers
# (c-tests/dns_numeric.c).
source "$(dirname "$0")/../lib.sh"
for mode in numeric all; do
    "$BIN/dns_numeric" $mode >"$TMPD/$mode.native" || fail "$mode natively: $(cat "$TMPD/$mode.native")"
    for w in 1 2; do
        CORUN_STATS=1 CORUN_WORKERS=$w LD_PRELOAD="$LIB" "$BIN/dns_numeric" $mode >"$TMPD/$mode.$w" 2>"$TMPD/$mode.$w.err" ||
            fail "$mode, $w workers: exit $?: $(cat "$TMPD/$mode.$w")"
        diff -u "$TMPD/$mode.native" "$TMPD/$mode.$w" || fail "$mode, $w workers: results differ from native"
        handoffs=$(sed -n 's/^ *blocking-pool hand-offs: //p' "$TMPD/$mode.$w.err")
        want=0; [ $mode = all ] && want=20
        [ "$handoffs" = "$want" ] || fail "$mode, $w workers: $handoffs blocking-pool hand-offs, $want expected"
    done
done
cat "$TMPD/all.native"
ok "numeric getaddrinfo/getnameinfo inline (0 hand-offs), names on the pool (20), results as natively"
