/* Threads whose runs are all short: 4 pairs of threads hand a token back
 * and forth through a mutex and a condition variable, computing a few
 * microseconds per turn, for the seconds given (argv[1], default 2).
 * Each pair's turns are checked (strictly alternating) and the program
 * prints one line per pair with its turns, and "ok".
 *
 * scripts/tests/preempt_short_runs.sh runs it on one worker pinned to a CPU
 * that busy processes share: the worker's thread often waits for that CPU
 * in the middle of a run, which is no run that computes long, and corun's
 * preemption monitor must not take it for one. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PAIRS 4

struct pair {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int turn;           /* 0 or 1: whose turn */
    long turns[2];
    int stop;
    int bad;
    uint64_t sink;
};

struct arg {
    struct pair *p;
    int side;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A few microseconds of arithmetic. */
static uint64_t work(uint64_t x) {
    for (int i = 0; i < 2000; i++)
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}

static void *player(void *v) {
    struct arg *a = v;
    struct pair *p = a->p;
    uint64_t x = (uint64_t)a->side + 1;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->turn != a->side && !p->stop)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop)
            break;
        if (p->turns[a->side] != p->turns[1 - a->side] - (a->side == 1 ? 1 : 0))
            p->bad = 1;
        p->turns[a->side]++;
        x = work(x);
        p->turn = 1 - a->side;
        pthread_cond_signal(&p->cv);
    }
    p->sink += x;
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    static struct pair pairs[PAIRS];
    static struct arg args[PAIRS][2];
    pthread_t t[PAIRS][2];
    for (int i = 0; i < PAIRS; i++) {
        pthread_mutex_init(&pairs[i].mu, NULL);
        pthread_cond_init(&pairs[i].cv, NULL);
        for (int s = 0; s < 2; s++) {
            args[i][s].p = &pairs[i];
            args[i][s].side = s;
            if (pthread_create(&t[i][s], NULL, player, &args[i][s]) != 0) {
                fprintf(stderr, "pthread_create failed\n");
                return 1;
            }
        }
    }
    double end = now_s() + secs;
    while (now_s() < end) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    int bad = 0;
    for (int i = 0; i < PAIRS; i++) {
        pthread_mutex_lock(&pairs[i].mu);
        pairs[i].stop = 1;
        pthread_cond_broadcast(&pairs[i].cv);
        pthread_mutex_unlock(&pairs[i].mu);
        for (int s = 0; s < 2; s++)
            pthread_join(t[i][s], NULL);
        long a = pairs[i].turns[0], b = pairs[i].turns[1];
        if (pairs[i].bad || (a != b && a != b + 1) || a == 0) {
            fprintf(stderr, "pair %d: turns %ld and %ld, out of order: %d\n", i, a, b,
                    pairs[i].bad);
            bad = 1;
        }
        printf("pair %d: turns alternate\n", i);
    }
    if (bad)
        return 1;
    printf("ok\n");
    return 0;
}
