/*
 * thread_cpu_clock.c - each thread's CPU clock counts that thread only:
 * a thread that computes 300 ms sees about 300 ms on CLOCK_THREAD_CPUTIME_ID
 * while a thread that sleeps as long sees almost none, though both may
 * share a worker under corun; pthread_getcpuclockid gives a clock other
 * threads can read, clock_getres answers for it, and a joined thread's
 * clock is gone (EINVAL). Prints facts, not figures:
 * scripts/tests/thread_cpu_clock.sh requires the same lines natively and
 * under corun.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long ns_of(clockid_t c)
{
    struct timespec ts;
    if (clock_gettime(c, &ts) != 0)
        return -1;
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static long wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static volatile int go;
static long spin_cpu, sleep_cpu;

static void *spinner(void *arg)
{
    (void)arg;
    long c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
    /* Compute until 300 ms of this thread's CPU time have passed. */
    volatile unsigned long x = 0;
    while (ns_of(CLOCK_THREAD_CPUTIME_ID) - c0 < 300000000L)
        for (int i = 0; i < 10000; i++)
            x = x + 1;
    spin_cpu = ns_of(CLOCK_THREAD_CPUTIME_ID) - c0;
    return NULL;
}

static void *sleeper(void *arg)
{
    (void)arg;
    long c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
    long t0 = wall_ms();
    while (wall_ms() - t0 < 400)
        usleep(10000);
    sleep_cpu = ns_of(CLOCK_THREAD_CPUTIME_ID) - c0;
    return NULL;
}

static void *idle(void *arg)
{
    (void)arg;
    while (!go)
        usleep(1000);
    return NULL;
}

int main(void)
{
    pthread_t a, b, c;
    pthread_create(&a, NULL, spinner, NULL);
    pthread_create(&b, NULL, sleeper, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("the spinner's clock counted its 300 ms: %s\n", spin_cpu >= 300000000L && spin_cpu < 2000000000L ? "yes" : "NO");
    printf("the sleeper's clock counted under 50 ms: %s\n", sleep_cpu >= 0 && sleep_cpu < 50000000L ? "yes" : "NO");

    clockid_t clk;
    pthread_create(&c, NULL, idle, NULL);
    int r = pthread_getcpuclockid(c, &clk);
    printf("pthread_getcpuclockid of a thread: %s\n", r == 0 ? "ok" : strerror(r));
    printf("it is not CLOCK_THREAD_CPUTIME_ID: %s\n", clk != CLOCK_THREAD_CPUTIME_ID ? "yes" : "NO");
    long v1 = ns_of(clk);
    usleep(50000);
    long v2 = ns_of(clk);
    printf("another thread's clock reads and does not go back: %s\n", v1 >= 0 && v2 >= v1 ? "yes" : "NO");
    struct timespec res;
    printf("clock_getres on it: %s\n", clock_getres(clk, &res) == 0 ? "ok" : strerror(errno));
    clockid_t mine;
    r = pthread_getcpuclockid(pthread_self(), &mine);
    long m1 = ns_of(mine), m2;
    volatile unsigned long x = 0;
    for (long i = 0; i < 20000000; i++)
        x = x + 1;
    m2 = ns_of(mine);
    printf("main's own clock through pthread_getcpuclockid moves as it computes: %s\n", r == 0 && m2 > m1 ? "yes" : "NO");
    go = 1;
    pthread_join(c, NULL);
    /* Natively the join returns when the kernel clears the thread's tid,
     * a moment before it releases the thread: its clock may still read for
     * that moment (the clean-clone CI saw "still there" natively once).
     * Gone within a second is what is asked. */
    int gone = 0;
    for (int i = 0; i < 200 && !gone; i++) {
        errno = 0;
        gone = ns_of(clk) == -1 && errno == EINVAL;
        if (!gone)
            usleep(5000);
    }
    printf("a joined thread's clock: %s\n", gone ? "EINVAL" : "still there");
    return 0;
}
