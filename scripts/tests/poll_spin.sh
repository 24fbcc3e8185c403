# A thread that loops on poll/ppoll/select/epoll_wait/epoll_pwait/
# epoll_pwait2 answered at once, waiting for a
# thread that shares its worker to read the descriptor (c-tests/poll_spin.c),
# lets that thread run, natively and under corun: after a time slice
# without a park, the looping coroutine's worker polls its netpoller and
# the coroutine yields (src/sched/slice.rs). Also a client parked in read()
# beside a server spinning on poll (test_ftplib's shape) gets its replies.
# Before, the loop held its worker for ever (the program gives up after
# 10 s and says so). Then CPython's multiprocessing.Pool, whose
# worker-handler thread loops that way until the result-handler thread
# reads the result pipe: Pool.map with fork and spawn children, and a
# ProcessPoolExecutor, print the same (every Pool.map hung under corun).
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=60 same_everywhere poll_spin "$BIN/poll_spin"
[ "$(grep -c "the reader ran while this thread looped" "$TMPD/poll_spin.native")" = 8 ] \
    || fail "poll_spin natively: $(cat "$TMPD/poll_spin.native")"
grep -qx "a client parked beside a spinning server: both replies came" "$TMPD/poll_spin.native" \
    || fail "poll_spin natively: $(cat "$TMPD/poll_spin.native")"
ok "poll_spin: poll, poll with timeout 0, ppoll, select, the epoll waits: the reader ran in every run; a parked client got its replies"

cat >"$TMPD/pool.py" <<'PY'
import concurrent.futures as cf, multiprocessing as mp
def sq(x): return x * x
if __name__ == '__main__':
    for method in ('fork', 'spawn'):
        with mp.get_context(method).Pool(3) as pool:
            print(method, 'pool', sum(pool.map(sq, range(100))))
    with cf.ProcessPoolExecutor(2, mp_context=mp.get_context('fork')) as ex:
        print('executor', sum(ex.map(sq, range(100))))
PY
RUN_TIMEOUT=60 same_everywhere pool python3 "$TMPD/pool.py"
printf 'fork pool 328350\nspawn pool 328350\nexecutor 328350\n' | diff - "$TMPD/pool.native" \
    || fail "python multiprocessing: not the expected sums natively"
ok "python multiprocessing: Pool.map (fork, spawn) and ProcessPoolExecutor as natively"
