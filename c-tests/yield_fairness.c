/*
 * Threads that compute in short turns (a little work, then sched_yield)
 * share the CPUs evenly natively: the kernel moves threads between CPUs
 * until their run queues are level, so each of N threads on 2 CPUs gets
 * about 2/N of them.
 *
 * Here the threads are made so that one kernel thread (a worker, under
 * corun) holds most of them: 24 are made, each reads its kernel thread
 * (/proc/thread-self), and once all have, every thread that is not on
 * main's kernel thread ends but for 3. Natively the kernel places threads
 * anew at every wake-up and this changes nothing; under corun the threads
 * on main's worker would take turns there, each getting a fraction of the
 * share of the 3 on the other worker, unless a worker hands ready
 * threads to a worker with fewer (src/sched/balance.rs).
 *
 * Then every remaining thread makes turns for RUN_MS: WORK steps of a
 * loop, then sched_yield, counting its turns. Output: how many threads
 * ran, and the ratio of the most turns any made to the fewest. Exit 1 if
 * a call failed.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define THREADS 24
#define KEEP_AWAY 3
#define RUN_MS 1500
#define WORK 20000UL

static char main_at[64];
static atomic_int looked, away_kept, started, stop;
static unsigned long turns[THREADS];
static int ran[THREADS];

static int where(char *buf, size_t n)
{
    ssize_t r = readlink("/proc/thread-self", buf, n - 1);
    if (r <= 0)
        return -1;
    buf[r] = 0;
    return 0;
}

static void *worker(void *arg)
{
    long k = (long)arg;
    char at[64];
    if (where(at, sizeof at) != 0)
        return (void *)1;
    atomic_fetch_add(&looked, 1);
    while (atomic_load(&looked) < THREADS)
        sched_yield();
    if (strcmp(at, main_at) != 0 && atomic_fetch_add(&away_kept, 1) >= KEEP_AWAY)
        return NULL;
    ran[k] = 1;
    atomic_fetch_add(&started, 1);
    unsigned long s = (unsigned long)k, n = 0;
    while (!atomic_load(&stop)) {
        for (unsigned long j = 0; j < WORK; j++)
            s = s * 31 + j;
        /* Keeps the loop's result: the compiler may not drop the work. */
        __asm__ volatile("" : "+r"(s));
        n++;
        sched_yield();
    }
    turns[k] = n;
    return NULL;
}

int main(void)
{
    if (where(main_at, sizeof main_at) != 0) {
        perror("readlink /proc/thread-self");
        return 1;
    }
    pthread_t t[THREADS];
    for (long k = 0; k < THREADS; k++) {
        int e = pthread_create(&t[k], NULL, worker, (void *)k);
        if (e != 0) {
            fprintf(stderr, "pthread_create: %s\n", strerror(e));
            return 1;
        }
    }
    /* Main sleeps while they run: it is no thread that computes. */
    struct timespec d = {RUN_MS / 1000, (RUN_MS % 1000) * 1000000L};
    nanosleep(&d, NULL);
    atomic_store(&stop, 1);
    int failed = 0;
    for (int k = 0; k < THREADS; k++) {
        void *r;
        if (pthread_join(t[k], &r) != 0 || r != NULL)
            failed = 1;
    }
    if (failed) {
        fprintf(stderr, "a thread failed\n");
        return 1;
    }
    unsigned long lo = 0, hi = 0;
    int n = 0;
    for (int k = 0; k < THREADS; k++) {
        if (!ran[k])
            continue;
        if (n == 0 || turns[k] < lo)
            lo = turns[k];
        if (turns[k] > hi)
            hi = turns[k];
        n++;
    }
    if (n == 0 || lo == 0) {
        printf("threads %d, a thread made no turn\n", n);
        return 0;
    }
    printf("threads %d, most/fewest turns %.2f (%lu/%lu)\n", n, (double)hi / (double)lo, hi, lo);
    return 0;
}
