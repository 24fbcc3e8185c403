/*
 * co_bench_micro TEST ARGS... - corun's side of the micro benchmarks
 * (scripts/bench.sh runs it under LD_PRELOAD=libcorun.so; the baselines
 * are c-tests/bench_baselines.c, run natively in the same bench run).
 *
 *   pingpong ITERS TRIALS   two coroutines on one worker each call
 *                           corun_yield ITERS times: A -> scheduler -> B ->
 *                           scheduler -> A is one round trip (run with
 *                           CORUN_WORKERS=1 so both share the worker)
 *   yield ITERS TRIALS      one coroutine alone calls corun_yield (nothing
 *                           else runnable: the cost of a yield that finds
 *                           no one to yield to)
 *   spawn ITERS TRIALS      corun_spawn + corun_join of an empty coroutine,
 *                           one at a time
 *   chan ITERS TRIALS       unbuffered channel ping-pong: main sends on one
 *                           channel, a coroutine receives and answers on
 *                           another; one round trip is ping + pong
 *   mutex ITERS TRIALS      corun_mutex_lock + corun_mutex_unlock, free
 *   pthread_mutex ITERS TRIALS  the same with pthread_mutex_lock/unlock
 *                           (interposed by corun)
 *   sleepers N MS TRIALS    N coroutines spawned at once, each nanosleep()s
 *                           MS ms; wall time from the first spawn to the
 *                           last join
 *
 * Each trial is timed on its own; the output is one line
 *   RESULT <test> median=<x> min=<x> max=<x> unit=<ns|ms> trials=<t1,t2,...>
 * and the program exits 1 if a sanity check failed (a coroutine did not
 * alternate, a sleep was short, a spawn or join failed).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <corun.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *test, double *v, int n, const char *unit)
{
    double s[64];
    memcpy(s, v, sizeof *v * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, cmp_d);
    printf("RESULT %s median=%.2f min=%.2f max=%.2f unit=%s trials=", test, s[n / 2], s[0], s[n - 1], unit);
    for (int i = 0; i < n; i++)
        printf("%s%.2f", i ? "," : "", v[i]);
    printf("\n");
}

static corun_co_t *spawn_or_die(void *(*fn)(void *), void *arg)
{
    corun_co_t *co = corun_spawn(fn, arg);
    if (!co) {
        perror("corun_spawn");
        exit(1);
    }
    return co;
}

static void join_or_die(corun_co_t *co)
{
    int e = corun_join(co, NULL);
    if (e) {
        fprintf(stderr, "corun_join: %s\n", strerror(e));
        exit(1);
    }
}

/* ---- pingpong / yield ---- */
static long iters;
static volatile long turn_a, turn_b; /* progress counters */
static long not_alternated;

static void *pinger(void *arg)
{
    volatile long *mine = arg == NULL ? &turn_a : &turn_b;
    volatile long *other = arg == NULL ? &turn_b : &turn_a;
    long seen = *other;
    for (long i = 0; i < iters; i++) {
        (*mine)++;
        corun_yield();
        /* While we were away the other one must have run (until it is done). */
        if (*other == seen && *other < iters)
            not_alternated++;
        seen = *other;
    }
    return NULL;
}

static double pingpong_trial(void)
{
    turn_a = turn_b = 0;
    uint64_t t0 = now_ns();
    corun_co_t *a = spawn_or_die(pinger, NULL);
    corun_co_t *b = spawn_or_die(pinger, (void *)1);
    join_or_die(a);
    join_or_die(b);
    return (double)(now_ns() - t0) / (double)iters;
}

static double yield_trial(void)
{
    uint64_t t0 = now_ns();
    for (long i = 0; i < iters; i++)
        corun_yield();
    return (double)(now_ns() - t0) / (double)iters;
}

/* ---- spawn ---- */
static void *empty(void *arg) { return arg; }

static double spawn_trial(void)
{
    uint64_t t0 = now_ns();
    for (long i = 0; i < iters; i++)
        join_or_die(spawn_or_die(empty, NULL));
    return (double)(now_ns() - t0) / (double)iters;
}

/* ---- channel ping-pong ---- */
static corun_chan_t *ping, *pong;

static void *ponger(void *arg)
{
    (void)arg;
    long v;
    while (corun_chan_recv(ping, &v) == 0)
        if (corun_chan_send(pong, &v) != 0)
            break;
    return NULL;
}

static double chan_trial(void)
{
    ping = corun_chan_new(sizeof(long), 0);
    pong = corun_chan_new(sizeof(long), 0);
    corun_co_t *co = spawn_or_die(ponger, NULL);
    uint64_t t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        long v = i, back = -1;
        if (corun_chan_send(ping, &v) || corun_chan_recv(pong, &back) || back != i) {
            fprintf(stderr, "co_bench_micro: ping-pong broke at %ld\n", i);
            exit(1);
        }
    }
    double ns = (double)(now_ns() - t0) / (double)iters;
    corun_chan_close(ping);
    join_or_die(co);
    corun_chan_free(ping);
    corun_chan_free(pong);
    return ns;
}

/* ---- mutexes ---- */
static corun_mutex_t cmu = CORUN_MUTEX_INIT;
static pthread_mutex_t pmu = PTHREAD_MUTEX_INITIALIZER;
static volatile long guarded;

static double mutex_trial(void)
{
    uint64_t t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        corun_mutex_lock(&cmu);
        guarded++;
        corun_mutex_unlock(&cmu);
    }
    return (double)(now_ns() - t0) / (double)iters;
}

static double pthread_mutex_trial(void)
{
    uint64_t t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        pthread_mutex_lock(&pmu);
        guarded++;
        pthread_mutex_unlock(&pmu);
    }
    return (double)(now_ns() - t0) / (double)iters;
}

/* ---- sleepers ---- */
static long sleep_ms;
static volatile long short_sleeps;

static void *sleeper(void *arg)
{
    (void)arg;
    uint64_t t0 = now_ns();
    struct timespec ts = {.tv_sec = sleep_ms / 1000, .tv_nsec = (sleep_ms % 1000) * 1000000};
    if (nanosleep(&ts, NULL) != 0 || now_ns() - t0 < (uint64_t)sleep_ms * 1000000ull)
        __atomic_fetch_add(&short_sleeps, 1, __ATOMIC_RELAXED);
    return NULL;
}

static double sleepers_trial(long n)
{
    corun_co_t **cos = malloc(sizeof *cos * (size_t)n);
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++)
        cos[i] = spawn_or_die(sleeper, NULL);
    for (long i = 0; i < n; i++)
        join_or_die(cos[i]);
    double ms = (double)(now_ns() - t0) / 1e6;
    free(cos);
    return ms;
}

int main(int argc, char **argv)
{
    if (argc < 4 || corun_self_id() == 0) {
        fprintf(stderr, "usage (under LD_PRELOAD=libcorun.so): %s pingpong|yield|spawn ITERS TRIALS | sleepers N MS TRIALS\n",
                argv[0]);
        return 2;
    }
    const char *t = argv[1];
    double v[64];
    int trials;
    if (strcmp(t, "sleepers") == 0) {
        if (argc < 5)
            return 2;
        long n = atol(argv[2]);
        sleep_ms = atol(argv[3]);
        trials = atoi(argv[4]);
        if (trials < 1 || trials > 64)
            return 2;
        for (int i = 0; i < trials; i++)
            v[i] = sleepers_trial(n);
        report("sleepers", v, trials, "ms");
        if (short_sleeps) {
            fprintf(stderr, "co_bench_micro: %ld sleeps were short\n", short_sleeps);
            return 1;
        }
        return 0;
    }
    iters = atol(argv[2]);
    trials = atoi(argv[3]);
    if (iters < 1 || trials < 1 || trials > 64)
        return 2;
    double (*trial)(void) = strcmp(t, "pingpong") == 0 ? pingpong_trial
                            : strcmp(t, "yield") == 0  ? yield_trial
                            : strcmp(t, "spawn") == 0  ? spawn_trial
                            : strcmp(t, "chan") == 0   ? chan_trial
                            : strcmp(t, "mutex") == 0  ? mutex_trial
                            : strcmp(t, "pthread_mutex") == 0 ? pthread_mutex_trial
                                                       : NULL;
    if (!trial) {
        fprintf(stderr, "unknown test %s\n", t);
        return 2;
    }
    trial(); /* warm up: stacks pooled, code paged in */
    not_alternated = 0;
    for (int i = 0; i < trials; i++)
        v[i] = trial();
    report(t, v, trials, "ns");
    /* A few non-alternations at the start are the scheduler running the
     * yielder again before the never-run partner; more means two workers. */
    if (not_alternated > iters / 100) {
        fprintf(stderr, "co_bench_micro: the two coroutines did not alternate %ld times (more than one worker?)\n",
                not_alternated);
        return 1;
    }
    return 0;
}
