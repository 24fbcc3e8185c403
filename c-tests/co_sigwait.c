/*
 * co_sigwait: the "block signals, one thread sits in sigwait" design.
 * main blocks SIGUSR1/SIGUSR2 before any coroutine starts; a coroutine
 * waits in sigwait while another ticks every millisecond on the same
 * runtime; main sends SIGUSR1 to the process once each ticker ticked
 * more than 10 times (5 s at most: `until_ticked`). The waiter
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
static volatile sig_atomic_t hup, usr2;
static void on_hup(int s) { (void)s; hup = 1; }
static void on_usr2(int s) { (void)s; usr2 = 1; }

/* Each ticker counts its own ticks: what must hold is that every ticker
 * ran meanwhile (one shares the waiter's worker), not a total, which a
 * loaded machine cuts (82 of 200 at load 21 on 2 CPUs). */
static long ticks[3];
static int got;

/* Waits until every ticker of ticks[from..to] has ticked more than 10
 * times, for 5 s at most: a handshake, not a fixed 100 ms, which a loaded
 * machine cut to 5-10 ticks (3 runs in 40 at load 20, with main's library
 * too). A ticker on a worker that a wait holds never gets there. */
static void until_ticked(int from, int to)
{
    for (int i = 0; i < 5000; i++) {
        int all = 1;
        for (int k = from; k <= to; k++)
            all = all && __atomic_load_n(&ticks[k], __ATOMIC_RELAXED) > 10;
        if (all)
            return;
        usleep(1000);
    }
}

static void *killer(void *a)
{
    until_ticked(2, 2);
    kill(getpid(), (int)(intptr_t)a);
    return NULL;
}

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
    long *count = a;
    while (!stop) {
        usleep(1000);
        (*count)++;
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
    corun_co_t *t1 = corun_spawn(ticker, &ticks[0]);
    corun_co_t *t2 = corun_spawn(ticker, &ticks[1]);
    until_ticked(0, 1);
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
    long fewest = ticks[0] < ticks[1] ? ticks[0] : ticks[1];
    printf("sigwait: got signal %d (SIGUSR1=%d), each ticker ticked at least %ld times; sigtimedwait -> %d %s\n", got,
           SIGUSR1, fewest, r, e == EAGAIN ? "EAGAIN" : "other");
    int ok = got == SIGUSR1 && fewest > 10 && r == -1 && e == EAGAIN;

    /* while (!flag) pause(); with the signal sent by another coroutine. */
    signal(SIGHUP, on_hup);
    stop = 0;
    corun_co_t *k = corun_spawn(killer, (void *)(intptr_t)SIGHUP);
    corun_co_t *t3 = corun_spawn(ticker, &ticks[2]);
    int pauses = 0;
    while (!hup && pauses < 1000)
        pauses += pause() == -1 && errno == EINTR;
    /* sigsuspend: SIGUSR2 is blocked; wait with a mask that lets it in. */
    signal(SIGUSR2, on_usr2);
    corun_co_t *k2 = corun_spawn(killer, (void *)(intptr_t)SIGUSR2);
    sigset_t open;
    sigemptyset(&open);
    int susp = 0;
    while (!usr2 && susp < 1000)
        susp += sigsuspend(&open) == -1 && errno == EINTR;
    stop = 1;
    corun_join(k, NULL);
    corun_join(k2, NULL);
    corun_join(t3, NULL);
    printf("pause: handler ran=%d after %d pauses; sigsuspend: handler ran=%d after %d calls; ticker %ld\n", (int)hup,
           pauses, (int)usr2, susp, ticks[2]);
    ok = ok && hup && usr2 && ticks[2] > 10;
    return ok ? 0 : 1;
}
