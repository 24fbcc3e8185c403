# Threads created and joined in the patterns placement treats differently
# (c-tests/spawn_join_mix.c: create+join pairs, batches, a burst, a
# semaphore hand-off): every thread runs exactly once and returns its own
# result, natively, under corun with one worker, with the default and with
# two workers (where a join may take a child back from another worker's
# queue and an idle worker steals half a backlog).
source "$(dirname "$0")/../lib.sh"
prog="$BIN/spawn_join_mix"
RUN_TIMEOUT=120 same_everywhere mix "$prog"
grep -c "0 slots not marked exactly once, results all right" "$TMPD/mix.native" | grep -qx 4 \
    || fail "native run: $(cat "$TMPD/mix.native")"
CORUN_WORKERS=2 timeout -k 5 120 env LD_PRELOAD="$LIB" "$prog" >"$TMPD/w2" 2>"$TMPD/w2.err" \
    || fail "two workers: $(tail -3 "$TMPD/w2.err")"
diff -u "$TMPD/mix.native" "$TMPD/w2" || fail "two workers: output differs from the native one"
ok "$(tr '\n' ';' <"$TMPD/mix.native")"
