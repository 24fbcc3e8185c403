/*
 * co_sync - corun_mutex_t, corun_cond_t, corun_sem_t, corun_wg_t between
 * coroutines on all workers and pthreads (coroutines by default, kernel
 * threads under CORUN_THREADS=native). Prints "co_sync: ok".
 */
#include <errno.h>
#include <pthread.h>

#include <corun.h>

#include "co_check.h"

enum { N = 8, ITERS = 20000 };

static corun_mutex_t mu = CORUN_MUTEX_INIT;
static long counter;

static void *bump(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        CHECK_EQ(corun_mutex_lock(&mu), 0);
        long v = counter;
        if (i % 1000 == 0)
            corun_yield(); /* hold it across a switch now and then */
        counter = v + 1;
        CHECK_EQ(corun_mutex_unlock(&mu), 0);
    }
    return NULL;
}

/* Half the workers are coroutines, half pthreads. */
static void run_mixed(void *(*fn)(void *), void *arg)
{
    corun_co_t *co[N / 2];
    pthread_t th[N / 2];
    for (int i = 0; i < N / 2; i++) {
        co[i] = corun_spawn(fn, arg);
        CHECK(co[i]);
        CHECK(pthread_create(&th[i], NULL, fn, arg) == 0);
    }
    for (int i = 0; i < N / 2; i++) {
        CHECK_EQ(corun_join(co[i], NULL), 0);
        CHECK(pthread_join(th[i], NULL) == 0);
    }
}

static corun_cond_t cv = CORUN_COND_INIT;
static int queue_len, produced, consumed;

static void *cond_consumer(void *arg)
{
    (void)arg;
    corun_mutex_lock(&mu);
    for (;;) {
        while (queue_len == 0 && produced < N / 2 * 1000)
            CHECK_EQ(corun_cond_wait(&cv, &mu), 0);
        if (queue_len == 0)
            break;
        queue_len--;
        consumed++;
    }
    corun_mutex_unlock(&mu);
    return NULL;
}

static void *cond_producer(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++) {
        corun_mutex_lock(&mu);
        queue_len++;
        produced++;
        corun_cond_signal(&cv);
        corun_mutex_unlock(&mu);
    }
    corun_mutex_lock(&mu);
    corun_cond_broadcast(&cv);
    corun_mutex_unlock(&mu);
    return NULL;
}

static corun_sem_t sem = CORUN_SEM_INIT(0);
static corun_wg_t wg = CORUN_WG_INIT;

static void *sem_taker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++)
        CHECK_EQ(corun_sem_wait(&sem), 0);
    CHECK_EQ(corun_wg_done(&wg), 0);
    return NULL;
}

static void *sem_giver(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++)
        CHECK_EQ(corun_sem_post(&sem), 0);
    CHECK_EQ(corun_wg_done(&wg), 0);
    return NULL;
}

static void *swap_role(void *arg)
{
    /* Even: take, odd: give; arg counts calls to alternate roles. */
    static int k;
    return __atomic_fetch_add(&k, 1, __ATOMIC_SEQ_CST) % 2 ? sem_giver(arg) : sem_taker(arg);
}

int main(void)
{
    /* mutex */
    run_mixed(bump, NULL);
    CHECK_EQ(counter, (long)N * ITERS);
    CHECK_EQ(corun_mutex_trylock(&mu), 0);
    CHECK_EQ(corun_mutex_trylock(&mu), EBUSY);
    uint64_t t0 = co_now_ns();
    CHECK_EQ(corun_mutex_timedlock(&mu, 10 * MS), ETIMEDOUT);
    CHECK(co_now_ns() - t0 >= 10 * MS);
    CHECK_EQ(corun_mutex_unlock(&mu), 0);
    CHECK_EQ(corun_mutex_unlock(&mu), EPERM);
    CHECK_EQ(corun_mutex_lock(NULL), EINVAL);
    corun_mutex_t m2;
    CHECK_EQ(corun_mutex_init(&m2), 0);
    CHECK_EQ(corun_mutex_timedlock(&m2, 1), 0);
    CHECK_EQ(corun_mutex_unlock(&m2), 0);

    /* condition variable: producers and consumers, half of each kind */
    corun_co_t *co[N];
    pthread_t th[N];
    for (int i = 0; i < N / 2; i++) {
        co[i] = corun_spawn(cond_consumer, NULL);
        CHECK(pthread_create(&th[i], NULL, cond_consumer, NULL) == 0);
    }
    for (int i = 0; i < N / 4; i++) {
        co[N / 2 + i] = corun_spawn(cond_producer, NULL);
        CHECK(pthread_create(&th[N / 2 + i], NULL, cond_producer, NULL) == 0);
    }
    for (int i = 0; i < N / 2 + N / 4; i++) {
        CHECK_EQ(corun_join(co[i], NULL), 0);
        CHECK(pthread_join(th[i], NULL) == 0);
    }
    CHECK_EQ(consumed, N / 2 * 1000);
    corun_mutex_lock(&mu);
    t0 = co_now_ns();
    CHECK_EQ(corun_cond_timedwait(&cv, &mu, 10 * MS), ETIMEDOUT);
    CHECK(co_now_ns() - t0 >= 10 * MS);
    CHECK_EQ(corun_mutex_trylock(&mu), EBUSY); /* held again after the timeout */
    corun_mutex_unlock(&mu);
    CHECK_EQ(corun_cond_wait(&cv, &mu), EPERM);
    CHECK_EQ(corun_cond_signal(NULL), EINVAL);
    corun_cond_t c2;
    CHECK_EQ(corun_cond_init(&c2), 0);

    /* semaphore and wait group: takers and givers of both kinds */
    CHECK_EQ(corun_wg_add(&wg, N), 0);
    run_mixed(swap_role, NULL);
    CHECK_EQ(corun_wg_wait(&wg), 0);
    CHECK_EQ(corun_sem_value(&sem), 0);
    CHECK_EQ(corun_sem_trywait(&sem), EAGAIN);
    CHECK_EQ(corun_sem_timedwait(&sem, 5 * MS), ETIMEDOUT);
    CHECK_EQ(corun_sem_post(&sem), 0);
    CHECK_EQ(corun_sem_trywait(&sem), 0);
    corun_sem_t s2;
    CHECK_EQ(corun_sem_init(&s2, UINT32_MAX), 0);
    CHECK_EQ(corun_sem_post(&s2), EOVERFLOW);
    CHECK_EQ(corun_wg_add(&wg, -1), EINVAL);
    CHECK_EQ(corun_wg_add(&wg, 1), 0);
    CHECK_EQ(corun_wg_timedwait(&wg, 5 * MS), ETIMEDOUT);
    CHECK_EQ(corun_wg_done(&wg), 0);
    CHECK_EQ(corun_wg_wait(&wg), 0);
    corun_wg_t w2;
    CHECK_EQ(corun_wg_init(&w2), 0);
    CHECK_EQ(corun_wg_wait(&w2), 0);
    printf("co_sync: ok\n");
    return 0;
}
