/* Timed waits on objects only glibc may take (process-shared and robust
 * mutexes, a process-shared rwlock and semaphore) that stay taken past the
 * deadline: each must give up with ETIMEDOUT once its deadline passed, on
 * the realtime clock (the timedlock/timedwait calls) as on the monotonic
 * one (the clock* calls), and at once for a deadline already past.
 *
 * A holder thread takes every object and keeps them until main is done;
 * main makes each timed call with a deadline 100 ms ahead, or 1 s behind,
 * and prints the result and whether the wait lasted about as asked.
 *
 * Under corun such a wait is glibc's try operation between naps
 * (pthread_sync::try_with_backoff); with a realtime deadline the "passed"
 * test compared the clock read before with a deadline converted after, so
 * it never passed: each call spun for ever (a CPU at 100%) instead of
 * returning ETIMEDOUT. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t pm, rm;
static pthread_rwlock_t rw;
static sem_t sem;
static atomic_int held, done;

static void *holder(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&pm);
    pthread_mutex_lock(&rm);
    pthread_rwlock_wrlock(&rw);
    atomic_store(&held, 1);
    while (!atomic_load(&done))
        usleep(2000);
    pthread_rwlock_unlock(&rw);
    pthread_mutex_unlock(&rm);
    pthread_mutex_unlock(&pm);
    return NULL;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* A deadline `ms` from now on `clk` (negative: in the past). */
static struct timespec at(clockid_t clk, long ms)
{
    struct timespec t;
    clock_gettime(clk, &t);
    long ns = t.tv_nsec + ms * 1000000L;
    t.tv_sec += ns / 1000000000L;
    t.tv_nsec = ns % 1000000000L;
    if (t.tv_nsec < 0) {
        t.tv_nsec += 1000000000L;
        t.tv_sec -= 1;
    }
    return t;
}

enum op { MUTEX, ROBUST, RDLOCK, WRLOCK, SEM };
static const char *op_name[] = {"pshared mutex", "robust mutex", "pshared rdlock",
                                "pshared wrlock", "pshared sem"};

static int call(enum op o, int clocked, clockid_t clk, const struct timespec *ts)
{
    switch (o) {
    case MUTEX:
        return clocked ? pthread_mutex_clocklock(&pm, clk, ts) : pthread_mutex_timedlock(&pm, ts);
    case ROBUST:
        return clocked ? pthread_mutex_clocklock(&rm, clk, ts) : pthread_mutex_timedlock(&rm, ts);
    case RDLOCK:
        return clocked ? pthread_rwlock_clockrdlock(&rw, clk, ts)
                       : pthread_rwlock_timedrdlock(&rw, ts);
    case WRLOCK:
        return clocked ? pthread_rwlock_clockwrlock(&rw, clk, ts)
                       : pthread_rwlock_timedwrlock(&rw, ts);
    case SEM: {
        int r = clocked ? sem_clockwait(&sem, clk, ts) : sem_timedwait(&sem, ts);
        return r == 0 ? 0 : errno;
    }
    }
    return -1;
}

int main(void)
{
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&pm, &ma);
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&rm, &ma);
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setpshared(&ra, PTHREAD_PROCESS_SHARED);
    pthread_rwlock_init(&rw, &ra);
    sem_init(&sem, 1, 0);

    pthread_t t;
    pthread_create(&t, NULL, holder, NULL);
    while (!atomic_load(&held))
        usleep(1000);

    static const struct {
        int clocked;
        clockid_t clk;
        const char *name;
    } how[] = {
        {0, CLOCK_REALTIME, "timed (realtime)"},
        {1, CLOCK_REALTIME, "clock realtime"},
        {1, CLOCK_MONOTONIC, "clock monotonic"},
    };
    for (int o = MUTEX; o <= SEM; o++) {
        for (unsigned h = 0; h < sizeof how / sizeof how[0]; h++) {
            for (int past = 0; past < 2; past++) {
                struct timespec ts = at(how[h].clk, past ? -1000 : 100);
                double t0 = now_ms();
                int r = call(o, how[h].clocked, how[h].clk, &ts);
                double waited = now_ms() - t0;
                int as_asked = past ? waited < 1000 : waited >= 99 && waited < 2100;
                printf("%s, %s, deadline %s: %s, waited as asked: %s\n", op_name[o], how[h].name,
                       past ? "past" : "+100 ms", r == ETIMEDOUT ? "ETIMEDOUT" : strerror(r),
                       as_asked ? "yes" : "no");
                fflush(stdout);
            }
        }
    }
    atomic_store(&done, 1);
    pthread_join(t, NULL);
    /* Free again: each is taken at once. */
    struct timespec ts = at(CLOCK_REALTIME, 100);
    int a = pthread_mutex_timedlock(&pm, &ts), b = pthread_mutex_timedlock(&rm, &ts);
    int c = pthread_rwlock_timedwrlock(&rw, &ts);
    sem_post(&sem);
    int d = sem_timedwait(&sem, &ts);
    printf("after the holder left: %d %d %d %d\n", a, b, c, d);
    return 0;
}
