# pthread_create with a 1 TiB stack size attribute fails with EAGAIN under
# corun as natively (corun clamps stacks to 1 GiB, which it could map), and
# a 64 MiB one still works (c-tests/thread_huge_stack.c).
source "$(dirname "$0")/../lib.sh"
cat >"$TMPD/thread_huge_stack.want" <<'OUT'
1 TiB: setstacksize 0, pthread_create EAGAIN, threads run so far 0
64 MiB: setstacksize 0, pthread_create 0, join 0, threads run so far 1
1 TiB again: setstacksize 0, pthread_create EAGAIN, threads run so far 1
OUT
expect_output thread_huge_stack native
expect_output thread_huge_stack corun LD_PRELOAD="$LIB"
ok "1 TiB stack: EAGAIN natively and under corun; 64 MiB: created and joined"
