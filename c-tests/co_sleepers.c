/*
 * co_sleepers N MS
 *
 * Spawns N coroutines that each sleep MS milliseconds (nanosleep), joins
 * them all, and prints the wall time. Exits 1 if any slept less than MS or a
 * join failed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <corun.h>

static long ms;
static int short_sleeps;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *sleeper(void *arg)
{
    (void)arg;
    uint64_t t0 = now_ns();
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    if (nanosleep(&ts, NULL) != 0)
        short_sleeps++;
    if (now_ns() - t0 < (uint64_t)ms * 1000000ull)
        short_sleeps++;
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10000;
    ms = argc > 2 ? atol(argv[2]) : 10;
    corun_co_t **cos = malloc(sizeof *cos * (size_t)n);
    uint64_t t0 = now_ns();
    for (int i = 0; i < n; i++) {
        cos[i] = corun_spawn(sleeper, NULL);
        if (!cos[i]) {
            perror("corun_spawn");
            return 1;
        }
    }
    for (int i = 0; i < n; i++)
        if (corun_join(cos[i], NULL) != 0) {
            fprintf(stderr, "join %d failed\n", i);
            return 1;
        }
    double wall = (double)(now_ns() - t0) / 1e6;
    printf("sleepers: %d coroutines slept %ld ms each; wall %.1f ms; short sleeps %d\n", n, ms, wall, short_sleeps);
    return short_sleeps ? 1 : 0;
}
