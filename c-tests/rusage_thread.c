// getrusage(RUSAGE_THREAD) counts the calling thread's CPU time only: a
// thread that waits while another computes 0.3 s sees its own time barely
// move. NOT FIXED: under corun it is the worker's, so on a shared worker
// the waiting thread's count grows by the other's 0.3 s
// (CLOCK_THREAD_CPUTIME_ID is the thread's own: sched/cpuclock.rs).
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

static pthread_barrier_t bar;

static double usage(void) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static double clock_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *idle(void *a) {
    (void)a;
    double u0 = usage(), c0 = clock_s();
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);
    printf("waiting thread: rusage grew > 0.1 s: %d, clock grew > 0.1 s: %d\n",
           usage() - u0 > 0.1, clock_s() - c0 > 0.1);
    return NULL;
}

static void *busy(void *a) {
    (void)a;
    pthread_barrier_wait(&bar);
    double c0 = clock_s();
    volatile unsigned long x = 0;
    while (clock_s() - c0 < 0.3)
        for (int k = 0; k < 100000; k++)
            x += k;
    printf("computing thread: rusage >= 0.25 s: %d\n", usage() >= 0.25);
    pthread_barrier_wait(&bar);
    return NULL;
}

int main(void) {
    pthread_barrier_init(&bar, NULL, 2);
    pthread_t a, b;
    pthread_create(&a, NULL, idle, NULL);
    pthread_create(&b, NULL, busy, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
