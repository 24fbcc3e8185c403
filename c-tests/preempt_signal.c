/* A thread parked for a signal while compute threads fill every worker:
 * how soon does it get the signal?
 *
 * usage: preempt_signal sigwait|pause [THREADS]
 * main starts THREADS compute threads (default 4), prints "ready", then
 * waits for SIGTERM in sigwait (SIGTERM blocked everywhere) or for SIGINT
 * in pause (a handler). When it has it, it prints CLOCK_REALTIME in ns
 * ("got SIG at NS"), stops the compute threads and prints their checksum
 * count. The compute threads give up by themselves after ~8 s of work, so
 * the program always ends. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;
static volatile sig_atomic_t got_int;

static void on_int(int sig)
{
    (void)sig;
    got_int = 1;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *compute(void *arg)
{
    uint64_t h = (uintptr_t)arg + 1;
    double t0 = mono_s();
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (int i = 0; i < 1000000; i++) {
            h ^= h << 13;
            h ^= h >> 7;
            h ^= h << 17;
        }
        if (mono_s() - t0 > 8.0)
            break;
    }
    return (void *)(uintptr_t)(h | 1);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    int use_sigwait = strcmp(argv[1], "sigwait") == 0;
    int n = argc > 2 ? atoi(argv[2]) : 4;
    if (n < 1 || n > 64)
        return 2;
    sigset_t set;
    sigemptyset(&set);
    int sig = use_sigwait ? SIGTERM : SIGINT;
    if (use_sigwait) {
        sigaddset(&set, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
    } else {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_int;
        sigaction(SIGINT, &sa, NULL);
    }
    pthread_t th[64];
    for (long i = 0; i < n; i++)
        if (pthread_create(&th[i], NULL, compute, (void *)i) != 0)
            return 1;
    printf("ready\n");
    fflush(stdout);
    if (use_sigwait) {
        int got = 0;
        if (sigwait(&set, &got) != 0 || got != SIGTERM)
            return 3;
    } else {
        while (!got_int)
            pause();
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    printf("got %s at %lld\n", sig == SIGTERM ? "SIGTERM" : "SIGINT",
           (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
    fflush(stdout);
    atomic_store(&stop, 1);
    int done = 0;
    for (int i = 0; i < n; i++) {
        void *r;
        pthread_join(th[i], &r);
        done += r != NULL;
    }
    printf("%d threads joined\n", done);
    return 0;
}
