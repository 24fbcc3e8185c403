/* pthread_cancel of threads blocked in epoll_wait(-1), each of them
 * alone on its corun worker (where corun lets the thread wait in its own
 * epoll_wait as the worker's sleep): every join returns PTHREAD_CANCELED,
 * with the cleanup handler run, as natively. Before, such a wait was no
 * cancellation point under corun: nothing woke the worker and the join
 * hung (2 workers: the first thread gets a worker of its own).
 * Rounds of 1 to 3 threads; prints "cancel_epoll_alone: ok". */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

static int ep;
static atomic_int waiting, cleaned;

static void cleanup(void *arg)
{
    (void)arg;
    atomic_fetch_add(&cleaned, 1);
}

static void *waiter(void *arg)
{
    struct epoll_event ev;
    pthread_cleanup_push(cleanup, NULL);
    atomic_fetch_add(&waiting, 1);
    for (;;)
        epoll_wait(ep, &ev, 1, -1);
    pthread_cleanup_pop(0);
    return arg;
}

int main(void)
{
    int p[2];
    if (pipe(p) != 0 || (ep = epoll_create1(0)) < 0)
        return 1;
    struct epoll_event ev = {.events = EPOLLIN};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) != 0)
        return 1;
    int total = 0;
    for (int round = 0; round < 6; round++) {
        int n = 1 + round % 3;
        pthread_t t[3];
        atomic_store(&waiting, 0);
        for (int i = 0; i < n; i++)
            if (pthread_create(&t[i], NULL, waiter, NULL) != 0)
                return 1;
        while (atomic_load(&waiting) < n)
            usleep(1000);
        usleep(20000 + round * 10000); /* well inside the wait */
        for (int i = 0; i < n; i++)
            pthread_cancel(t[i]);
        for (int i = 0; i < n; i++) {
            void *r;
            if (pthread_join(t[i], &r) != 0 || r != PTHREAD_CANCELED) {
                fprintf(stderr, "round %d thread %d: not cancelled\n", round, i);
                return 1;
            }
        }
        total += n;
    }
    if (atomic_load(&cleaned) != total) {
        fprintf(stderr, "%d cleanup handlers ran, expected %d\n", atomic_load(&cleaned), total);
        return 1;
    }
    printf("cancel_epoll_alone: ok\n");
    return 0;
}
