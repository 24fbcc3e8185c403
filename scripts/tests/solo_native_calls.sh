# A process whose only coroutine is main (an event-driven server, a forked
# child serving one connection) makes its calls exactly as natively
# (src/sched/mod.rs: parking/alone), and a forked child sets nothing up
# that it does not use:
#  1. epoll_http (one thread, its own epoll loop) serving 300 sequential
#     requests under strace: under corun the same I/O system calls as
#     natively (no MSG_DONTWAIT translation, no zero-timeout checks, no
#     park on corun's epoll), within timing noise, and no thread started;
#  2. forking_echo (fork per connection, blocking read/write in the
#     child): its children create no thread, no epoll and no eventfd, and
#     make only the program's own calls.
source "$(dirname "$0")/../lib.sh"
cat >"$TMPD/seq.py" <<'PY'
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rb")
for i in range(n):
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    line = f.readline()
    assert line.startswith(b"HTTP/1.1 200"), line
    clen = 0
    while True:
        h = f.readline()
        if h in (b"\r\n", b""):
            break
        if h.lower().startswith(b"content-length:"):
            clen = int(h.split(b":")[1])
    assert len(f.read(clen)) == clen
print("ok", n)
PY
IO='^(read|write|readv|writev|recvfrom|sendto|recvmsg|sendmsg|epoll_wait|epoll_pwait|epoll_pwait2|poll|ppoll|accept|accept4|epoll_ctl)$'
for mode in native corun; do
    port=$(free_port)
    pre=""
    [ $mode = corun ] && pre=$LIB
    strace -f -qq -o "$TMPD/eh.$mode" env LD_PRELOAD="$pre" "$BIN/epoll_http" "$port" 128 >"$TMPD/eh.out" 2>&1 &
    st=$!
    wait_port "$port"
    python3 "$TMPD/seq.py" "$port" 300 >/dev/null || fail "epoll_http ($mode): bad replies"
    # strace's child is the server (env execs it).
    srv=$(pgrep -P "$st" | head -1)
    kill "$srv" 2>/dev/null || true
    wait "$st" 2>/dev/null || true
    awk '{ c = $2; sub(/\(.*/, "", c); print c }' "$TMPD/eh.$mode" | grep -E "$IO" | sort | uniq -c >"$TMPD/eh.$mode.counts" || true
done
echo "epoll_http I/O calls, native:"; cat "$TMPD/eh.native.counts"
echo "under corun:"; cat "$TMPD/eh.corun.counts"
total() { awk '{ s += $1 } END { print s + 0 }' "$1"; }
n=$(total "$TMPD/eh.native.counts"); c=$(total "$TMPD/eh.corun.counts")
# Per request the program reads, writes, reads again (EAGAIN) and waits in
# epoll_wait: at most 4 calls (fewer when the next request is already
# there, which depends on timing).
[ "$c" -le $((300 * 4 + 40)) ] || fail "corun made $c I/O calls for 300 requests (native: $n)"
# No call the program did not make itself (corun's MSG_DONTWAIT reads and
# writes, zero-timeout checks, waits on its own epoll).
extra=$(comm -13 <(awk '{ print $2 }' "$TMPD/eh.native.counts" | sort) <(awk '{ print $2 }' "$TMPD/eh.corun.counts" | sort))
[ -z "$extra" ] || fail "under corun the server made calls the program does not make: $extra"
grep -qE 'clone3?\(.*CLONE_THREAD' "$TMPD/eh.corun" && fail "epoll_http started a thread under corun"
echo "epoll_http: $c I/O calls under corun, $n natively; no thread"

# forking_echo: 20 connections, each a child.
port=$(free_port)
strace -f -qq -o "$TMPD/fe" env LD_PRELOAD="$LIB" "$BIN/forking_echo" "$port" 21 >"$TMPD/fe.out" 2>&1 &
st=$!
wait_port "$port"
"$BIN/echo_client" 127.0.0.1 "$port" 20 4096 3 7 >/dev/null || fail "echo through forked children"
wait "$st" || fail "forking_echo: $(cat "$TMPD/fe.out")"
grep -q "served 21, reaped 21, bad exits 0" "$TMPD/fe.out" || fail "forking_echo: $(cat "$TMPD/fe.out")"
parent=$(awk 'NR == 1 { print $1 }' "$TMPD/fe")
# Children: pids that did not start the trace.
kids=$(awk -v p="$parent" '$1 != p { print $1 }' "$TMPD/fe" | sort -u)
[ "$(echo "$kids" | wc -w)" -ge 20 ] || fail "expected 20 children in the trace"
bad=$(awk -v p="$parent" '$1 != p' "$TMPD/fe" | grep -E ' (clone3?|epoll_create1?|eventfd2?|epoll_ctl|mmap|prlimit64)\(' || true)
[ -z "$bad" ] || fail "forked children set up what they do not use: $(head -5 <<<"$bad")"
calls=$(awk -v p="$parent" '$1 != p { c = $2; sub(/\(.*/, "", c); print c }' "$TMPD/fe" | grep -vE '^(<\.\.\.|\+\+\+|---)' | sort | uniq -c | sort -rn | tr '\n' ' ')
echo "forked children's calls: $calls"
ok "the only coroutine makes the program's calls as natively; forked children set nothing up"
