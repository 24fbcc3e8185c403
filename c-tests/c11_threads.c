/*
 * c11_threads.c - C11 <threads.h> beside pthreads: thrd_create/join/exit/
 * detach/current/equal/sleep/yield, mtx (plain, recursive, timed), cnd
 * (wait, timedwait, signal, broadcast), call_once and tss destructors,
 * every result code (thrd_success, thrd_busy, thrd_timedout) and value
 * checked. glibc runs these on its internal pthread calls, which no hook
 * sees: a C11 wait in a coroutine held its worker (src/hooks/c11threads.rs).
 * A pthread ticker counts 1 ms sleeps, and each wait of `main` (thrd_join,
 * mtx_lock on a mutex a pthread holds, cnd_wait, mtx_timedlock and
 * cnd_timedwait running out, thrd_sleep) must let it run; with one worker
 * a wait that held it would stop the ticker, or deadlock (the holder could
 * not run to unlock). Prints one line per fact; scripts/tests/c11_threads.sh
 * requires the same lines natively and under corun.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include "ticker.h"

static void ticked(const char *what, long before) { ticker_report(what, before, 5); }

static const char *code(int r)
{
    switch (r) {
    case thrd_success: return "thrd_success";
    case thrd_busy: return "thrd_busy";
    case thrd_error: return "thrd_error";
    case thrd_nomem: return "thrd_nomem";
    case thrd_timedout: return "thrd_timedout";
    default: return "unknown";
    }
}

/* A CLOCK_REALTIME deadline ms from now (what C11's timed calls take). */
static struct timespec in_ms(long ms)
{
    struct timespec t;
    timespec_get(&t, TIME_UTC);
    t.tv_nsec += (ms % 1000) * 1000000L;
    t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

static void nap_ms(long ms)
{
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    thrd_sleep(&d, NULL);
}

/* --- values through thrd_join, thrd_exit at depth --- */
static int returns(void *arg) { return (int)(long)arg; }
/* thrd_exit two frames below the start routine. */
static __attribute__((noinline)) void exit_inner(int value) { thrd_exit(value + 1); }
static __attribute__((noinline)) void exit_outer(int value) { exit_inner(value + 1); }
static int exits(void *arg)
{
    exit_outer((int)(long)arg);
    return -999; /* never */
}
static int sleeps_then_returns(void *arg)
{
    nap_ms(200);
    return (int)(long)arg;
}

/* --- mutexes --- */
static mtx_t counter_lock, rec_lock, timed_lock;
static long counter;
static int adds(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10000; i++) {
        mtx_lock(&counter_lock);
        counter++;
        if ((i & 255) == 0)
            thrd_yield();
        mtx_unlock(&counter_lock);
    }
    return 0;
}

/* A pthread holds timed_lock for 200 ms (sleeping), then unlocks. */
static void *holds_200ms(void *arg)
{
    (void)arg;
    mtx_lock(&timed_lock);
    usleep(200000);
    mtx_unlock(&timed_lock);
    return NULL;
}

static int try_from_other(void *arg)
{
    return mtx_trylock((mtx_t *)arg);
}

/* --- condition variables --- */
static mtx_t q_lock;
static cnd_t q_cond, q_done;
static int queue[64], q_len, consumed_sum, consumers_left;
static int consumer(void *arg)
{
    (void)arg;
    int sum = 0;
    mtx_lock(&q_lock);
    for (;;) {
        while (q_len == 0)
            cnd_wait(&q_cond, &q_lock);
        int v = queue[--q_len];
        if (v < 0)
            break;
        sum += v;
    }
    consumed_sum += sum;
    if (--consumers_left == 0)
        cnd_signal(&q_done);
    mtx_unlock(&q_lock);
    return sum;
}

/* A pthread signals q_cond after 200 ms. */
static int flag_set;
static void *signals_later(void *arg)
{
    (void)arg;
    usleep(200000);
    mtx_lock(&q_lock);
    flag_set = 1;
    cnd_broadcast(&q_cond);
    mtx_unlock(&q_lock);
    return NULL;
}

/* --- call_once --- */
static once_flag once = ONCE_FLAG_INIT;
static int once_runs;
static void init_once(void)
{
    once_runs++;
    nap_ms(20); /* the others wait meanwhile */
}
static int calls_once(void *arg)
{
    (void)arg;
    call_once(&once, init_once);
    return once_runs;
}

/* --- tss --- */
static tss_t key;
static int dtor_runs, dtor_sum;
static mtx_t dtor_lock;
static void dtor(void *p)
{
    mtx_lock(&dtor_lock);
    dtor_runs++;
    dtor_sum += (int)(long)p;
    mtx_unlock(&dtor_lock);
}
static int uses_tss(void *arg)
{
    int v = (int)(long)arg;
    if (tss_get(key) != NULL)
        return -1;
    tss_set(key, (void *)(long)v);
    thrd_yield();
    if (tss_get(key) != (void *)(long)v)
        return -2;
    if (v % 2)
        thrd_exit(v); /* destructors run on thrd_exit too */
    return v;
}

/* --- detach --- */
static mtx_t det_lock;
static cnd_t det_cond;
static int det_done;
static int detached(void *arg)
{
    (void)arg;
    nap_ms(50);
    mtx_lock(&det_lock);
    det_done = 1;
    cnd_signal(&det_cond);
    mtx_unlock(&det_lock);
    return 0;
}

static thrd_t main_handle;
static int is_main(void *arg)
{
    (void)arg;
    return thrd_equal(thrd_current(), main_handle) ? 1 : 0;
}

static void on_alarm(int s) { (void)s; }

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    ticker_start(1000, 10000);

    /* Values. */
    thrd_t t[8];
    int res;
    thrd_create(&t[0], returns, (void *)42L);
    thrd_create(&t[1], returns, (void *)-7L);
    thrd_create(&t[2], exits, (void *)100L);
    for (int i = 0; i < 3; i++) {
        int r = thrd_join(t[i], &res);
        printf("join %d: %s, value %d\n", i, code(r), res);
    }
    long t0 = ticker_now();
    thrd_create(&t[0], sleeps_then_returns, (void *)5L);
    printf("join of a sleeping thread: %s", code(thrd_join(t[0], &res)));
    printf(", value %d\n", res);
    ticked("thrd_join", t0);
    printf("join with a NULL result: %s\n",
           code((thrd_create(&t[0], returns, NULL), thrd_join(t[0], NULL))));

    main_handle = thrd_current();
    printf("thrd_equal(current, current): %d\n", thrd_equal(thrd_current(), main_handle) != 0);
    thrd_create(&t[0], is_main, NULL);
    thrd_join(t[0], &res);
    printf("another thread is main: %d\n", res);

    /* Mutexes. */
    mtx_init(&counter_lock, mtx_plain);
    for (int i = 0; i < 8; i++)
        thrd_create(&t[i], adds, NULL);
    for (int i = 0; i < 8; i++)
        thrd_join(t[i], NULL);
    printf("8 threads x 10000 adds: %ld\n", counter);

    mtx_init(&rec_lock, mtx_plain | mtx_recursive);
    printf("recursive lock 3 times: %s %s %s\n", code(mtx_lock(&rec_lock)),
           code(mtx_lock(&rec_lock)), code(mtx_trylock(&rec_lock)));
    thrd_create(&t[0], try_from_other, &rec_lock);
    thrd_join(t[0], &res);
    printf("trylock from another thread: %s\n", code(res));
    mtx_unlock(&rec_lock);
    mtx_unlock(&rec_lock);
    mtx_unlock(&rec_lock);
    thrd_create(&t[0], try_from_other, &rec_lock);
    thrd_join(t[0], &res);
    printf("trylock once released: %s\n", code(res));
    mtx_destroy(&rec_lock);

    mtx_init(&timed_lock, mtx_timed);
    pthread_t holder;
    pthread_create(&holder, NULL, holds_200ms, NULL);
    usleep(20000);
    t0 = ticker_now();
    struct timespec dl = in_ms(60);
    printf("mtx_timedlock on a held mutex: %s\n", code(mtx_timedlock(&timed_lock, &dl)));
    printf("mtx_trylock on a held mutex: %s\n", code(mtx_trylock(&timed_lock)));
    printf("mtx_lock waits for the pthread holder: %s\n", code(mtx_lock(&timed_lock)));
    ticked("mtx_timedlock and mtx_lock", t0);
    mtx_unlock(&timed_lock);
    pthread_join(holder, NULL);
    dl = in_ms(1000);
    printf("mtx_timedlock on a free mutex: %s\n", code(mtx_timedlock(&timed_lock, &dl)));
    mtx_unlock(&timed_lock);

    /* Condition variables: 4 consumers, 1000 values, then a -1 each. */
    mtx_init(&q_lock, mtx_plain);
    cnd_init(&q_cond);
    cnd_init(&q_done);
    consumers_left = 4;
    for (int i = 0; i < 4; i++)
        thrd_create(&t[i], consumer, NULL);
    int expect = 0;
    for (int v = 1; v <= 1000; v++) {
        mtx_lock(&q_lock);
        while (q_len == 64) {
            mtx_unlock(&q_lock);
            thrd_yield();
            mtx_lock(&q_lock);
        }
        queue[q_len++] = v;
        expect += v;
        cnd_signal(&q_cond);
        mtx_unlock(&q_lock);
    }
    for (int i = 0; i < 4; i++) {
        mtx_lock(&q_lock);
        while (q_len == 64) {
            mtx_unlock(&q_lock);
            thrd_yield();
            mtx_lock(&q_lock);
        }
        /* A stop marker under the values left: put it at the bottom. */
        memmove(queue + 1, queue, q_len * sizeof queue[0]);
        queue[0] = -1;
        q_len++;
        cnd_broadcast(&q_cond);
        mtx_unlock(&q_lock);
    }
    mtx_lock(&q_lock);
    while (consumers_left > 0)
        cnd_wait(&q_done, &q_lock);
    mtx_unlock(&q_lock);
    int joined_sum = 0;
    for (int i = 0; i < 4; i++) {
        thrd_join(t[i], &res);
        joined_sum += res;
    }
    printf("consumers took every value once: %s (sum %d, joined %d)\n",
           consumed_sum == expect && joined_sum == expect ? "yes" : "NO", consumed_sum, joined_sum);

    t0 = ticker_now();
    mtx_lock(&q_lock);
    dl = in_ms(100);
    printf("cnd_timedwait with no signal: %s\n", code(cnd_timedwait(&q_cond, &q_lock, &dl)));
    pthread_t sig;
    pthread_create(&sig, NULL, signals_later, NULL);
    while (!flag_set)
        cnd_wait(&q_cond, &q_lock);
    printf("cnd_wait woken by a pthread: flag %d\n", flag_set);
    mtx_unlock(&q_lock);
    ticked("cnd_timedwait and cnd_wait", t0);
    pthread_join(sig, NULL);

    /* call_once from 6 threads. */
    for (int i = 0; i < 6; i++)
        thrd_create(&t[i], calls_once, NULL);
    int all_saw_one = 1;
    for (int i = 0; i < 6; i++) {
        thrd_join(t[i], &res);
        all_saw_one &= res == 1;
    }
    printf("call_once ran %d time(s), every caller saw it done: %s\n", once_runs,
           all_saw_one ? "yes" : "NO");

    /* tss: 6 threads set 1..6 (odd ones thrd_exit): destructors. */
    mtx_init(&dtor_lock, mtx_plain);
    printf("tss_create: %s\n", code(tss_create(&key, dtor)));
    for (int i = 0; i < 6; i++)
        thrd_create(&t[i], uses_tss, (void *)(long)(i + 1));
    int tss_ok = 1;
    for (int i = 0; i < 6; i++) {
        thrd_join(t[i], &res);
        tss_ok &= res == i + 1;
    }
    printf("tss values each thread's own: %s; destructors ran %d times, sum %d\n",
           tss_ok ? "yes" : "NO", dtor_runs, dtor_sum);
    void *before = tss_get(key);
    int set = tss_set(key, &key);
    printf("main's tss value: %p; set: %s, get back: %s\n", before, code(set),
           tss_get(key) == &key ? "yes" : "NO");
    tss_delete(key);

    /* Detached thread. */
    mtx_init(&det_lock, mtx_plain);
    cnd_init(&det_cond);
    thrd_create(&t[0], detached, NULL);
    printf("thrd_detach: %s\n", code(thrd_detach(t[0])));
    mtx_lock(&det_lock);
    while (!det_done)
        cnd_wait(&det_cond, &det_lock);
    mtx_unlock(&det_lock);
    printf("detached thread finished: %d\n", det_done);

    /* thrd_sleep: 200 ms, then one cut short by a handler. */
    t0 = ticker_now();
    struct timespec d = {0, 200000000L}, rem = {0, 0};
    printf("thrd_sleep: %d\n", thrd_sleep(&d, &rem));
    ticked("thrd_sleep", t0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 0}, {0, 50000}};
    setitimer(ITIMER_REAL, &it, NULL);
    d.tv_sec = 2;
    d.tv_nsec = 0;
    int r = thrd_sleep(&d, &rem);
    printf("thrd_sleep cut by a signal: %d, time left between 1 and 2 s: %s\n", r,
           rem.tv_sec == 1 ? "yes" : "NO");
    d.tv_sec = 0;
    d.tv_nsec = 2000000000L;
    printf("thrd_sleep with a bad time: %d\n", thrd_sleep(&d, NULL));

    ticker_stop();
    return 0;
}
