# Each thread has its own tid (src/hooks/pthread/tid.rs): gettid() and
# syscall(SYS_gettid) differ between threads and equal the pid only in
# main; tgkill, tkill and rt_tgsigqueueinfo (direct and through syscall())
# on a thread's tid run the handler in that thread; the scheduling calls
# take a thread's tid; a joined thread's tid is gone (ESRCH); set_tid_address
# returns the tid, and its word is zeroed and woken at the thread's exit. Same output
# natively and under corun (1 worker, default). Then CPython's own test of
# it: threading.get_native_id() distinct across 10 threads.
source "$(dirname "$0")/../lib.sh"
same_output_native_and_corun "$BIN/thread_ids"
cat >"$TMPD/native_ids.py" <<'PY'
import os, threading
ids, lock, go = set(), threading.Lock(), threading.Barrier(11)
def f():
    with lock:
        ids.add(threading.get_native_id())
    go.wait()
ts = [threading.Thread(target=f) for _ in range(10)]
for t in ts: t.start()
ids.add(threading.get_native_id())
go.wait()
for t in ts: t.join()
print("distinct native ids:", len(ids), "main's is the pid:", threading.get_native_id() == os.getpid())
PY
for w in 1 2; do
    out=$(CORUN_WORKERS=$w LD_PRELOAD="$LIB" timeout 60 python3 "$TMPD/native_ids.py") || fail "python under corun: $out"
    [ "$out" = "$(python3 "$TMPD/native_ids.py")" ] || fail "python, $w workers: '$out'"
    [ "$out" = "distinct native ids: 11 main's is the pid: True" ] || fail "python: '$out'"
done
ok "threads have their own tids, same natively and under corun; python: 11 distinct native ids"
