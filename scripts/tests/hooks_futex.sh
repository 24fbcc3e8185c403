# syscall(SYS_futex, ...): the transcript of c-tests/hooks_futex.c (waits
# with and without timeouts, wake counts, bitsets, requeues, WAKE_OP,
# shared futexes across processes, errors) under corun is the native one:
# with one worker (every wait parked: see transcript.h), with the default
# worker count, and with CORUN_THREADS=native (the waiters are kernel
# threads, main a coroutine: wakes cross between the two kinds).
source "$(dirname "$0")/../lib.sh"
same_transcript hooks_futex
for mode in default native-threads; do
    # The "NOT PARKED" check (transcript.h) watches a ticker that, with
    # several workers, may run elsewhere or not at all on a loaded machine:
    # as same_transcript does, up to three runs.
    for try in 1 2 3; do
        rc=0
        case $mode in
            default) timeout -k 5 60 env LD_PRELOAD="$LIB" "$BIN/hooks_futex" >"$TMPD/$mode.out" 2>"$TMPD/$mode.err" || rc=$? ;;
            native-threads) timeout -k 5 60 env LD_PRELOAD="$LIB" CORUN_THREADS=native CORUN_WORKERS=1 \
                "$BIN/hooks_futex" >"$TMPD/$mode.out" 2>"$TMPD/$mode.err" || rc=$? ;;
        esac
        [ $rc = 1 ] && grep -q "NOT PARKED" "$TMPD/$mode.err" || break
    done
    [ $rc = 0 ] || fail "hooks_futex ($mode): exit $rc: $(tail -3 "$TMPD/$mode.err")"
    diff -u "$TMPD/hooks_futex.native" "$TMPD/$mode.out" || fail "hooks_futex ($mode) differs from native"
done
ok "hooks_futex: $(wc -l <"$TMPD/hooks_futex.native") lines, same transcript natively and under corun (1 worker, default, native threads)"
