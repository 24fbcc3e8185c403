/*
 * thread_nice.c - a thread's nice value and scheduling policy are its
 * own (Linux: per thread), as a background thread that lowers its own
 * priority expects: a thread's setpriority(PRIO_PROCESS, 0, ...) and
 * sched_setscheduler(0, SCHED_BATCH) change only that thread, read back
 * in it and from another thread by its tid, are inherited by a thread it
 * makes, and leave main and threads main makes as they were. Under corun
 * the values are kept per thread (src/hooks/pthread/sched_attr.rs); before,
 * the call reniced the worker, and every thread that ran there.
 * Nice values are printed relative to main's at the start, so the output
 * is the same whatever nice the test runs under.
 * scripts/tests/thread_nice.sh requires the same lines natively and under
 * corun.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static int base;
static pid_t tid_a;
static int a_ready, a_quit;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;

static int nice_of(pid_t who)
{
    errno = 0;
    int n = getpriority(PRIO_PROCESS, (id_t)who);
    return errno ? 1000 + errno : n - base;
}

static const char *policy_name(int p)
{
    return p == SCHED_OTHER ? "OTHER" : p == SCHED_BATCH ? "BATCH" : p == SCHED_IDLE ? "IDLE" : "other";
}

static void *child_of_a(void *arg)
{
    (void)arg;
    printf("thread made by A: nice %+d, policy %s\n", nice_of(0), policy_name(sched_getscheduler(0)));
    return NULL;
}

static void *thread_a(void *arg)
{
    (void)arg;
    int target = base + 5 > 19 ? 19 : base + 5;
    printf("A: setpriority(0, main+5): %d\n", setpriority(PRIO_PROCESS, 0, target));
    printf("A: own nice %+d\n", nice_of(0));
    struct sched_param sp = {0};
    printf("A: sched_setscheduler(0, BATCH): %d\n", sched_setscheduler(0, SCHED_BATCH, &sp));
    printf("A: own policy %s\n", policy_name(sched_getscheduler(0)));
    pthread_t t;
    pthread_create(&t, NULL, child_of_a, NULL);
    pthread_join(t, NULL);
    int r = setpriority(PRIO_PROCESS, 0, 25);
    printf("A: setpriority(0, 25) (clamped): %d, nice %d\n", r, nice_of(0) + base);
    printf("A: setpriority(0, main+5) again: %d\n", setpriority(PRIO_PROCESS, 0, target));
    pthread_mutex_lock(&m);
    tid_a = (pid_t)syscall(SYS_gettid);
    a_ready = 1;
    pthread_cond_broadcast(&c);
    while (!a_quit)
        pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    return NULL;
}

static void *thread_b(void *arg)
{
    (void)arg;
    printf("thread made by main after A's calls: nice %+d, policy %s\n", nice_of(0),
           policy_name(sched_getscheduler(0)));
    return NULL;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    base = getpriority(PRIO_PROCESS, 0);
    pthread_t a, b;
    pthread_create(&a, NULL, thread_a, NULL);
    pthread_mutex_lock(&m);
    while (!a_ready)
        pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    printf("main: A's nice by its tid %+d, policy %s\n", nice_of(tid_a), policy_name(sched_getscheduler(tid_a)));
    printf("main: own nice %+d, policy %s\n", nice_of(0), policy_name(sched_getscheduler(0)));
    pthread_create(&b, NULL, thread_b, NULL);
    pthread_join(b, NULL);
    pthread_mutex_lock(&m);
    a_quit = 1;
    pthread_cond_broadcast(&c);
    pthread_mutex_unlock(&m);
    pthread_join(a, NULL);
    printf("main: own nice at the end %+d\n", nice_of(0));
    return 0;
}
