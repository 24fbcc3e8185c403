# fork under corun: a fork-per-connection echo server (children echo with
# blocking calls, the parent reaps them) byte-checked with 200 clients;
# fork+exec of sh -c with pipes (the child sees blocking pipes), a forked
# child running C code, system(), popen() both ways and vfork: the same
# transcript natively and under corun.
source "$(dirname "$0")/../lib.sh"
"$BIN/spawn_children" >"$TMPD/native" || fail "natively: $(cat "$TMPD/native")"
corun "$BIN/spawn_children" >"$TMPD/corun" || fail "under corun: $(cat "$TMPD/corun")"
diff "$TMPD/native" "$TMPD/corun" || fail "transcripts differ"
cat "$TMPD/corun"
port=$(free_port)
# 201: wait_port's probe connection is served (and reaped) too.
LD_PRELOAD="$LIB" "$BIN/forking_echo" "$port" 201 >"$TMPD/srv" 2>&1 &
srv=$!
wait_port "$port"
"$BIN/echo_client" 127.0.0.1 "$port" 200 65536 2 5 || fail "echo through forked children"
wait "$srv" || fail "forking server: $(cat "$TMPD/srv")"
cat "$TMPD/srv"
grep -q "served 201, reaped 201, bad exits 0" "$TMPD/srv" || fail "children not all reaped cleanly"
ok "fork, exec, system, popen, vfork under corun"
