# Plain pthread programs give identical output natively, under corun, and
# under corun with CORUN_THREADS=native (interposition off):
#   sync_torture  mutex (1,000 x 10,000), kinds, bounded queue, timed
#                 waits, rwlock, barrier of 100, once from 1,000, semaphores,
#                 a mutex + condition variable shared with a native thread
#   tsd           per-thread keys over 1,000 threads, destructors once each
#   thread_api    join/exit/self/detach/names/attributes/stacks, and
#                 main-exit (main's pthread_exit) and exit (exit in a thread)
# Under corun the sync torture also stays on the worker threads (+ the
# watchdog and preemption monitor threads).
source "$(dirname "$0")/../lib.sh"
run() { # TAG MODE NAME ARGS...
    local tag=$1 mode=$2 name=$3; shift 3
    local rc=0 out="$TMPD/$tag.$mode.out"
    case $mode in
        native) "$BIN/$name" "$@" >"$out" 2>&1 || rc=$? ;;
        corun) LD_PRELOAD="$LIB" "$BIN/$name" "$@" >"$out" 2>&1 || rc=$? ;;
        off) CORUN_THREADS=native LD_PRELOAD="$LIB" "$BIN/$name" "$@" >"$out" 2>&1 || rc=$? ;;
    esac
    echo "$rc" >"$TMPD/$tag.$mode.rc"
}
for spec in "sync_torture" "tsd" "thread_api" "thread_api main-exit" "thread_api exit"; do
    # shellcheck disable=SC2086
    set -- $spec
    name=$1; shift
    tag="$name${1:+-$1}"
    for mode in native corun off; do
        run "$tag" "$mode" "$name" "$@"
    done
    want_rc=0; [ "${1:-}" = exit ] && want_rc=3
    for mode in native corun off; do
        rc=$(cat "$TMPD/$tag.$mode.rc")
        [ "$rc" = "$want_rc" ] || fail "$tag ($mode): exit $rc, expected $want_rc: $(tail -5 "$TMPD/$tag.$mode.out")"
    done
    diff -u "$TMPD/$tag.native.out" "$TMPD/$tag.corun.out" || fail "$tag: corun output differs from native"
    diff -u "$TMPD/$tag.native.out" "$TMPD/$tag.off.out" || fail "$tag: CORUN_THREADS=native output differs"
    ok "$tag: identical natively, under corun and with CORUN_THREADS=native ($(tail -1 "$TMPD/$tag.corun.out"))"
done
grep -c "atexit handler ran (1)" "$TMPD/thread_api-exit.corun.out" | grep -qx 1 || fail "atexit did not run exactly once"
# The torture's 1,000 threads stay on the workers.
LD_PRELOAD="$LIB" "$BIN/sync_torture" once >"$TMPD/once.out" &
pid=$!
sleep 0.005; max=0
while kill -0 "$pid" 2>/dev/null; do
    n=$(nthreads "$pid" 2>/dev/null || echo 0)
    [ "$n" -gt "$max" ] && max=$n
    sleep 0.002
done
wait "$pid" || fail "sync_torture once failed"
# The native part of the torture uses a timer thread; the 'once' part none.
[ "$max" -le $(( $(nproc) + 2 )) ] || fail "sync_torture once had $max kernel threads"
ok "1,000 threads in pthread_once on at most $max kernel threads"
