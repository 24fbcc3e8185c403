/*
 * Two threads that compute about a millisecond and then wait a moment, in
 * turn, run on different CPUs natively, whatever order they were made in.
 * Here they are made as heavy, light, heavy, light; with two workers,
 * placement homed both heavy ones on one worker in about 4 runs of 10,
 * and once the light ones ended the other worker idled while the heavy
 * ones took turns (1.7-2x the native wall time). Their runs are too
 * short for a slice to preempt them, so the thread that woke behind a run
 * waited for it, as a thread woken on a busy CPU would not have: the
 * kernel puts it on the idle one.
 *
 * Mode "sleep": each heavy thread sleeps 50 us between runs (a timer wakes
 * it). Mode "io": each waits for a byte on a pipe from a client process
 * (forked first) and answers it after its run (readiness wakes it).
 *
 * Each heavy thread reads its kernel thread (/proc/thread-self) and the
 * clock after each of its 400 runs. Output: over the second half of the
 * time both ran, at how many of their looks the other thread's latest
 * look named the same kernel thread, and each heavy thread's checksum.
 * Looks are matched by time, not by run number: one thread may end
 * several runs ahead of the other, and the one left alone may then run
 * anywhere (a count by run number read that as sharing: 34 of 200).
 * Exit 1 if a thread or the client failed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUNS 400
#define WORK 1000000UL

static char where[2][RUNS][64];
static long long stamp[2][RUNS];
static unsigned long sums[2];
static int io_mode;
static int req[2][2], rep[2][2];

static void *heavy(void *arg)
{
    long k = (long)arg;
    unsigned long s = 0;
    char c = 0;
    for (int i = 0; i < RUNS; i++) {
        if (io_mode && read(req[k][0], &c, 1) != 1)
            return (void *)1;
        for (unsigned long j = 0; j < WORK; j++)
            s = s * 31 + j;
        /* Keeps the loop's result: the compiler may not drop the work. */
        __asm__ volatile("" : "+r"(s));
        ssize_t n = readlink("/proc/thread-self", where[k][i], sizeof where[k][i] - 1);
        if (n <= 0)
            return (void *)1;
        where[k][i][n] = 0;
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        stamp[k][i] = t.tv_sec * 1000000000LL + t.tv_nsec;
        if (io_mode) {
            if (write(rep[k][1], &c, 1) != 1)
                return (void *)1;
        } else {
            usleep(50);
        }
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

/* The client process: one byte to each heavy thread, then both answers. */
static void client(void)
{
    char c = 'x';
    for (int i = 0; i < RUNS; i++) {
        for (int k = 0; k < 2; k++)
            if (write(req[k][1], &c, 1) != 1)
                _exit(1);
        for (int k = 0; k < 2; k++)
            if (read(rep[k][0], &c, 1) != 1)
                _exit(1);
    }
    _exit(0);
}

int main(int argc, char **argv)
{
    io_mode = argc > 1 && strcmp(argv[1], "io") == 0;
    pid_t child = -1;
    if (io_mode) {
        for (int k = 0; k < 2; k++)
            if (pipe(req[k]) != 0 || pipe(rep[k]) != 0) {
                perror("pipe");
                return 1;
            }
        child = fork();
        if (child < 0) {
            perror("fork");
            return 1;
        }
        if (child == 0)
            client();
    }
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
    if (io_mode) {
        int st;
        if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "the client failed\n");
            return 1;
        }
    }
    if (failed) {
        fprintf(stderr, "a heavy thread failed\n");
        return 1;
    }
    /* The time both ran: from the later first look to the earlier last. */
    long long from = stamp[0][0] > stamp[1][0] ? stamp[0][0] : stamp[1][0];
    long long to = stamp[0][RUNS - 1] < stamp[1][RUNS - 1] ? stamp[0][RUNS - 1] : stamp[1][RUNS - 1];
    long long mid = from + (to - from) / 2;
    int same = 0, looks = 0;
    for (int k = 0; k < 2; k++) {
        int o = 1 - k, j = -1;
        for (int i = 0; i < RUNS; i++) {
            if (stamp[k][i] < mid || stamp[k][i] > to)
                continue;
            while (j + 1 < RUNS && stamp[o][j + 1] <= stamp[k][i])
                j++;
            if (j < 0)
                continue;
            looks++;
            same += strcmp(where[k][i], where[o][j]) == 0;
        }
    }
    printf("same kernel thread at %d of %d late looks\n", same, looks);
    printf("checksums %lx %lx\n", sums[0], sums[1]);
    return 0;
}
