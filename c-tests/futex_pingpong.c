/*
 * futex_pingpong - two threads hand a turn back and forth ROUNDS times
 * through syscall(SYS_futex) (FUTEX_WAIT_PRIVATE / FUTEX_WAKE_PRIVATE on
 * one word each), the way GLib's bit locks, libstdc++'s atomic waits and
 * Rust std's Mutex wait. Prints the rounds done (the same natively and
 * under corun) and, on stderr, the run's wall time in ms.
 *
 * Under corun with one worker both threads are coroutines of one kernel
 * thread: a futex wait parks its coroutine, and the other runs at once.
 * corun's check of the word before a park was once a FUTEX_WAIT with a
 * deadline already past: it armed a timer and left the thread off its CPU
 * until that fired, 150-300 us per wait on this machine (12 s for what
 * takes 0.36 s natively), while the thread's CPU time hardly moved.
 *
 * usage: futex_pingpong ROUNDS
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

static atomic_uint turn; /* 0: ping's turn, 1: pong's */
static long rounds;
static long done[2];

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
        done[me]++;
        atomic_store(&turn, 1 - me);
        futex(&turn, FUTEX_WAKE_PRIVATE, 1);
    }
    return NULL;
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
    double t0 = now_ms();
    pthread_t a, b;
    pthread_create(&a, NULL, player, (void *)0L);
    pthread_create(&b, NULL, player, (void *)1L);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    double ms = now_ms() - t0;
    printf("%ld rounds each way: %s\n", rounds, done[0] == rounds && done[1] == rounds ? "all done" : "MISSING");
    fprintf(stderr, "%.0f ms\n", ms);
    return 0;
}
