/*
 * Two threads that compute about a millisecond and sleep 50 us in turn
 * run on different CPUs natively, whatever order they were made in. Here
 * they are made as heavy, light, heavy, light; with two workers,
 * placement homed both heavy ones on one worker in about 4 runs of 10,
 * and once the light ones ended the other worker idled while the heavy
 * ones took turns (1.5-1.7x the native wall time). Their runs are too
 * short for a slice to preempt them, so the thread that woke behind a run
 * waited for it, as a thread woken on a busy CPU would not have: the
 * kernel puts it on the idle one.
 *
 * Each heavy thread reads its kernel thread (/proc/thread-self) after
 * each of its 400 runs; output: in how many of the last 200 the two were
 * on the same kernel thread, and each heavy thread's checksum. Exit 1 if
 * a thread failed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RUNS 400
#define WORK 1000000UL

static char where[2][RUNS][64];
static unsigned long sums[2];

static void *heavy(void *arg)
{
    long k = (long)arg;
    unsigned long s = 0;
    for (int i = 0; i < RUNS; i++) {
        for (unsigned long j = 0; j < WORK; j++)
            s = s * 31 + j;
        /* Keeps the loop's result: the compiler may not drop the work. */
        __asm__ volatile("" : "+r"(s));
        ssize_t n = readlink("/proc/thread-self", where[k][i], sizeof where[k][i] - 1);
        if (n <= 0)
            return (void *)1;
        where[k][i][n] = 0;
        usleep(50);
    }
    sums[k] = s;
    return NULL;
}

static void *light(void *arg)
{
    (void)arg;
    usleep(1000);
    return NULL;
}

int main(void)
{
    pthread_t t[4];
    void *(*fn[4])(void *) = {heavy, light, heavy, light};
    long arg[4] = {0, 0, 1, 0};
    for (int i = 0; i < 4; i++)
        if (pthread_create(&t[i], NULL, fn[i], (void *)arg[i]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
    int failed = 0;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        failed |= r != NULL;
    }
    if (failed) {
        fprintf(stderr, "a thread could not read /proc/thread-self\n");
        return 1;
    }
    int same = 0;
    for (int i = RUNS / 2; i < RUNS; i++)
        same += strcmp(where[0][i], where[1][i]) == 0;
    printf("same kernel thread in %d of %d late runs\n", same, RUNS / 2);
    printf("checksums %lx %lx\n", sums[0], sums[1]);
    return 0;
}
