/* A producer thread that computes hands items to 8 consumer threads that
 * spin taking one at a time (a compare-and-swap, no system call), as
 * crossbeam-deque's no_starvation test: it ends once every consumer has
 * taken something. Natively the kernel orders computing threads by the
 * CPU time each used, and slices differ, so which consumer runs just after
 * the producer changes. With preempted coroutines queued first in, first
 * out, the same consumer always followed the producer and took
 * the backlog: the others never got an item (on 1 and 2 workers).
 * Prints "all consumers served" or, after 10 s, which ones starved. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CONSUMERS 8

static atomic_long avail;
static atomic_long hits[CONSUMERS];
static atomic_int done;
static int producer_work = 100, consumer_work = 140;
static double limit_s = 10;

/* Takes one item at a time and works on it for longer than the producer
 * took to make it: a backlog builds up while the producer runs, and the
 * consumer that runs after it finds some left. */
static void *consumer(void *arg) {
    long i = (long)arg;
    volatile unsigned long sink = 0;
    while (!atomic_load(&done)) {
        long n = atomic_load(&avail);
        if (n > 0 && atomic_compare_exchange_weak(&avail, &n, n - 1)) {
            atomic_fetch_add(&hits[i], 1);
            for (int k = 0; k < consumer_work; k++)
                sink += k * n;
        }
    }
    return NULL;
}

static int all_served(void) {
    for (int i = 0; i < CONSUMERS; i++)
        if (atomic_load(&hits[i]) == 0)
            return 0;
    return 1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc > 2) {
        producer_work = atoi(argv[1]);
        consumer_work = atoi(argv[2]);
    }
    if (argc > 3)
        limit_s = atof(argv[3]);
    pthread_t t[CONSUMERS];
    for (long i = 0; i < CONSUMERS; i++)
        pthread_create(&t[i], NULL, consumer, (void *)i);
    double start = now_s();
    volatile unsigned long sink = 0;
    int served = 0;
    for (unsigned long round = 0;; round++) {
        /* Work between items, then one item; checks now and then. */
        for (int k = 0; k < producer_work; k++)
            sink += k * round;
        atomic_fetch_add(&avail, 1);
        if (round % 4096 == 0) {
            if ((served = all_served()))
                break;
            if (now_s() - start > limit_s)
                break;
        }
    }
    /* Which ones starved, read before they stop: one that takes its
     * first item after the limit (while they are joined) still starved. */
    long seen[CONSUMERS];
    served = 1;
    for (int i = 0; i < CONSUMERS; i++)
        if ((seen[i] = atomic_load(&hits[i])) == 0)
            served = 0;
    atomic_store(&done, 1);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(t[i], NULL);
    if (served) {
        printf("all consumers served\n");
        return 0;
    }
    printf("starved consumers:");
    for (int i = 0; i < CONSUMERS; i++)
        if (seen[i] == 0)
            printf(" %d", i);
    printf("\n");
    return 1;
}
