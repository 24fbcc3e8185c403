/* Compute-bound threads and a thread that ticks: the ticker must keep
 * ticking while more compute threads than workers run, and every
 * register the computation keeps live (integer, x87, SSE/AVX vectors,
 * flags) must come through preemption intact.
 *
 * usage: preempt_compute [THREADS [ITERS]]
 * stdout: one line per compute thread with the bits of its results (the
 * same natively and under corun); stderr: "ticks N ms M" counted while
 * the compute threads ran. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef double v4d __attribute__((vector_size(32)));

struct result {
    uint64_t h;
    double x;
    long double lx;
    v4d v;
};

static long iters = 30000000;
static atomic_int running;
static atomic_int started;
static struct result results[64];

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *compute(void *arg)
{
    long id = (long)arg;
    uint64_t h = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
    double x = 1.0 + (double)id;
    long double lx = 0.5L;
    v4d v = {1.0 + id, 2.0, 3.0, 4.0};
    const v4d mul = {1.0000001, 0.9999999, 1.00000003, 0.99999997};
    atomic_fetch_add(&started, 1);
    for (long i = 0; i < iters; i++) {
        h ^= h << 13;
        h ^= h >> 7;
        h ^= h << 17;
        x = x * 1.000000119 + (double)(h & 0xffff) * 1e-9;
        if (x > 1e6)
            x *= 1e-6;
        lx = lx * 0.999999999L + (long double)x * 1e-12L;
        v = v * mul + (v4d){x * 1e-12, 1e-13, -1e-13, (double)(i & 7) * 1e-14};
    }
    results[id] = (struct result){h, x, lx, v};
    atomic_fetch_sub(&running, 1);
    return NULL;
}

static int ticks;
static double ticked_ms;

static void *ticker(void *arg)
{
    (void)arg;
    struct timespec d = {0, 2000000};
    while (atomic_load(&started) == 0)
        nanosleep(&d, NULL);
    double t0 = now_ms();
    while (atomic_load(&running) > 0) {
        nanosleep(&d, NULL);
        ticks++;
    }
    ticked_ms = now_ms() - t0;
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 4;
    if (argc > 2)
        iters = atol(argv[2]);
    if (n < 1 || n > 64)
        return 2;
    pthread_t th[64], tk;
    atomic_store(&running, n);
    if (pthread_create(&tk, NULL, ticker, NULL) != 0)
        return 1;
    for (long i = 0; i < n; i++)
        if (pthread_create(&th[i], NULL, compute, (void *)i) != 0)
            return 1;
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_join(tk, NULL);
    for (int i = 0; i < n; i++) {
        struct result *r = &results[i];
        uint64_t xb, vb[4];
        unsigned char lb[10];
        memcpy(&xb, &r->x, 8);
        memcpy(vb, &r->v, 32);
        memcpy(lb, &r->lx, 10);
        printf("thread %d: h %016llx x %016llx v %016llx %016llx %016llx %016llx lx ", i,
               (unsigned long long)r->h, (unsigned long long)xb, (unsigned long long)vb[0],
               (unsigned long long)vb[1], (unsigned long long)vb[2], (unsigned long long)vb[3]);
        for (int k = 9; k >= 0; k--)
            printf("%02x", lb[k]);
        printf("\n");
    }
    fprintf(stderr, "ticks %d ms %.0f\n", ticks, ticked_ms);
    return 0;
}
