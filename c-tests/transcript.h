/*
 * transcript.h - helpers for the hooks_* tests.
 *
 * Each hooks_* program makes blocking calls and prints one line per call:
 * its label, its result and (when it failed) the errno name. The test
 * script runs the program natively and under corun and requires the two
 * transcripts to be identical: a program must not be able to tell.
 *
 * Someone must make the blocking calls return: `later(ms, fn, arg)` runs
 * fn(arg) on a helper thread after ms milliseconds (a kernel thread, or a
 * coroutine once corun runs pthreads as coroutines: either way it sleeps
 * through the hooks and acts later).
 *
 * Under corun the transcript alone does not show that a call *parked*
 * rather than blocked its worker. `WAITS(...)` checks that too: when
 * corun_spawn is found (the program runs under corun), a ticker coroutine
 * counts 1 ms sleeps on the same worker (run with CORUN_WORKERS=1); a call
 * that waited ~50 ms while the ticker did not move blocked the worker, and
 * the program reports "NOT PARKED" on stderr and exits 1 at the end.
 */
#ifndef TRANSCRIPT_H
#define TRANSCRIPT_H

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DELAY 50 /* ms a helper waits before acting */

static volatile long tr_ticks;
static int tr_under_corun;
static int tr_not_parked;

static inline uint64_t tr_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static inline void tr_print(const char *label, long r, int e)
{
    if (r < 0)
        printf("%s = %ld %s\n", label, r, strerrorname_np(e));
    else
        printf("%s = %ld\n", label, r);
    fflush(stdout);
}

/* Prints label = result [ERRNO]. */
#define T(label, expr)                      \
    ({                                      \
        errno = 0;                          \
        long tr_r_ = (long)(expr);          \
        int tr_e_ = errno;                  \
        tr_print(label, tr_r_, tr_e_);      \
        errno = tr_e_;                      \
        tr_r_;                              \
    })

/* As T, for a call that must wait (park under corun). */
#define WAITS(label, expr)                                          \
    ({                                                              \
        long tr_t0_ = tr_ticks;                                     \
        long tr_rr_ = T(label, expr);                               \
        if (tr_under_corun && tr_ticks == tr_t0_) {                 \
            fprintf(stderr, "NOT PARKED: %s\n", label);             \
            tr_not_parked++;                                        \
        }                                                           \
        tr_rr_;                                                     \
    })

/* Prints a fact (1/0) that must hold the same in both runs. */
#define CHECK(label, cond) printf("%s: %d\n", label, (cond) ? 1 : 0)

/* Whether fd's open file description has O_NONBLOCK (raw, as a child sees). */
static inline int tr_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && (fl & O_NONBLOCK) != 0;
}

static void *tr_ticker(void *arg)
{
    (void)arg;
    for (;;) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        tr_ticks++;
    }
    return NULL;
}

/* Starts the ticker when running under corun. */
static inline void tr_start(void)
{
    void *(*spawn)(void *(*)(void *), void *);
    *(void **)&spawn = dlsym(RTLD_DEFAULT, "corun_spawn");
    if (spawn && spawn(tr_ticker, NULL))
        tr_under_corun = 1;
    setvbuf(stdout, NULL, _IOLBF, 0);
}

/* The exit status: 1 if some call blocked its worker. */
static inline int tr_end(void)
{
    fflush(stdout);
    if (tr_under_corun)
        fprintf(stderr, "under corun: %ld ticker ticks, %d waits not parked\n", tr_ticks,
                tr_not_parked);
    return tr_not_parked ? 1 : 0;
}

struct tr_later {
    int ms;
    void (*fn)(void *);
    void *arg;
};

static void *tr_later_body(void *p)
{
    struct tr_later l = *(struct tr_later *)p;
    free(p);
    /* Signals are for the program's main flow, not for helpers. */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    struct timespec ts = {l.ms / 1000, (long)(l.ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    l.fn(l.arg);
    return NULL;
}

/* Runs fn(arg) on a helper thread after ms milliseconds. */
static inline void later(int ms, void (*fn)(void *), void *arg)
{
    struct tr_later *l = malloc(sizeof *l);
    if (!l)
        abort();
    l->ms = ms;
    l->fn = fn;
    l->arg = arg;
    pthread_t t;
    if (pthread_create(&t, NULL, tr_later_body, l) != 0)
        abort();
    pthread_detach(t);
}

/* Common later actions. */
struct tr_write {
    int fd;
    const void *buf;
    size_t n;
};
static void tr_do_write(void *p)
{
    struct tr_write *w = p;
    size_t off = 0;
    while (off < w->n) {
        ssize_t r = write(w->fd, (const char *)w->buf + off, w->n - off);
        if (r <= 0)
            break;
        off += (size_t)r;
    }
}
/* Writes each of parts[] to fd, DELAY ms apart, in order, on one helper
 * (separate helpers could run out of order on a loaded machine). */
struct tr_parts {
    int fd;
    int n;
    const char *part[4];
};
static void tr_do_parts(void *p)
{
    struct tr_parts *w = p;
    for (int i = 0; i < w->n; i++) {
        if (i > 0) {
            struct timespec ts = {0, DELAY * 1000000L};
            nanosleep(&ts, NULL);
        }
        if (write(w->fd, w->part[i], strlen(w->part[i])) < 0)
            break;
    }
}
static void tr_do_close(void *p) { close((int)(intptr_t)p); }

/* Writes n bytes of buf to fd after ms (buf must stay alive). */
static inline void later_write(int ms, int fd, const void *buf, size_t n)
{
    struct tr_write *w = malloc(sizeof *w);
    if (!w)
        abort();
    w->fd = fd;
    w->buf = buf;
    w->n = n;
    later(ms, tr_do_write, w);
}

static inline void later_parts(int fd, const char *a, const char *b, const char *c)
{
    struct tr_parts *w = calloc(1, sizeof *w);
    if (!w)
        abort();
    w->fd = fd;
    w->part[w->n++] = a;
    if (b)
        w->part[w->n++] = b;
    if (c)
        w->part[w->n++] = c;
    later(DELAY, tr_do_parts, w);
}

static inline void later_close(int ms, int fd) { later(ms, tr_do_close, (void *)(intptr_t)fd); }

/* Reads and discards exactly n bytes from fd after ms; *done set after. */
struct tr_drain {
    int fd;
    size_t n;
    volatile size_t *got;
};
static void tr_do_drain(void *p)
{
    struct tr_drain *d = p;
    char buf[65536];
    size_t got = 0;
    while (got < d->n) {
        ssize_t r = read(d->fd, buf, sizeof buf < d->n - got ? sizeof buf : d->n - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    *d->got = got;
}
static inline void later_drain(int ms, int fd, size_t n, volatile size_t *got)
{
    struct tr_drain *d = malloc(sizeof *d);
    if (!d)
        abort();
    d->fd = fd;
    d->n = n;
    d->got = got;
    later(ms, tr_do_drain, d);
}

#endif
