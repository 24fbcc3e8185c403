# Waits made through syscall(2) (c-tests/raw_waits.c): read, poll, ppoll,
# select, pselect6, epoll_wait, recvfrom, accept4, wait4, nanosleep and
# clock_nanosleep, each ended by another thread, and their error results.
# Made raw, the call held its worker: with one worker (the default on one
# CPU) the thread that would end it never ran. The same output natively and
# under corun with one worker and the default (src/hooks/syscall/io.rs).
source "$(dirname "$0")/../lib.sh"
cat >"$TMPD/raw_waits.want" <<'OUT'
read: 1
poll: 1
ppoll: 1
select: 1
pselect6: 1
epoll_wait: 1
recvfrom: 1
accept4: a connection
wait4: the child, exit 7
nanosleep: 0, the other thread ran meanwhile: yes
clock_nanosleep: 0, the other thread ran meanwhile: yes
read of a bad fd: -1 Bad file descriptor
clock_nanosleep on a bad clock: -1 Invalid argument
OUT
expect_output raw_waits native
expect_output raw_waits corun-1-worker LD_PRELOAD="$LIB" CORUN_WORKERS=1
expect_output raw_waits corun LD_PRELOAD="$LIB"
ok "raw_waits: the same $(wc -l <"$TMPD/raw_waits.want") lines natively, under corun with one worker and with $(nproc)"
