/* A process that forks, then makes its threads in the child (a daemon
 * that forks before it starts its thread pool; every Apache worker-MPM or
 * event-MPM child): the child's CPU-bound threads run on as many kernel
 * threads as natively, up to the CPUs there are. Under corun a forked
 * child kept only the forking worker, and all its threads shared one CPU.
 *
 * The child makes THREADS threads that each compute for ~200 ms of CPU
 * (a fixed number of loop rounds), records the kernel threads it started
 * and ended on (/proc/thread-self), and prints how many distinct kernel
 * threads ran them; then a grandchild does the same (a fork of a forked child). The
 * parent prints the child's lines and its exit status.
 *   usage: fork_then_threads THREADS */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernel_tid.h"

#define MAX 16

static long tids[MAX][2]; /* the first and the last kernel thread each ran on */
static volatile uint64_t sink;
static long rounds;

static void *compute(void *arg)
{
    long i = (long)arg;
    uint64_t x = (uint64_t)i + 1;
    for (long k = 0; k < rounds; k++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        if ((k & 0xfffff) == 0) {
            tids[i][1] = kernel_tid();
            if (k == 0)
                tids[i][0] = tids[i][1];
        }
    }
    sink = x;
    return NULL;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int threads_here(const char *who, int n)
{
    pthread_t t[MAX];
    for (long i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, compute, (void *)i) != 0) {
            fprintf(stderr, "%s: pthread_create failed\n", who);
            return 1;
        }
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    /* Distinct kernel threads among where they started and ended: a
     * thread may move to an idle worker (src/sched/shed.rs), next to one
     * that ended there, so the last ones alone may coincide. */
    long *all = &tids[0][0];
    int distinct = 0;
    for (int i = 0; i < 2 * n; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= all[j] == all[i];
        distinct += !seen;
    }
    printf("%s: %d threads ran on %d kernel threads\n", who, n, distinct);
    fflush(stdout);
    return 0;
}

static int wait_child(pid_t pid, const char *who)
{
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("%s: ended badly (status %d)\n", who, st);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2;
    if (n < 1 || n > MAX)
        n = 2;
    /* ~200 ms of CPU per thread on this machine's cores. */
    uint64_t t0 = now_ns();
    rounds = 1 << 22;
    compute((void *)0);
    uint64_t per = now_ns() - t0;
    rounds = (long)((double)(1 << 22) * 200e6 / (double)(per ? per : 1));
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (threads_here("child", n))
            _exit(1);
        pid_t g = fork();
        if (g == 0)
            _exit(threads_here("grandchild", n));
        _exit(wait_child(g, "grandchild"));
    }
    return wait_child(pid, "child");
}
