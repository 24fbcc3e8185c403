/*
 * spawn_spread - where two computing threads that main starts right after
 * the program's start, 3 ms apart, run: on two kernel threads (under
 * corun with 2 workers: two workers), as a thread pool's would (rayon's,
 * started by the first par_iter).
 *
 * main creates thread 1 at once, which waits at a barrier (a pool thread
 * waiting for work); main then computes for 3 ms and creates thread 2;
 * both threads and main meet at the barrier, the two threads compute
 * ~10 ms each and main joins them. Each thread reads its kernel thread
 * from /proc/thread-self (resolved by the kernel: under corun gettid()
 * gives each thread an id of its own) before and after its computing.
 *
 * Under corun, main's run since the start (the first create was made
 * within it, the second after 3 ms more) made its worker count as full at
 * the second pthread_create, which then went to the other worker, next to
 * thread 1: the two computing threads shared one worker for good (a
 * started coroutine never changed worker then) while main's worker idled.
 * Only the first run of main counts (later, main is the process's only
 * coroutine between rounds and its sleeps do not park), so one round per
 * process. K counts where each thread started: a thread preempted while
 * another task waits on its worker may then move to an idle worker
 * (src/sched/shed.rs; thread 2 does, to thread 1's, when thread 1 ends
 * and main wakes from its join next to thread 2).
 *
 * stdout: "2 threads on K kernel threads". Exit 1 on an error.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernel_tid.h"

static pthread_barrier_t start;
static volatile uint64_t sink;

struct seat {
    long before, after;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *pool_thread(void *arg)
{
    struct seat *s = arg;
    s->before = kernel_tid();
    pthread_barrier_wait(&start);
    uint64_t x = (uint64_t)(uintptr_t)arg;
    for (long k = 0; k < 20000000L; k++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    sink = x;
    s->after = kernel_tid();
    return NULL;
}

int main(void)
{
    struct seat seats[2] = {{-1, -1}, {-1, -1}};
    pthread_t t[2];
    if (pthread_barrier_init(&start, NULL, 3)) {
        fprintf(stderr, "spawn_spread: barrier init failed\n");
        return 1;
    }
    if (pthread_create(&t[0], NULL, pool_thread, &seats[0])) {
        fprintf(stderr, "spawn_spread: pthread_create failed\n");
        return 1;
    }
    uint64_t until = now_ns() + 3000000;
    uint64_t x = 1;
    while (now_ns() < until)
        for (int k = 0; k < 1000; k++)
            x = x * 6364136223846793005ull + 1;
    sink = x;
    if (pthread_create(&t[1], NULL, pool_thread, &seats[1])) {
        fprintf(stderr, "spawn_spread: pthread_create failed\n");
        return 1;
    }
    pthread_barrier_wait(&start);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    for (int i = 0; i < 2; i++)
        if (seats[i].before < 0 || seats[i].after < 0) {
            fprintf(stderr, "spawn_spread: thread %d has no kernel thread\n", i);
            return 1;
        }
    printf("2 threads on %d kernel threads\n", seats[0].before == seats[1].before ? 1 : 2);
    return 0;
}
