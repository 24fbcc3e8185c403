/*
 * spawn_join_mix - threads created and joined in the patterns corun's
 * placement treats differently (docs/ARCHITECTURE.md §4), each thread run
 * exactly once with its own argument:
 *
 *   pairs    2,000 times: create one thread, join it at once (fork-join:
 *            the joiner may take the child back from another worker's
 *            queue before it ran, or keep it local)
 *   batches  100 times: create 16 threads, then join them in turn
 *   burst    create 2,000 threads in a row, then join them all (a backlog
 *            other workers steal half of)
 *   handoff  200 times: create a thread, wait on a semaphore it posts,
 *            then join it
 *
 * Each thread returns its argument times 3 and marks its slot; the program
 * prints, per pattern, how many threads ran, how many slots were marked
 * other than once, and whether every result was right. The same natively
 * and under corun.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXN 20000

static atomic_int marks[MAXN];
static sem_t ready;

static void *work(void *arg)
{
    long i = (long)arg;
    atomic_fetch_add(&marks[i], 1);
    return (void *)(i * 3);
}

static void *post_then_work(void *arg)
{
    sem_post(&ready);
    return work(arg);
}

static void create_or_die(pthread_t *t, void *(*f)(void *), long i)
{
    if (pthread_create(t, NULL, f, (void *)i) != 0) {
        perror("pthread_create");
        exit(1);
    }
}

static int join_check(pthread_t t, long i)
{
    void *r;
    if (pthread_join(t, &r) != 0) {
        perror("pthread_join");
        exit(1);
    }
    return (long)r == i * 3;
}

static void report(const char *name, long n, long good)
{
    long wrong_marks = 0;
    for (long i = 0; i < n; i++) {
        if (atomic_load(&marks[i]) != 1)
            wrong_marks++;
        atomic_store(&marks[i], 0);
    }
    printf("%s: %ld threads, %ld slots not marked exactly once, results %s\n", name, n, wrong_marks,
           good == n ? "all right" : "WRONG");
}

int main(void)
{
    long good = 0;
    for (long i = 0; i < 2000; i++) {
        pthread_t t;
        create_or_die(&t, work, i);
        good += join_check(t, i);
    }
    report("pairs", 2000, good);

    good = 0;
    for (long b = 0; b < 100; b++) {
        pthread_t ts[16];
        for (long k = 0; k < 16; k++)
            create_or_die(&ts[k], work, b * 16 + k);
        for (long k = 0; k < 16; k++)
            good += join_check(ts[k], b * 16 + k);
    }
    report("batches", 1600, good);

    static pthread_t burst[2000];
    good = 0;
    for (long i = 0; i < 2000; i++)
        create_or_die(&burst[i], work, i);
    for (long i = 0; i < 2000; i++)
        good += join_check(burst[i], i);
    report("burst", 2000, good);

    if (sem_init(&ready, 0, 0) != 0) {
        perror("sem_init");
        return 1;
    }
    good = 0;
    for (long i = 0; i < 200; i++) {
        pthread_t t;
        create_or_die(&t, post_then_work, i);
        while (sem_wait(&ready) != 0)
            ;
        good += join_check(t, i);
    }
    report("handoff", 200, good);
    return 0;
}
