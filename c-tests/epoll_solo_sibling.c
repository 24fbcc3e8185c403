/* An event loop whose worker also holds threads that wait on other
 * things (issue 13: Redis's background threads on condition variables).
 *
 * Run with CORUN_WORKERS=1 so that every thread shares the loop's worker.
 * Phase 1: a thread waits on a condition variable while main makes ROUNDS
 * epoll_waits of 1 ms on an empty set (scripts/tests/epoll_solo_sibling.sh
 * counts the epoll calls under strace: one a wait when the loop waits in
 * its own set). Phase 2: that thread is signalled and must run (main's
 * next wait takes a round through the scheduler). Phase 3: a thread
 * blocks in read() on a pipe that a forked child writes 100 ms later, and
 * then writes main's pipe: main's epoll_wait must see it within a second,
 * so a thread of the loop's worker waiting on an fd is still woken while
 * the loop waits (its readiness is in the worker's epoll, not main's).
 * Prints "ok" and exits 0, or says what went wrong and exits 1. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go, ran;
static int loop_pipe[2], side_pipe[2];

static void *cond_waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!go)
        pthread_cond_wait(&cv, &mu);
    ran = 1;
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void *fd_waiter(void *arg)
{
    char c;
    (void)arg;
    if (read(side_pipe[0], &c, 1) != 1 || c != 's')
        return (void *)1;
    c = 'l';
    if (write(loop_pipe[1], &c, 1) != 1)
        return (void *)1;
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail(const char *what)
{
    printf("FAIL: %s\n", what);
    return 1;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    struct epoll_event ev = {.events = EPOLLIN}, out[4];
    pthread_t a, b;
    void *res;
    if (pipe(loop_pipe) || pipe(side_pipe))
        return fail("pipe");
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        return fail("epoll_create1");
    ev.data.fd = loop_pipe[0];
    if (epoll_ctl(ep, EPOLL_CTL_ADD, loop_pipe[0], &ev))
        return fail("epoll_ctl");
    if (pthread_create(&a, NULL, cond_waiter, NULL))
        return fail("pthread_create");
    /* Phase 1: waits that time out, the thread parked on its condition. */
    for (int i = 0; i < rounds; i++) {
        int n = epoll_wait(ep, out, 4, 1);
        if (n != 0) {
            printf("FAIL: epoll_wait of an empty set gave %d (errno %d)\n", n, errno);
            return 1;
        }
    }
    /* Phase 2: the thread is signalled and runs. */
    pthread_mutex_lock(&mu);
    go = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    if (epoll_wait(ep, out, 4, 1) != 0)
        return fail("epoll_wait after the signal");
    if (pthread_join(a, NULL))
        return fail("pthread_join");
    if (!ran)
        return fail("the condition waiter did not run");
    /* Phase 3: a thread waits on a pipe that a child writes later. */
    if (pthread_create(&b, NULL, fd_waiter, NULL))
        return fail("pthread_create");
    pid_t child = fork();
    if (child < 0)
        return fail("fork");
    if (child == 0) {
        usleep(100 * 1000);
        char c = 's';
        _exit(write(side_pipe[1], &c, 1) == 1 ? 0 : 1);
    }
    double t0 = now_s();
    int n;
    do
        n = epoll_wait(ep, out, 4, 1000);
    while (n < 0 && errno == EINTR);
    double waited = now_s() - t0;
    int st;
    waitpid(child, &st, 0);
    if (n != 1 || out[0].data.fd != loop_pipe[0]) {
        printf("FAIL: after %.3f s epoll_wait gave %d, not the pipe the fd waiter writes\n", waited, n);
        return 1;
    }
    if (pthread_join(b, &res) || res != NULL)
        return fail("the fd waiter failed");
    printf("ok (%d waits; the fd waiter's write seen after %.3f s)\n", rounds, waited);
    return 0;
}
