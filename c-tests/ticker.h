/*
 * ticker.h - a thread that counts short sleeps, to show that a wait parks
 * the waiting thread and not its worker.
 *
 * Under corun with one worker, a call that waits inside libc (past every
 * hook) holds the worker, and every other thread of that worker stops
 * with it: a ticker thread counting `period_us` sleeps then counts
 * nothing for the whole wait. Natively the kernel runs the ticker
 * meanwhile. A test starts the ticker, takes ticker_now() before a wait
 * of a few hundred ms, and prints ticker_report() after it: the same
 * "yes" natively and under corun is the check (the test's script also
 * fails on a native "NO", a machine too loaded to tell).
 *
 * Header only, for the tests in c-tests/; every function is static inline
 * so a test that uses part of it builds under -Wall -Wextra -Werror.
 */
#ifndef CORUN_TEST_TICKER_H
#define CORUN_TEST_TICKER_H

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile long ticker_ticks;
static volatile int ticker_stopping;
static pthread_t ticker_thread;
static useconds_t ticker_period_us;

static inline void *ticker_main(void *arg)
{
    (void)arg;
    while (!ticker_stopping) {
        usleep(ticker_period_us);
        ticker_ticks++;
    }
    return NULL;
}

/* Starts the ticker thread, then lets it run `settle_us` so the waits
 * that follow find it already ticking. */
static inline void ticker_start(useconds_t period_us, useconds_t settle_us)
{
    ticker_period_us = period_us;
    ticker_stopping = 0;
    pthread_create(&ticker_thread, NULL, ticker_main, NULL);
    usleep(settle_us);
}

static inline long ticker_now(void) { return ticker_ticks; }

/* Prints "WHAT: ticker ran during the wait: yes" when at least `min`
 * ticks were counted since `before`, "NO" otherwise. */
static inline void ticker_report(const char *what, long before, long min)
{
    printf("%s: ticker ran during the wait: %s\n", what, ticker_ticks - before >= min ? "yes" : "NO");
}

static inline void ticker_stop(void)
{
    ticker_stopping = 1;
    pthread_join(ticker_thread, NULL);
}

/* The other side of such a wait: a child process writes `text` into `fd`
 * after `ms` milliseconds (the wait it ends is long enough for ticks). */
static inline pid_t write_later(int fd, const char *text, int ms)
{
    pid_t p = fork();
    if (p == 0) {
        usleep((useconds_t)ms * 1000);
        if (write(fd, text, strlen(text)) < 0)
            _exit(1);
        _exit(0);
    }
    return p;
}

static inline void reap_child(pid_t p)
{
    int st;
    waitpid(p, &st, 0);
}

#endif
