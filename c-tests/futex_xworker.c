/*
 * futex_xworker - two threads hand a turn back and forth ROUNDS times
 * through syscall(SYS_futex) (FUTEX_WAIT_PRIVATE / FUTEX_WAKE_PRIVATE on
 * one word), as c-tests/futex_pingpong.c does, and report what a test of
 * hand-offs *between* kernel threads needs: whether the two players ran
 * on two kernel threads (under corun with 2 workers: on two workers, so
 * every wake-up crosses workers), and the process's CPU time.
 *
 * stdout (the same natively and under corun when the players are on two
 * kernel threads):  "ROUNDS rounds each way: all done, 2 kernel threads"
 * stderr:           "WALL ms wall, CPU ms cpu"
 *
 * The kernel thread is read from /proc/thread-self (resolved by the
 * kernel: under corun gettid() gives each thread an id of its own), once
 * the first wait is over, and checked again at the end.
 *
 * usage: futex_xworker ROUNDS
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kernel_tid.h"

static atomic_uint turn; /* 0: ping's turn, 1: pong's */
static long rounds;
static long done[2];
static long kthread[2];
static long moved[2];

static long futex(atomic_uint *w, int op, unsigned val)
{
    return syscall(SYS_futex, w, op, val, NULL, NULL, 0);
}

static void *player(void *arg)
{
    unsigned me = (unsigned)(long)arg;
    for (long r = 0; r < rounds; r++) {
        unsigned t;
        while ((t = atomic_load(&turn)) != me)
            if (futex(&turn, FUTEX_WAIT_PRIVATE, t) != 0 && errno != EAGAIN && errno != EINTR) {
                perror("futex wait");
                exit(1);
            }
        if (r == 0)
            kthread[me] = kernel_tid();
        done[me]++;
        atomic_store(&turn, 1 - me);
        futex(&turn, FUTEX_WAKE_PRIVATE, 1);
    }
    moved[me] = kernel_tid() != kthread[me];
    return NULL;
}

static double ms(struct timeval tv)
{
    return tv.tv_sec * 1e3 + tv.tv_usec / 1e3;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    rounds = argc > 1 ? atol(argv[1]) : 20000;
    if (rounds < 1)
        rounds = 1;
    double t0 = now_ms();
    pthread_t a, b;
    if (pthread_create(&a, NULL, player, (void *)0L) || pthread_create(&b, NULL, player, (void *)1L)) {
        fprintf(stderr, "futex_xworker: pthread_create failed\n");
        return 1;
    }
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    double wall = now_ms() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    int threads = kthread[0] == kthread[1] ? 1 : 2;
    printf("%ld rounds each way: %s, %d kernel thread%s%s\n", rounds,
           done[0] == rounds && done[1] == rounds ? "all done" : "MISSING", threads, threads == 1 ? "" : "s",
           moved[0] || moved[1] ? " (a player changed thread)" : "");
    fprintf(stderr, "%.0f ms wall, %.0f ms cpu\n", wall, ms(ru.ru_utime) + ms(ru.ru_stime));
    return 0;
}
