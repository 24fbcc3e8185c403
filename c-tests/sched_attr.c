/*
 * sched_attr.c - syscall(SYS_sched_getattr/SYS_sched_setattr) on
 * syscall(SYS_gettid), as GLib's thread creation does (every GThread,
 * GThreadPool and GTask worker copies its creator's attributes into
 * itself): under corun a thread's tid is its own (hooks/pthread/tid.rs),
 * which the kernel did not know, so the new thread's setattr failed with
 * ESRCH and GLib printed "Failed to set scheduler settings" (fatal in its
 * test suites). Checks: getattr of a thread's own tid, setattr of those
 * attributes in a new thread, getattr of another live thread's tid,
 * SCHED_BATCH accepted, the tid of a thread that ended (ESRCH), a size
 * too small (EINVAL). Prints one line per fact; scripts/tests/sched_attr.sh
 * requires the same lines natively and under corun.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
};

static struct attr mine;
static pid_t tids[2];
static volatile int quit;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;

static const char *err(long r)
{
    if (r == 0)
        return "0";
    return errno == ESRCH ? "ESRCH" : errno == EINVAL ? "EINVAL" : errno == EPERM ? "EPERM" : "other";
}

static void *copies_attrs(void *arg)
{
    long i = (long)arg;
    pid_t me = (pid_t)syscall(SYS_gettid);
    long r = syscall(SYS_sched_setattr, me, &mine, 0);
    printf("thread %ld: setattr of its creator's attributes on its own tid: %s\n", i, err(r));
    pthread_mutex_lock(&m);
    tids[i] = me;
    pthread_cond_broadcast(&c);
    while (!quit)
        pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    pthread_t t[2];
    /* A thread that reads its own attributes, as GLib's creator does. */
    pthread_create(&t[0], NULL, copies_attrs, (void *)0L);
    pthread_mutex_lock(&m);
    while (!tids[0])
        pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    long r = syscall(SYS_sched_getattr, tids[0], &mine, sizeof mine, 0);
    printf("getattr of another thread's tid: %s, policy %u nice %d\n", err(r), mine.policy, mine.nice);
    r = syscall(SYS_sched_getattr, (pid_t)syscall(SYS_gettid), &mine, sizeof mine, 0);
    printf("getattr of main's own tid: %s, policy %u\n", err(r), mine.policy);
    pthread_create(&t[1], NULL, copies_attrs, (void *)1L);
    pthread_mutex_lock(&m);
    while (!tids[1])
        pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);

    struct attr batch = mine;
    batch.policy = SCHED_BATCH;
    batch.size = sizeof batch;
    printf("setattr SCHED_BATCH on another thread: %s\n", err(syscall(SYS_sched_setattr, tids[1], &batch, 0)));
    struct attr got;
    memset(&got, 0, sizeof got);
    r = syscall(SYS_sched_getattr, tids[1], &got, 8, 0);
    printf("getattr with a size too small: %s\n", err(r));

    pthread_mutex_lock(&m);
    quit = 1;
    pthread_cond_broadcast(&c);
    pthread_mutex_unlock(&m);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    usleep(20000); /* the kernel reaps ended threads' tids */
    r = syscall(SYS_sched_getattr, tids[0], &got, sizeof got, 0);
    printf("getattr of an ended thread's tid: %s\n", err(r));
    r = syscall(SYS_sched_setattr, tids[0], &mine, 0);
    printf("setattr of an ended thread's tid: %s\n", err(r));
    return 0;
}
