/*
 * Threads that compute unevenly share the CPUs as natively: four threads,
 * short, long, short, long (spawned in that order), each computing a fixed
 * amount. With two workers, placement put both long ones on one worker,
 * and once the short ones ended the other worker idled while the long
 * ones took turns (1.8x the native wall time). Each long thread reads its
 * kernel thread (/proc/thread-self, what the kernel runs it on) at each
 * tenth of its work; natively, and under corun once the runtime moves one
 * of them to the idle worker (src/sched/shed.rs), they are on different
 * kernel threads at some of those.
 *
 * Then the same with each long thread holding a process-shared
 * error-checking mutex while it computes: glibc keeps such a mutex itself
 * and checks its owner against the kernel tid in the thread's descriptor,
 * so a thread that took one stays on its kernel thread, and its unlock
 * succeeds (a moved one got EPERM).
 *
 * Output: the checksum of every thread's work, whether the long ones ended
 * on different kernel threads, and the held mutexes' unlock results. Exit
 * 1 if a thread failed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECKS 10

/* The kernel thread running the caller (/proc/thread-self is resolved by
 * the kernel), or -1. */
static long kernel_thread(void)
{
    char buf[64];
    ssize_t n = readlink("/proc/thread-self", buf, sizeof buf - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *slash = strrchr(buf, '/');
    return slash ? atol(slash + 1) : -1;
}

struct job {
    long iters;
    pthread_mutex_t *held; /* locked around the work, or NULL */
    int unlocked;          /* pthread_mutex_unlock's result */
    unsigned long sum;
    long kthread[CHECKS]; /* the kernel thread at each tenth of the work */
};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *work(void *arg)
{
    struct job *j = arg;
    if (j->held && pthread_mutex_lock(j->held) != 0)
        return arg;
    unsigned long x = 1;
    for (int c = 0; c < CHECKS; c++) {
        for (long i = 0; i < j->iters / CHECKS; i++)
            x = x * 6364136223846793005ul + 1442695040888963407ul;
        j->kthread[c] = kernel_thread();
    }
    j->sum = x;
    if (j->held)
        j->unlocked = pthread_mutex_unlock(j->held);
    return NULL;
}

/* Four threads, short, long, short, long; the long ones lock `held[i]`
 * around their work when `held` is set. Returns 0, or 1 on a failure. */
static int round_of(long unit, pthread_mutex_t *held, const char *what)
{
    struct job jobs[4];
    pthread_t t[4];
    double t0 = now();
    for (int i = 0; i < 4; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].iters = i % 2 ? 10 * unit : unit;
        jobs[i].held = held && i % 2 ? &held[i / 2] : NULL;
        if (pthread_create(&t[i], NULL, work, &jobs[i]) != 0) {
            perror("pthread_create");
            return 1;
        }
    }
    unsigned long sum = 0;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        if (r != NULL) {
            fprintf(stderr, "thread %d could not lock its mutex\n", i);
            return 1;
        }
        sum += jobs[i].sum;
    }
    /* At some tenth of their work, the long threads were on different
     * kernel threads (natively at every one; under corun from the move on,
     * which a loaded machine may delay; at the end one may be alone and
     * the other moved next to it). */
    int apart = 0;
    for (int c = 0; c < CHECKS; c++) {
        if (jobs[1].kthread[c] < 0 || jobs[3].kthread[c] < 0) {
            fprintf(stderr, "no /proc/thread-self\n");
            return 1;
        }
        apart += jobs[1].kthread[c] != jobs[3].kthread[c];
    }
    printf("%s: checksum %lx\n", what, sum);
    if (held)
        printf("%s: unlock of the held mutexes: %d %d\n", what, jobs[1].unlocked, jobs[3].unlocked);
    else
        printf("%s: long threads on different kernel threads: %s\n", what, apart ? "yes" : "no");
    fprintf(stderr, "%s: wall %.2f s, the long threads apart at %d of %d checks\n", what, now() - t0, apart, CHECKS);
    return 0;
}

int main(int argc, char **argv)
{
    long unit = argc > 1 ? atol(argv[1]) : 20000000;
    if (round_of(unit, NULL, "free"))
        return 1;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_t held[2];
    for (int i = 0; i < 2; i++)
        pthread_mutex_init(&held[i], &a);
    return round_of(unit, held, "holding a process-shared mutex");
}
