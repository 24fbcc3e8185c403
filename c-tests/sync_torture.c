/*
 * sync_torture - pthread synchronisation under load, a plain pthread
 * program (no corun header). Each part prints one line of results that
 * must be identical natively and under corun; any wrong result is a
 * "FAIL" line and exit status 1.
 *
 *   mutex     1,000 threads x 10,000 increments of a mutex-guarded counter
 *   kinds     recursive, error-checking, trylock, timedlock semantics
 *   queue     bounded producer/consumer queue on two condition variables
 *   condtime  timed waits on REALTIME and MONOTONIC condition variables
 *   rwlock    readers check an invariant writers keep under the write lock
 *   barrier   100 threads x 50 rounds; one serial thread per round
 *   once      pthread_once from 1,000 threads; the routine runs once
 *   sem       a semaphore of 4 bounds 200 threads; trywait/timedwait
 *   native    a mutex and condition variable shared with a native thread
 *             (a SIGEV_THREAD timer's thread, which glibc starts itself)
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static double now_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct timespec abs_in(clockid_t c, long ms)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

static void start_all(pthread_t *t, int n, void *(*f)(void *))
{
    for (long i = 0; i < n; i++) {
        int r = pthread_create(&t[i], NULL, f, (void *)i);
        if (r) {
            printf("FAIL pthread_create: %s\n", strerror(r));
            exit(1);
        }
    }
}

static void join_all(pthread_t *t, int n)
{
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

/* ---- mutex ---- */
#define MUTEX_THREADS 1000
#define MUTEX_ITERS 10000
static pthread_mutex_t counter_mu = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *mutex_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < MUTEX_ITERS; i++) {
        pthread_mutex_lock(&counter_mu);
        counter++;
        pthread_mutex_unlock(&counter_mu);
    }
    return NULL;
}

static void part_mutex(void)
{
    static pthread_t t[MUTEX_THREADS];
    start_all(t, MUTEX_THREADS, mutex_worker);
    join_all(t, MUTEX_THREADS);
    CHECK(counter == (long)MUTEX_THREADS * MUTEX_ITERS, "counter %ld", counter);
    printf("mutex: %d threads x %d increments = %ld\n", MUTEX_THREADS, MUTEX_ITERS, counter);
}

/* ---- kinds ---- */
static pthread_mutex_t rec_mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t err_mu = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static int other_result[4];

static void *kinds_other(void *arg)
{
    (void)arg;
    other_result[0] = pthread_mutex_unlock(&err_mu);  /* not the owner: EPERM */
    other_result[1] = pthread_mutex_trylock(&rec_mu); /* held elsewhere: EBUSY */
    struct timespec ts = abs_in(CLOCK_REALTIME, 50);
    double t0 = now_s(CLOCK_MONOTONIC);
    other_result[2] = pthread_mutex_timedlock(&held_mu, &ts); /* ETIMEDOUT */
    other_result[3] = now_s(CLOCK_MONOTONIC) - t0 >= 0.045;
    return NULL;
}

static void part_kinds(void)
{
    CHECK(pthread_mutex_lock(&rec_mu) == 0, "recursive lock 1");
    CHECK(pthread_mutex_lock(&rec_mu) == 0, "recursive lock 2");
    CHECK(pthread_mutex_trylock(&rec_mu) == 0, "recursive trylock");
    CHECK(pthread_mutex_lock(&err_mu) == 0, "errorcheck lock");
    CHECK(pthread_mutex_lock(&err_mu) == EDEADLK, "errorcheck relock");
    CHECK(pthread_mutex_lock(&held_mu) == 0, "plain lock");
    CHECK(pthread_mutex_trylock(&held_mu) == EBUSY, "plain trylock");
    pthread_t t;
    pthread_create(&t, NULL, kinds_other, NULL);
    pthread_join(t, NULL);
    CHECK(other_result[0] == EPERM, "unlock by non-owner: %d", other_result[0]);
    CHECK(other_result[1] == EBUSY, "trylock of held recursive: %d", other_result[1]);
    CHECK(other_result[2] == ETIMEDOUT, "timedlock: %d", other_result[2]);
    CHECK(other_result[3], "timedlock returned early");
    for (int i = 0; i < 3; i++)
        CHECK(pthread_mutex_unlock(&rec_mu) == 0, "recursive unlock %d", i);
    CHECK(pthread_mutex_unlock(&rec_mu) == EPERM, "recursive unlock once too often");
    CHECK(pthread_mutex_unlock(&err_mu) == 0, "errorcheck unlock");
    CHECK(pthread_mutex_unlock(&err_mu) == EPERM, "errorcheck unlock twice");
    CHECK(pthread_mutex_unlock(&held_mu) == 0, "plain unlock");
    printf("kinds: recursive, errorcheck, trylock, timedlock as specified\n");
}

/* ---- bounded queue ---- */
#define QCAP 16
#define PRODUCERS 8
#define CONSUMERS 8
#define ITEMS 20000
static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t q_not_empty = PTHREAD_COND_INITIALIZER;
static long q_buf[QCAP];
static int q_head, q_len, q_producers_left = PRODUCERS;
static long q_sum, q_count;

static void *producer(void *arg)
{
    long id = (long)arg;
    for (long i = 0; i < ITEMS; i++) {
        pthread_mutex_lock(&q_mu);
        while (q_len == QCAP)
            pthread_cond_wait(&q_not_full, &q_mu);
        q_buf[(q_head + q_len) % QCAP] = id * ITEMS + i + 1;
        q_len++;
        pthread_cond_signal(&q_not_empty);
        pthread_mutex_unlock(&q_mu);
    }
    pthread_mutex_lock(&q_mu);
    if (--q_producers_left == 0)
        pthread_cond_broadcast(&q_not_empty);
    pthread_mutex_unlock(&q_mu);
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&q_mu);
        while (q_len == 0 && q_producers_left > 0)
            pthread_cond_wait(&q_not_empty, &q_mu);
        if (q_len == 0) {
            pthread_mutex_unlock(&q_mu);
            return NULL;
        }
        long v = q_buf[q_head];
        q_head = (q_head + 1) % QCAP;
        q_len--;
        q_sum += v;
        q_count++;
        pthread_cond_signal(&q_not_full);
        pthread_mutex_unlock(&q_mu);
    }
}

static void part_queue(void)
{
    pthread_t p[PRODUCERS], c[CONSUMERS];
    start_all(c, CONSUMERS, consumer);
    start_all(p, PRODUCERS, producer);
    join_all(p, PRODUCERS);
    join_all(c, CONSUMERS);
    long n = (long)PRODUCERS * ITEMS;
    CHECK(q_count == n, "consumed %ld of %ld", q_count, n);
    CHECK(q_sum == n * (n + 1) / 2, "sum %ld", q_sum);
    printf("queue: %d producers, %d consumers, %ld items, sum %ld\n", PRODUCERS, CONSUMERS, q_count, q_sum);
}

/* ---- condition variable timeouts ---- */
static void part_condtime(void)
{
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c_real = PTHREAD_COND_INITIALIZER, c_mono;
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&c_mono, &a);
    pthread_mutex_lock(&mu);
    double t0 = now_s(CLOCK_MONOTONIC);
    struct timespec ts = abs_in(CLOCK_REALTIME, 30);
    int r1 = pthread_cond_timedwait(&c_real, &mu, &ts);
    double t1 = now_s(CLOCK_MONOTONIC);
    ts = abs_in(CLOCK_MONOTONIC, 30);
    int r2 = pthread_cond_timedwait(&c_mono, &mu, &ts);
    double t2 = now_s(CLOCK_MONOTONIC);
    ts = abs_in(CLOCK_MONOTONIC, 30);
    int r3 = pthread_cond_clockwait(&c_real, &mu, CLOCK_MONOTONIC, &ts);
    double t3 = now_s(CLOCK_MONOTONIC);
    /* the mutex is held again after each timeout */
    CHECK(pthread_mutex_trylock(&mu) == EBUSY, "mutex not reacquired after timedwait");
    pthread_mutex_unlock(&mu);
    CHECK(r1 == ETIMEDOUT && t1 - t0 >= 0.025, "realtime timedwait %d after %.3f s", r1, t1 - t0);
    CHECK(r2 == ETIMEDOUT && t2 - t1 >= 0.025, "monotonic timedwait %d after %.3f s", r2, t2 - t1);
    CHECK(r3 == ETIMEDOUT && t3 - t2 >= 0.025, "clockwait %d after %.3f s", r3, t3 - t2);
    pthread_cond_destroy(&c_mono);
    printf("condtime: REALTIME, MONOTONIC and clockwait timeouts\n");
}

/* ---- rwlock ---- */
#define READERS 50
#define WRITERS 10
#define RW_ITERS 2000
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static long rw_a, rw_b;
static atomic_long rw_reads, rw_bad;

static void *rw_reader(void *arg)
{
    (void)arg;
    for (int i = 0; i < RW_ITERS; i++) {
        pthread_rwlock_rdlock(&rw);
        if (rw_a != rw_b)
            atomic_fetch_add(&rw_bad, 1);
        atomic_fetch_add(&rw_reads, 1);
        pthread_rwlock_unlock(&rw);
        if (i % 100 == 0)
            sched_yield();
    }
    return NULL;
}

static void *rw_writer(void *arg)
{
    (void)arg;
    for (int i = 0; i < RW_ITERS; i++) {
        pthread_rwlock_wrlock(&rw);
        rw_a++;
        if (i % 50 == 0)
            usleep(10); /* a writer parked while holding the lock */
        rw_b++;
        pthread_rwlock_unlock(&rw);
    }
    return NULL;
}

static void part_rwlock(void)
{
    pthread_t r[READERS], w[WRITERS];
    start_all(r, READERS, rw_reader);
    start_all(w, WRITERS, rw_writer);
    join_all(r, READERS);
    join_all(w, WRITERS);
    CHECK(rw_a == (long)WRITERS * RW_ITERS && rw_b == rw_a, "a=%ld b=%ld", rw_a, rw_b);
    CHECK(atomic_load(&rw_bad) == 0, "%ld torn reads", atomic_load(&rw_bad));
    pthread_rwlock_wrlock(&rw);
    CHECK(pthread_rwlock_wrlock(&rw) == EDEADLK, "second wrlock by the writer");
    CHECK(pthread_rwlock_tryrdlock(&rw) == EBUSY, "tryrdlock while written");
    pthread_rwlock_unlock(&rw);
    CHECK(pthread_rwlock_tryrdlock(&rw) == 0, "tryrdlock");
    CHECK(pthread_rwlock_trywrlock(&rw) == EBUSY, "trywrlock while read");
    struct timespec ts = abs_in(CLOCK_REALTIME, 20);
    CHECK(pthread_rwlock_timedwrlock(&rw, &ts) == ETIMEDOUT, "timedwrlock while read");
    pthread_rwlock_unlock(&rw);
    printf("rwlock: %d readers x %d reads, %d writers: a = b = %ld, no torn read\n", READERS, RW_ITERS,
           WRITERS, rw_a);
}

/* ---- barrier ---- */
#define BAR_THREADS 100
#define BAR_ROUNDS 50
static pthread_barrier_t bar;
static atomic_int bar_arrived[BAR_ROUNDS];
static atomic_int bar_serial[BAR_ROUNDS];
static atomic_int bar_bad;

static void *bar_worker(void *arg)
{
    (void)arg;
    for (int r = 0; r < BAR_ROUNDS; r++) {
        atomic_fetch_add(&bar_arrived[r], 1);
        int s = pthread_barrier_wait(&bar);
        if (s == PTHREAD_BARRIER_SERIAL_THREAD)
            atomic_fetch_add(&bar_serial[r], 1);
        else if (s != 0)
            atomic_fetch_add(&bar_bad, 1);
        /* everyone arrived before anyone left */
        if (atomic_load(&bar_arrived[r]) != BAR_THREADS)
            atomic_fetch_add(&bar_bad, 1);
    }
    return NULL;
}

static void part_barrier(void)
{
    pthread_t t[BAR_THREADS];
    pthread_barrier_init(&bar, NULL, BAR_THREADS);
    start_all(t, BAR_THREADS, bar_worker);
    join_all(t, BAR_THREADS);
    int serial_ok = 1;
    for (int r = 0; r < BAR_ROUNDS; r++)
        serial_ok &= atomic_load(&bar_serial[r]) == 1;
    CHECK(serial_ok, "not exactly one serial thread per round");
    CHECK(atomic_load(&bar_bad) == 0, "%d early departures", atomic_load(&bar_bad));
    CHECK(pthread_barrier_destroy(&bar) == 0, "barrier destroy");
    printf("barrier: %d threads x %d rounds, one serial thread per round\n", BAR_THREADS, BAR_ROUNDS);
}

/* ---- once ---- */
#define ONCE_THREADS 1000
static pthread_once_t once = PTHREAD_ONCE_INIT;
static atomic_int once_runs, once_done, once_early;

static void once_init(void)
{
    atomic_fetch_add(&once_runs, 1);
    usleep(20000); /* the others must wait for it */
    atomic_store(&once_done, 1);
}

static void *once_worker(void *arg)
{
    (void)arg;
    pthread_once(&once, once_init);
    if (!atomic_load(&once_done))
        atomic_fetch_add(&once_early, 1);
    return NULL;
}

static void part_once(void)
{
    static pthread_t t[ONCE_THREADS];
    start_all(t, ONCE_THREADS, once_worker);
    join_all(t, ONCE_THREADS);
    CHECK(atomic_load(&once_runs) == 1, "init ran %d times", atomic_load(&once_runs));
    CHECK(atomic_load(&once_early) == 0, "%d threads returned before init finished", atomic_load(&once_early));
    printf("once: %d threads, init ran %d time(s)\n", ONCE_THREADS, atomic_load(&once_runs));
}

/* ---- semaphores ---- */
#define SEM_THREADS 200
#define SEM_SLOTS 4
static sem_t sem;
static atomic_int sem_inside, sem_peak, sem_total;

static void *sem_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5; i++) {
        while (sem_wait(&sem) != 0)
            ;
        int in = atomic_fetch_add(&sem_inside, 1) + 1;
        int p = atomic_load(&sem_peak);
        while (in > p && !atomic_compare_exchange_weak(&sem_peak, &p, in))
            ;
        usleep(100);
        atomic_fetch_sub(&sem_inside, 1);
        atomic_fetch_add(&sem_total, 1);
        sem_post(&sem);
    }
    return NULL;
}

static void part_sem(void)
{
    pthread_t t[SEM_THREADS];
    sem_init(&sem, 0, SEM_SLOTS);
    start_all(t, SEM_THREADS, sem_worker);
    join_all(t, SEM_THREADS);
    CHECK(atomic_load(&sem_peak) <= SEM_SLOTS, "%d inside at once", atomic_load(&sem_peak));
    CHECK(atomic_load(&sem_total) == SEM_THREADS * 5, "total %d", atomic_load(&sem_total));
    int v = -1;
    sem_getvalue(&sem, &v);
    CHECK(v == SEM_SLOTS, "value %d at the end", v);
    sem_t z;
    sem_init(&z, 0, 0);
    errno = 0;
    CHECK(sem_trywait(&z) == -1 && errno == EAGAIN, "trywait on 0: errno %d", errno);
    struct timespec ts = abs_in(CLOCK_REALTIME, 20);
    errno = 0;
    CHECK(sem_timedwait(&z, &ts) == -1 && errno == ETIMEDOUT, "timedwait on 0: errno %d", errno);
    sem_post(&z);
    CHECK(sem_trywait(&z) == 0, "trywait after post");
    sem_destroy(&z);
    sem_destroy(&sem);
    printf("sem: %d threads through %d slots, at most %d inside, value back to %d\n", SEM_THREADS,
           SEM_SLOTS, SEM_SLOTS, v);
}

/* ---- a native thread shares a mutex and a condition variable ---- */
static pthread_mutex_t nat_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t nat_cv = PTHREAD_COND_INITIALIZER;
static int nat_flag;
static atomic_int nat_entered;

static void nat_notify(union sigval v)
{
    (void)v;
    atomic_store(&nat_entered, 1);
    pthread_mutex_lock(&nat_mu); /* held by main: this thread must sleep */
    nat_flag = 1;
    pthread_cond_signal(&nat_cv);
    pthread_mutex_unlock(&nat_mu);
}

static void part_native(void)
{
    timer_t tm;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD;
    sev.sigev_notify_function = nat_notify;
    if (timer_create(CLOCK_MONOTONIC, &sev, &tm) != 0) {
        printf("FAIL timer_create: %s\n", strerror(errno));
        failures++;
        return;
    }
    pthread_mutex_lock(&nat_mu);
    struct itimerspec its = {.it_value = {.tv_sec = 0, .tv_nsec = 20000000}};
    timer_settime(tm, 0, &its, NULL);
    while (!atomic_load(&nat_entered))
        usleep(1000);
    usleep(20000); /* the native thread now waits for the mutex */
    while (!nat_flag)
        pthread_cond_wait(&nat_cv, &nat_mu);
    pthread_mutex_unlock(&nat_mu);
    timer_delete(tm);
    printf("native: a native thread waited for a mutex held here, then signalled the condition\n");
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
#define PART(name)                                                                                 \
    if (!only || strcmp(only, #name) == 0)                                                         \
        part_##name();
    PART(mutex)
    PART(kinds)
    PART(queue)
    PART(condtime)
    PART(rwlock)
    PART(barrier)
    PART(once)
    PART(sem)
    PART(native)
    if (failures) {
        printf("sync_torture: %d failure(s)\n", failures);
        return 1;
    }
    printf("sync_torture: all parts passed\n");
    return 0;
}
