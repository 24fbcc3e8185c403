# Each pthread_create thread has its own TLS (c-tests/tls_threads.c:
# __thread, errno, libc state across parks, fork from a thread): identical
# natively and under corun with 1 and 2 workers. With CORUN_TLS=worker the
# threads share their worker's TLS, and the program must see it (the check
# can fail).
source "$(dirname "$0")/../lib.sh"
"$BIN/tls_threads" >"$TMPD/native" || fail "natively: $(cat "$TMPD/native")"
grep -q "errors 0" "$TMPD/native" || fail "native run reported errors"
for w in 1 2; do
    CORUN_WORKERS=$w corun "$BIN/tls_threads" >"$TMPD/corun$w" 2>"$TMPD/err$w" \
        || fail "workers=$w: exit $?: $(tail -5 "$TMPD/corun$w") $(cat "$TMPD/err$w")"
    diff -u "$TMPD/native" "$TMPD/corun$w" || fail "workers=$w: output differs from native"
    [ -s "$TMPD/err$w" ] && fail "workers=$w: stderr: $(cat "$TMPD/err$w")"
    ok "workers=$w: $(tail -1 "$TMPD/corun$w")"
done
if CORUN_WORKERS=1 CORUN_TLS=worker corun "$BIN/tls_threads" >"$TMPD/shared" 2>&1; then
    fail "with CORUN_TLS=worker the threads should have seen each other's TLS"
fi
ok "CORUN_TLS=worker: shared TLS is seen ($(grep -c 'fresh TLS expected' "$TMPD/shared") threads saw a used TLS)"
