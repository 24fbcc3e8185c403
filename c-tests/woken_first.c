/*
 * woken_first NNEW - a thread that wakes runs before a burst of new
 * threads that have not run yet, and the burst is not held back for it.
 *
 * A thread waits on a semaphore. main makes NNEW threads in a row without
 * yielding (each notes, when it first runs, how many of the burst ran
 * before it), then posts the semaphore, so that (under corun, one worker)
 * the woken thread is queued behind the turns of all NNEW never-run
 * threads. The woken thread notes how many of them had started when it
 * ran. Prints both figures; scripts/tests/woken_first.sh checks them.
 *
 * 100,000 coroutines that each sleep 1 ms (co_bench_micro sleepers) are
 * this case many times over: each woken sleeper waited until every
 * never-run one queued before its wake-up had started, so all 100,000
 * tasks and stacks were live at once, and cold in the caches by their
 * second run.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static sem_t go;
static atomic_long started;
static atomic_int waiting;
static long started_before_woken = -1;

static void *waiter(void *arg)
{
    (void)arg;
    atomic_store(&waiting, 1);
    while (sem_wait(&go) != 0)
        ;
    started_before_woken = atomic_load(&started);
    return NULL;
}

static void *newcomer(void *arg)
{
    (void)arg;
    atomic_fetch_add(&started, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    long nnew = argc > 1 ? atol(argv[1]) : 10000;
    pthread_t w, *n = calloc((size_t)nnew, sizeof *n);
    if (!n || sem_init(&go, 0, 0) != 0 || pthread_create(&w, NULL, waiter, NULL) != 0)
        abort();
    /* Until the waiter has run and waits (it parks at once under corun). */
    while (!atomic_load(&waiting))
        sched_yield();
    for (int i = 0; i < 10; i++)
        sched_yield();
    for (long i = 0; i < nnew; i++)
        if (pthread_create(&n[i], NULL, newcomer, NULL) != 0)
            abort();
    long before_post = atomic_load(&started);
    sem_post(&go);
    pthread_join(w, NULL);
    for (long i = 0; i < nnew; i++)
        pthread_join(n[i], NULL);
    if (atomic_load(&started) != nnew)
        abort();
    printf("new threads started before the woken one ran: %ld of %ld (%ld before the post)\n",
           started_before_woken, nnew, before_post);
    return 0;
}
