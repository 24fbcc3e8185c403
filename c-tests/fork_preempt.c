/* In a forked child, a thread that computes still gives way to one that
 * sleeps, as the kernel's scheduler makes it natively.
 *
 * The parent, a thread of its own made first, forks and waits. The child
 * makes a thread that computes for up to 3 s, and sleeps 10 ms twenty
 * times in main: each sleep must end in well under a second (natively
 * ~10 ms). Under corun with one worker, main's wake-up needs the computing
 * coroutine preempted, and the preemption monitor asks the kernel whether
 * the worker's thread runs through /proc files it keeps open: in the
 * child those must describe the child's thread, not the parent's (which
 * sleeps in waitpid, so the answer "asleep" would stop every preemption).
 *
 * Output: "child: 20 sleeps, longest under 500 ms" and exit 0; else the
 * longest sleep and exit 1.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *compute(void *arg)
{
    volatile unsigned long x = (unsigned long)arg;
    double end = now() + 3.0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed) && now() < end)
        for (int i = 0; i < 10000; i++)
            x = x * 6364136223846793005UL + 1442695040888963407UL;
    return NULL;
}

static void *idle(void *arg)
{
    return arg;
}

static int child(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, compute, (void *)1) != 0)
        return 2;
    double longest = 0;
    for (int i = 0; i < 20; i++) {
        double t0 = now();
        usleep(10000);
        double d = now() - t0;
        if (d > longest)
            longest = d;
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    if (longest >= 0.5) {
        printf("child: a 10 ms sleep took %.0f ms\n", longest * 1000);
        return 1;
    }
    printf("child: 20 sleeps, longest under 500 ms\n");
    return 0;
}

int main(void)
{
    /* The parent has a thread first: its worker's files are open. */
    pthread_t t;
    if (pthread_create(&t, NULL, idle, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 2;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        int rc = child();
        fflush(stdout);
        _exit(rc);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid)
        return 2;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
}
