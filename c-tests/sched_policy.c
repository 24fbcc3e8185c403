/* A thread lowers its own scheduling policy, as stunnel's cron thread does
 * (pthread_setschedparam(pthread_self(), SCHED_BATCH, {0})), and reads it
 * back; then the calls the kernel refuses for any thread.
 *
 * Natively SCHED_BATCH and SCHED_IDLE with priority 0 need no privilege:
 * each call returns 0 and pthread_getschedparam reports the policy set; a
 * non-zero priority with them, or an unknown policy, is EINVAL. Under
 * corun a coroutine thread's pthread_setschedparam and sched_setscheduler
 * answered EPERM to everything but SCHED_OTHER (stunnel logged
 * "pthread_getschedparam: Success (0)" at every start). The real-time
 * policies are left out: root gets them natively, corun answers EPERM. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

static const char *name(int policy)
{
    switch (policy) {
    case SCHED_OTHER: return "SCHED_OTHER";
    case SCHED_BATCH: return "SCHED_BATCH";
    case SCHED_IDLE: return "SCHED_IDLE";
    default: return "other";
    }
}

static void set_get(const char *what, int policy, int prio)
{
    struct sched_param p = {.sched_priority = prio};
    int r = pthread_setschedparam(pthread_self(), policy, &p);
    int now = -1;
    struct sched_param q = {.sched_priority = -1};
    int g = pthread_getschedparam(pthread_self(), &now, &q);
    printf("%s: set %s, get %d: %s priority %d\n", what, r ? strerror(r) : "0", g, name(now),
           q.sched_priority);
}

static void *lower(void *arg)
{
    (void)arg;
    set_get("pthread_setschedparam SCHED_BATCH 0", SCHED_BATCH, 0);
    set_get("pthread_setschedparam SCHED_BATCH 5", SCHED_BATCH, 5);
    set_get("pthread_setschedparam policy 42", 42, 0);
    set_get("pthread_setschedparam SCHED_OTHER 0", SCHED_OTHER, 0);
    struct sched_param p = {.sched_priority = 0};
    int r = sched_setscheduler(0, SCHED_BATCH, &p);
    printf("sched_setscheduler(0, SCHED_BATCH, 0): %d %s\n", r, r ? strerror(errno) : "");
    p.sched_priority = 3;
    r = sched_setscheduler(0, SCHED_IDLE, &p);
    printf("sched_setscheduler(0, SCHED_IDLE, 3): %d %s\n", r, r ? strerror(errno) : "");
    set_get("pthread_setschedparam SCHED_IDLE 0", SCHED_IDLE, 0);
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, lower, NULL);
    pthread_join(t, NULL);
    return 0;
}
