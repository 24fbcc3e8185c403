/*
 * An idle process wakes as seldom as natively, and wakes promptly when
 * work comes back.
 *
 * Phase 1 (idle): three threads wait on a condition variable and main
 * sleeps 2 s. Natively nothing runs meanwhile. The program sums the
 * context switches of all its kernel threads (/proc/self/task/N/status)
 * over the sleep and prints "idle switches N".
 *
 * Phase 2 (work comes back): a thread computes for 400 ms while main
 * sleeps 20 ms, then main prints how late its sleep returned ("late N
 * ms"). On one CPU the kernel would preempt the computing thread at its
 * tick; under corun (one worker) the preemption monitor does, once it
 * notices the run, so a monitor that stays asleep after the idle phase
 * shows as a late return near the 400 ms of the computation.
 *
 * Then the waiting threads are released and joined; exit 0 on success.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int released;

static void *waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!released)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static volatile unsigned long sink;

static void *compute(void *arg)
{
    (void)arg;
    long long end = now_ns() + 400000000LL;
    unsigned long s = 0;
    while (now_ns() < end)
        for (int i = 0; i < 1000; i++)
            s = s * 31 + (unsigned long)i;
    sink = s;
    return NULL;
}

/* Voluntary plus involuntary context switches of every thread. */
static long switches(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    long sum = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], line[128];
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        while (fgets(line, sizeof line, f)) {
            long n;
            if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1 ||
                sscanf(line, "nonvoluntary_ctxt_switches: %ld", &n) == 1)
                sum += n;
        }
        fclose(f);
    }
    closedir(d);
    return sum;
}

int main(void)
{
    pthread_t w[3], c;
    for (int i = 0; i < 3; i++)
        if (pthread_create(&w[i], NULL, waiter, NULL) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
    /* Let the waiters reach their wait and the runtime settle. */
    usleep(200000);
    long before = switches();
    sleep(2);
    long after = switches();
    if (before < 0 || after < 0) {
        fprintf(stderr, "cannot read /proc/self/task\n");
        return 1;
    }
    printf("idle switches %ld\n", after - before);

    if (pthread_create(&c, NULL, compute, NULL) != 0) {
        fprintf(stderr, "pthread_create failed\n");
        return 1;
    }
    /* Let the computing thread start. */
    sched_yield();
    long long t0 = now_ns();
    usleep(20000);
    printf("late %lld ms\n", (now_ns() - t0 - 20000000LL) / 1000000);
    pthread_join(c, NULL);

    pthread_mutex_lock(&mu);
    released = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < 3; i++)
        pthread_join(w[i], NULL);
    return 0;
}
