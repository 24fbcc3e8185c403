/* Every way to wait for a child (waitpid, wait, wait4, wait3, waitid)
 * returns the child's status while another thread of the process keeps
 * running: a ticker ticks every 20 ms while the child sleeps 300 ms. Under
 * corun with one worker, a wait that blocked the worker instead of parking
 * would stop the ticker (wait3 did: glibc's wait3 calls its own wait4
 * directly, which no hook saw). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ticker.h"

static int wait_with(const char *how, pid_t p)
{
    int st = 0;
    struct rusage ru;
    if (!strcmp(how, "waitid")) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)p, &si, WEXITED) != 0 || si.si_pid != p)
            return -1;
        return si.si_status;
    }
    pid_t r;
    if (!strcmp(how, "wait4"))
        r = wait4(p, &st, 0, &ru);
    else if (!strcmp(how, "wait3"))
        r = wait3(&st, 0, &ru);
    else if (!strcmp(how, "wait"))
        r = wait(&st);
    else
        r = waitpid(p, &st, 0);
    return r == p && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void)
{
    const char *hows[] = {"waitpid", "wait", "wait4", "wait3", "waitid"};
    ticker_start(20000, 0);
    for (int i = 0; i < 5; i++) {
        fflush(stdout);
        pid_t p = fork();
        if (p == 0) {
            usleep(300000);
            _exit(10 + i);
        }
        long before = ticker_now();
        int st = wait_with(hows[i], p);
        printf("%s: status %d\n", hows[i], st);
        ticker_report(hows[i], before, 5);
    }
    ticker_stop();
    return 0;
}
