/*
 * co_sigwait: the "block signals, one thread sits in sigwait" design.
 * main blocks SIGUSR1/SIGUSR2 before any coroutine starts; a coroutine
 * waits in sigwait while another ticks every millisecond on the same
 * runtime; main sends SIGUSR1 to the process after 100 ms. The waiter
 * must get SIGUSR1, and the ticker must have kept ticking meanwhile (a
 * sigwait that held its worker would stop a ticker placed there).
 * sigtimedwait with a 50 ms timeout on an empty set returns EAGAIN.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <corun.h>

static volatile int stop;
static long ticks;
static int got;

static void *waiter(void *a)
{
    sigset_t *set = a;
    int sig = 0;
    if (sigwait(set, &sig) == 0)
        got = sig;
    stop = 1;
    return NULL;
}

static void *ticker(void *a)
{
    (void)a;
    while (!stop) {
        usleep(1000);
        ticks++;
    }
    return NULL;
}

int main(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    /* Two tickers and the waiter: with two workers a ticker shares the
     * waiter's worker. */
    corun_co_t *w = corun_spawn(waiter, &set);
    corun_co_t *t1 = corun_spawn(ticker, NULL);
    corun_co_t *t2 = corun_spawn(ticker, NULL);
    usleep(100000);
    kill(getpid(), SIGUSR1);
    corun_join(w, NULL);
    corun_join(t1, NULL);
    corun_join(t2, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigaddset(&none, SIGUSR2);
    struct timespec ts = {0, 50000000};
    int r = sigtimedwait(&none, NULL, &ts);
    int e = errno;
    printf("sigwait: got signal %d (SIGUSR1=%d), tickers ticked %ld times; sigtimedwait -> %d %s\n", got, SIGUSR1,
           ticks, r, e == EAGAIN ? "EAGAIN" : "other");
    return got == SIGUSR1 && ticks >= 100 && r == -1 && e == EAGAIN ? 0 : 1;
}
