/* A handshake between two threads beside threads that compute: main and
 * a partner take turns through a mutex and condition variable (the way a
 * JVM's Thread.start waits for the new thread, and it for its parent)
 * while N threads compute without waiting. Natively the kernel runs a
 * thread that wakes before the ones that compute, so each turn costs
 * microseconds; under corun a woken thread must not wait for every
 * computing one to use a time slice.
 *
 * Usage: wake_beside_compute N_COMPUTE ROUNDS LIMIT_MS
 * Prints "ROUNDS rounds beside N computing threads in T ms" and exits 0
 * when every round was done within LIMIT_MS; it gives up at the limit
 * (exit 1) instead of running on. The computing threads check a stop flag
 * and are joined, so the process ends as natively. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn;         /* 1: the partner's turn, 0: main's */
static int rounds_left;  /* the partner's rounds; -1: stop now */
static int stop;
static volatile unsigned long sink;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void *compute(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
        for (int i = 0; i < 1000; i++)
            sink += (unsigned long)i;
    return NULL;
}

static void *partner(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (turn != 1 && rounds_left >= 0)
            pthread_cond_wait(&cv, &mu);
        if (rounds_left < 0)
            break;
        turn = 0;
        pthread_cond_signal(&cv);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s N_COMPUTE ROUNDS LIMIT_MS\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]), rounds = atoi(argv[2]);
    double limit = atof(argv[3]);
    if (n < 0 || n > 64 || rounds < 1)
        return 2;
    pthread_t th[64], p;
    for (int i = 0; i < n; i++)
        if (pthread_create(&th[i], NULL, compute, NULL) != 0)
            return 2;
    if (pthread_create(&p, NULL, partner, NULL) != 0)
        return 2;
    double t0 = now_ms();
    int done = 0;
    pthread_mutex_lock(&mu);
    while (done < rounds && now_ms() - t0 < limit) {
        turn = 1;
        pthread_cond_signal(&cv);
        while (turn != 0)
            pthread_cond_wait(&cv, &mu);
        done++;
    }
    double el = now_ms() - t0;
    rounds_left = -1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(p, NULL);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    printf("%d rounds beside %d computing threads in %.0f ms\n", done, n, el);
    return done == rounds && el < limit ? 0 : 1;
}
