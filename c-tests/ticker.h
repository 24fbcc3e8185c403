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
 * The count lives in a shared page, so a child forked to end the wait
 * (write_later) can see it: after its fixed delay it also waits until
 * the ticker has ticked TICKER_AWAIT times since the parent's last
 * ticker_now() (2 s at most), so a loaded machine that starves the
 * ticker (natively too) lengthens the wait instead of failing the check.
 * A wait that holds the worker stops the ticker: the child then goes on
 * after 2 s and the report says "NO".
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

#include <sys/mman.h>

/* More than any test's `min`. */
#define TICKER_AWAIT 6

struct ticker_shared {
    volatile long ticks;
    volatile long mark; /* ticks at the last ticker_now() */
};
static struct ticker_shared ticker_private, *ticker_sh = &ticker_private;
static volatile int ticker_stopping;
static pthread_t ticker_thread;
static useconds_t ticker_period_us;

static inline void *ticker_main(void *arg)
{
    (void)arg;
    while (!ticker_stopping) {
        usleep(ticker_period_us);
        ticker_sh->ticks++;
    }
    return NULL;
}

/* Starts the ticker thread, then lets it run `settle_us` so the waits
 * that follow find it already ticking. */
static inline void ticker_start(useconds_t period_us, useconds_t settle_us)
{
    ticker_period_us = period_us;
    ticker_stopping = 0;
    void *page = mmap(NULL, sizeof *ticker_sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page != MAP_FAILED)
        ticker_sh = page;
    pthread_create(&ticker_thread, NULL, ticker_main, NULL);
    usleep(settle_us);
}

static inline long ticker_now(void)
{
    ticker_sh->mark = ticker_sh->ticks;
    return ticker_sh->mark;
}

/* In a child that ends the parent's wait: returns once the parent's
 * ticker ticked TICKER_AWAIT times since its last ticker_now(), or after
 * 2 s. */
static inline void ticker_await(void)
{
    for (int i = 0; i < 1000 && ticker_sh->ticks - ticker_sh->mark < TICKER_AWAIT; i++)
        usleep(2000);
}

/* Prints "WHAT: ticker ran during the wait: yes" when at least `min`
 * ticks were counted since `before`, "NO" otherwise. */
static inline void ticker_report(const char *what, long before, long min)
{
    printf("%s: ticker ran during the wait: %s\n", what, ticker_sh->ticks - before >= min ? "yes" : "NO");
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
        ticker_await();
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
