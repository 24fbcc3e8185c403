# Thread names as the kernel keeps them (src/hooks/pthread/name.rs): main's
# name is the process's (/proc/self/comm: what ps, pgrep -x and killall
# match), so main naming itself (pthread_setname_np, prctl PR_SET_NAME) or
# being named by another thread renames the process; another thread's
# prctl(PR_SET_NAME) names that thread only (it renamed the worker's kernel
# thread, on worker 0 the process) and pthread_getname_np/PR_GET_NAME see
# it; a forked child has the forking thread's name. Same output natively
# and under corun (1 worker, default). Then Apache Traffic Server's way:
# main names itself "[TS_MAIN]" before starting its threads, and ps shows
# the process so (it showed the program's name under corun).
source "$(dirname "$0")/../lib.sh"
same_output_native_and_corun "$BIN/thread_names"
cat >"$TMPD/ts_main.c" <<'C'
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>
static void *net(void *a) { (void)a; prctl(PR_SET_NAME, "[ET_NET 0]"); sleep(1); return 0; }
int main(void) {
    pthread_t t[3];
    pthread_setname_np(pthread_self(), "[TS_MAIN]");
    for (int i = 0; i < 3; i++) pthread_create(&t[i], 0, net, 0);
    usleep(300000);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "ps -o comm= -p %d", (int)getpid());
    fflush(stdout);
    if (system(cmd) != 0) return 1;
    for (int i = 0; i < 3; i++) pthread_join(t[i], 0);
    return 0;
}
C
cc -O2 -Wall -Werror -o "$TMPD/ts_main" "$TMPD/ts_main.c" -pthread || fail "cc"
for w in 1 2; do
    out=$(CORUN_WORKERS=$w LD_PRELOAD="$LIB" timeout 30 "$TMPD/ts_main") || fail "ts_main, $w workers: $out"
    [ "$out" = "[TS_MAIN]" ] || fail "ts_main, $w workers: ps shows '$out', natively '$("$TMPD/ts_main")'"
done
ok "names the same natively and under corun; ps shows [TS_MAIN] as natively"
