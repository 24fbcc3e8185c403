/*
 * co_chan - every channel function and corun_select, between coroutines
 * on all workers and threads (pthread_create: coroutines by default,
 * kernel threads under CORUN_THREADS=native). Prints "co_chan: ok".
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include <corun.h>

#include "co_check.h"

static void *join_co(corun_co_t *co)
{
    void *r = NULL;
    CHECK_EQ(corun_join(co, &r), 0);
    return r;
}

/* ----------------------------------------------------------- basics */

static void *send_seq(void *arg)
{
    corun_chan_t *c = arg;
    for (int i = 0; i < 1000; i++)
        CHECK_EQ(corun_chan_send(c, &i), 0);
    CHECK_EQ(corun_chan_close(c), 0);
    return NULL;
}

static void basics(void)
{
    corun_chan_t *c = corun_chan_new(sizeof(int), 0);
    CHECK(c);
    corun_co_t *co = corun_spawn(send_seq, c);
    for (int i = 0; i < 1000; i++) {
        int v = -1;
        CHECK_EQ(corun_chan_recv(c, &v), 0);
        CHECK_EQ(v, i);
    }
    int v;
    CHECK_EQ(corun_chan_recv(c, &v), EPIPE);
    CHECK_EQ(corun_chan_send(c, &v), EPIPE);
    CHECK_EQ(corun_chan_close(c), EPIPE);
    join_co(co);
    corun_chan_free(c);

    c = corun_chan_new(sizeof(long), 3);
    long x = 0;
    CHECK_EQ(corun_chan_tryrecv(c, &x), EAGAIN);
    for (long i = 1; i <= 3; i++)
        CHECK_EQ(corun_chan_trysend(c, &i), 0);
    CHECK_EQ(corun_chan_trysend(c, &x), EAGAIN);
    CHECK_EQ(corun_chan_len(c), 3);
    CHECK_EQ(corun_chan_tryrecv(c, &x), 0);
    CHECK_EQ(x, 1);
    CHECK_EQ(corun_chan_recv(c, NULL), 0); /* discards 2 */
    CHECK_EQ(corun_chan_close(c), 0);
    CHECK_EQ(corun_chan_trysend(c, &x), EPIPE);
    CHECK_EQ(corun_chan_recv(c, &x), 0);
    CHECK_EQ(x, 3);
    CHECK_EQ(corun_chan_tryrecv(c, &x), EPIPE);
    corun_chan_free(c);

    /* timeouts */
    c = corun_chan_new(sizeof(int), 0);
    uint64_t t0 = co_now_ns();
    CHECK_EQ(corun_chan_recv_timeout(c, &v, 20 * MS), ETIMEDOUT);
    CHECK(co_now_ns() - t0 >= 20 * MS);
    t0 = co_now_ns();
    CHECK_EQ(corun_chan_send_timeout(c, &v, 10 * MS), ETIMEDOUT);
    CHECK(co_now_ns() - t0 >= 10 * MS);
    CHECK_EQ(corun_chan_trysend(c, &v), EAGAIN);

    /* invalid arguments */
    CHECK_EQ(corun_chan_send(NULL, &v), EINVAL);
    CHECK_EQ(corun_chan_recv(NULL, &v), EINVAL);
    CHECK_EQ(corun_chan_send(c, NULL), EINVAL);
    CHECK_EQ(corun_chan_close(NULL), EINVAL);
    CHECK_EQ(corun_chan_len(NULL), 0);
    corun_chan_free(NULL);
    corun_chan_free(c);
    errno = 0;
    CHECK(corun_chan_new(2u << 20, 1) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(corun_chan_new(1u << 20, SIZE_MAX / 2) == NULL && errno == ENOMEM);
    /* zero-size elements: signals */
    c = corun_chan_new(0, 1);
    CHECK_EQ(corun_chan_send(c, NULL), 0);
    CHECK_EQ(corun_chan_recv(c, NULL), 0);
    corun_chan_free(c);
}

/* ----------------------------------------------------------- select */

struct later {
    int fd;
    corun_chan_t *c;
    int v;
};

static void *write_later(void *arg)
{
    struct later *l = arg;
    corun_sleep_ns(10 * MS);
    if (l->fd >= 0)
        CHECK_EQ(write(l->fd, "x", 1), 1);
    if (l->c)
        CHECK_EQ(corun_chan_send(l->c, &l->v), 0);
    return NULL;
}

static void selects(void)
{
    corun_chan_t *a = corun_chan_new(sizeof(int), 1), *b = corun_chan_new(sizeof(int), 0);
    int p[2];
    CHECK(pipe(p) == 0);
    int x = 0, y = 0;
    size_t fired = 99;
    corun_sel_t s[3] = {
        {.op = CORUN_SEL_RECV, .chan = a, .elem = &x},
        {.op = CORUN_SEL_RECV, .chan = b, .elem = &y},
        {.op = CORUN_SEL_READ, .fd = p[0]},
    };
    CHECK_EQ(corun_select(s, 3, 0, &fired), EAGAIN);
    uint64_t t0 = co_now_ns();
    CHECK_EQ(corun_select(s, 3, 15 * MS, &fired), ETIMEDOUT);
    CHECK(co_now_ns() - t0 >= 15 * MS);
    /* woken by an fd, then by each channel */
    struct later l = {.fd = p[1], .c = NULL};
    corun_co_t *co = corun_spawn(write_later, &l);
    CHECK_EQ(corun_select(s, 3, -1, &fired), 0);
    CHECK_EQ(fired, 2);
    CHECK_EQ(s[2].err, 0);
    join_co(co);
    char ch;
    CHECK_EQ(read(p[0], &ch, 1), 1);
    struct later lb = {.fd = -1, .c = b, .v = 77};
    co = corun_spawn(write_later, &lb);
    CHECK_EQ(corun_select(s, 3, -1, &fired), 0);
    CHECK_EQ(fired, 1);
    CHECK_EQ(y, 77);
    join_co(co);
    int one = 5;
    CHECK_EQ(corun_chan_send(a, &one), 0);
    CHECK_EQ(corun_select(s, 3, -1, &fired), 0);
    CHECK_EQ(fired, 0);
    CHECK_EQ(x, 5);
    /* a send case into the buffer; a write case */
    int v = 9;
    corun_sel_t w[2] = {{.op = CORUN_SEL_SEND, .chan = a, .elem = &v}, {.op = CORUN_SEL_SEND, .chan = b, .elem = &v}};
    CHECK_EQ(corun_select(w, 2, -1, &fired), 0);
    CHECK_EQ(fired, 0);
    CHECK_EQ(corun_chan_recv(a, &x), 0);
    CHECK_EQ(x, 9);
    corun_sel_t wr = {.op = CORUN_SEL_WRITE, .fd = p[1]};
    CHECK_EQ(corun_select(&wr, 1, -1, &fired), 0);
    /* closed channel, invalid fd */
    CHECK_EQ(corun_chan_close(b), 0);
    CHECK_EQ(corun_select(s, 2, -1, &fired), 0);
    CHECK_EQ(fired, 1);
    CHECK_EQ(s[1].err, EPIPE);
    int dead[2];
    CHECK(pipe(dead) == 0);
    close(dead[0]);
    close(dead[1]);
    corun_sel_t bad = {.op = CORUN_SEL_READ, .fd = dead[0]};
    CHECK_EQ(corun_select(&bad, 1, -1, &fired), 0);
    CHECK_EQ(bad.err, EBADF);
    /* invalid cases */
    corun_sel_t inv = {.op = 42};
    CHECK_EQ(corun_select(&inv, 1, 0, NULL), EINVAL);
    CHECK_EQ(corun_select(NULL, 2, 0, NULL), EINVAL);
    CHECK_EQ(corun_select(NULL, 0, 0, NULL), EAGAIN);
    CHECK_EQ(corun_select(NULL, 0, 2 * MS, NULL), ETIMEDOUT);
    close(p[0]);
    close(p[1]);
    corun_chan_free(a);
    corun_chan_free(b);
}

/* ------------------------------------- coroutines and threads mixed */

enum { PRODUCERS = 4, PER = 20000 };
static atomic_long total;
static atomic_int counts[PRODUCERS * PER];

static void *produce(void *arg)
{
    corun_chan_t *c = ((corun_chan_t **)arg)[0];
    int base = (int)(intptr_t)((corun_chan_t **)arg)[1];
    for (int i = 0; i < PER; i++) {
        int v = base * PER + i;
        CHECK_EQ(corun_chan_send(c, &v), 0);
    }
    return NULL;
}

static void *consume(void *arg)
{
    corun_chan_t *c = arg;
    int v;
    while (corun_chan_recv(c, &v) == 0) {
        atomic_fetch_add(&counts[v], 1);
        atomic_fetch_add(&total, 1);
    }
    return NULL;
}

/* Producers are pthreads (threads), consumers coroutines; then the other
 * way round; both through an unbuffered and a buffered channel. */
static void mixed(size_t cap, int threads_produce)
{
    corun_chan_t *c = corun_chan_new(sizeof(int), cap);
    atomic_store(&total, 0);
    memset(counts, 0, sizeof counts);
    corun_chan_t *args[PRODUCERS][2];
    pthread_t th[PRODUCERS];
    corun_co_t *co[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++) {
        args[i][0] = c;
        args[i][1] = (corun_chan_t *)(intptr_t)i;
        if (threads_produce) {
            CHECK(pthread_create(&th[i], NULL, produce, args[i]) == 0);
            co[i] = corun_spawn(consume, c);
        } else {
            co[i] = corun_spawn(produce, args[i]);
            CHECK(pthread_create(&th[i], NULL, consume, c) == 0);
        }
    }
    for (int i = 0; i < PRODUCERS; i++) {
        if (threads_produce)
            CHECK(pthread_join(th[i], NULL) == 0);
        else
            join_co(co[i]);
    }
    CHECK_EQ(corun_chan_close(c), 0);
    for (int i = 0; i < PRODUCERS; i++) {
        if (threads_produce)
            join_co(co[i]);
        else
            CHECK(pthread_join(th[i], NULL) == 0);
    }
    CHECK_EQ(atomic_load(&total), PRODUCERS * PER);
    for (int i = 0; i < PRODUCERS * PER; i++)
        CHECK_EQ(atomic_load(&counts[i]), 1);
    corun_chan_free(c);
}

/* A thread blocked in select is completed by a coroutine. */
static void *thread_select(void *arg)
{
    corun_chan_t *c = arg;
    int v = 0;
    size_t fired;
    corun_sel_t s = {.op = CORUN_SEL_RECV, .chan = c, .elem = &v};
    CHECK_EQ(corun_select(&s, 1, -1, &fired), 0);
    return (void *)(intptr_t)v;
}

int main(void)
{
    basics();
    selects();
    mixed(0, 1);
    mixed(0, 0);
    mixed(16, 1);
    mixed(16, 0);
    corun_chan_t *c = corun_chan_new(sizeof(int), 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, thread_select, c) == 0);
    int v = 1234;
    CHECK_EQ(corun_chan_send(c, &v), 0);
    void *r;
    CHECK(pthread_join(t, &r) == 0);
    CHECK_EQ((intptr_t)r, 1234);
    corun_chan_free(c);
    printf("co_chan: ok\n");
    return 0;
}
