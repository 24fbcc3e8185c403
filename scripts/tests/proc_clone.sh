# New processes made with clone() and with syscall(SYS_clone/SYS_clone3),
# without CLONE_VM (c-tests/proc_clone.c): each child makes two threads
# that pass 200 messages through a socket and a pipe with blocking I/O, the
# parent checks every byte and the child's exit status, while a parent
# thread stays parked on a pipe. Under corun each child gets fork's
# treatment (its own scheduler and epoll); before, it shared the parent's
# epoll and hung (vsftpd's isolate=YES), and a clone() child whose function
# returned was kept alive by corun's watchdog thread.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=60 same_everywhere clone "$BIN/proc_clone"
grep -c "200 messages, 0 wrong; child exited 144" "$TMPD/clone.native" | grep -qx 9 \
    || fail "not every child passed its messages: $(cat "$TMPD/clone.native")"
ok "$(tail -1 "$TMPD/clone.native"); 9 children each 200 messages, as natively"
