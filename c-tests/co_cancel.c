/*
 * co_cancel - cancel sources, tokens, callbacks, deadlines, run_under,
 * spawn_under and scopes; and every hooked blocking call of a coroutine
 * under a cancelled token failing with ECANCELED, both when it is parked
 * at the cancellation and when it starts after it. Prints "co_cancel: ok".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <corun.h>

#include "co_check.h"

static atomic_int calls;
static void count(void *arg)
{
    atomic_fetch_add(&calls, (int)(intptr_t)arg);
}

static void sources(void)
{
    corun_cancel_source_t *s = corun_cancel_source_new(NULL, 0);
    const corun_token_t *t = corun_cancel_token(s);
    CHECK(s && t);
    CHECK_EQ(corun_token_cancelled(t), 0);
    uint64_t r1 = 0, r2 = 0, r3 = 1;
    CHECK_EQ(corun_token_register(t, count, (void *)1, &r1), 0);
    CHECK_EQ(corun_token_register(t, count, (void *)100, &r2), 0);
    CHECK(r1 && r2 && r1 != r2);
    CHECK_EQ(corun_token_unregister(t, r2), 0);
    CHECK_EQ(corun_token_unregister(t, r2), ENOENT);
    corun_cancel_source_t *child = corun_cancel_source_new(t, 0);
    CHECK_EQ(corun_cancel(s), 0);
    CHECK_EQ(corun_cancel(s), EALREADY);
    CHECK_EQ(atomic_load(&calls), 1);
    CHECK_EQ(corun_token_cancelled(t), 1);
    CHECK_EQ(corun_token_cancelled(corun_cancel_token(child)), 1);
    CHECK_EQ(corun_token_register(t, count, (void *)10, &r3), 0);
    CHECK_EQ(r3, 0);
    CHECK_EQ(atomic_load(&calls), 11); /* ran at once, here */
    CHECK_EQ(corun_token_unregister(t, r1), ENOENT);
    corun_cancel_source_free(child);
    corun_cancel_source_free(s);
    CHECK_EQ(corun_cancel(NULL), EINVAL);
    CHECK_EQ(corun_token_cancelled(NULL), 0);
    CHECK_EQ(corun_token_register(NULL, count, NULL, NULL), EINVAL);
    CHECK_EQ(corun_token_unregister(NULL, 1), EINVAL);
    corun_cancel_source_free(NULL);
    CHECK(corun_token_current() == NULL);
}

/* ------------------------------------------ each blocking call, cancelled */

static int sp[2], full[2], pp[2], lsock, epfd;
static struct sockaddr_un unaddr = {.sun_family = AF_UNIX};
static corun_chan_t *chan, *chan_out, *chan_sel; /* nobody on the other side */
static corun_mutex_t mu = CORUN_MUTEX_INIT;
static corun_cond_t cv = CORUN_COND_INIT;
static corun_sem_t sem = CORUN_SEM_INIT(0);
static corun_wg_t wg = CORUN_WG_INIT;

/* One blocking call of kind k: the value and errno to check. */
static int call(int k, int *err)
{
    char buf[64] = {0};
    int r = 0;
    errno = 0;
    switch (k) {
    case 0: r = (int)read(sp[0], buf, sizeof buf); break;
    case 1: r = (int)recv(sp[0], buf, sizeof buf, 0); break;
    case 2: r = (int)write(full[0], buf, sizeof buf); break;
    case 3: r = accept(lsock, NULL, NULL); break;
    case 4: {
        struct pollfd p = {.fd = pp[0], .events = POLLIN};
        r = poll(&p, 1, -1);
        break;
    }
    case 5: {
        fd_set s;
        FD_ZERO(&s);
        FD_SET(pp[0], &s);
        r = select(pp[0] + 1, &s, NULL, NULL, NULL);
        break;
    }
    case 6: {
        struct epoll_event ev;
        r = epoll_wait(epfd, &ev, 1, -1);
        break;
    }
    case 7: {
        struct timespec ts = {.tv_sec = 3600};
        r = nanosleep(&ts, NULL);
        break;
    }
    case 8: r = usleep(999999); break;
    case 9: {
        unsigned left = sleep(3600);
        r = left > 3500 ? -1 : 0;
        break;
    }
    case 10: {
        struct timespec ts = {.tv_sec = 3600};
        r = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
        *err = r;
        return r ? -1 : 0;
    }
    case 11: *err = corun_sleep_ns(3600ull * 1000 * MS); return *err ? -1 : 0;
    case 12: *err = corun_chan_recv(chan, buf); return *err ? -1 : 0;
    case 13: *err = corun_chan_send(chan_out, buf); return *err ? -1 : 0;
    case 14: {
        corun_sel_t s[2] = {{.op = CORUN_SEL_RECV, .chan = chan_sel, .elem = buf}, {.op = CORUN_SEL_READ, .fd = pp[0]}};
        *err = corun_select(s, 2, -1, NULL);
        return *err ? -1 : 0;
    }
    case 15:
        corun_mutex_lock(&mu);
        *err = corun_cond_wait(&cv, &mu);
        CHECK_EQ(corun_mutex_trylock(&mu), EBUSY); /* held on return */
        corun_mutex_unlock(&mu);
        return *err ? -1 : 0;
    case 16: *err = corun_sem_wait(&sem); return *err ? -1 : 0;
    case 17: *err = corun_wg_wait(&wg); return *err ? -1 : 0;
    case 18: {
        /* AF_UNIX connect to a listener whose backlog is full waits */
        int c = socket(AF_UNIX, SOCK_STREAM, 0);
        r = connect(c, (struct sockaddr *)&unaddr, sizeof unaddr);
        *err = errno;
        close(c);
        return r;
    }
    }
    *err = errno;
    return r;
}
enum { KINDS = 19 };

static atomic_int parked;
static void *blocked_call(void *arg)
{
    int k = (int)(intptr_t)arg, err = 0;
    atomic_fetch_add(&parked, 1);
    int r = call(k, &err);
    if (r != -1 || err != ECANCELED) {
        fprintf(stderr, "call %d, parked: r=%d err=%s\n", k, r, strerror(err));
        exit(1);
    }
    /* Under a cancelled token the same call fails at once. */
    uint64_t t0 = co_now_ns();
    r = call(k, &err);
    if (r != -1 || err != ECANCELED || co_now_ns() - t0 > 500 * MS) {
        fprintf(stderr, "call %d, after: r=%d err=%s\n", k, r, strerror(err));
        exit(1);
    }
    return NULL;
}

static void hooked_calls(void)
{
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, full) == 0);
    int sz = 4096;
    setsockopt(full[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    char junk[4096] = {0};
    while (send(full[0], junk, sizeof junk, MSG_DONTWAIT) > 0) {
    }
    CHECK(pipe(pp) == 0);
    lsock = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(lsock, (struct sockaddr *)&a, sizeof a) == 0 && listen(lsock, 4) == 0);
    epfd = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN};
    CHECK(epoll_ctl(epfd, EPOLL_CTL_ADD, pp[0], &ev) == 0);
    /* An abstract AF_UNIX listener, its backlog filled by non-blocking connects. */
    snprintf(unaddr.sun_path + 1, sizeof unaddr.sun_path - 1, "co_cancel.%d", (int)getpid());
    int ul = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(bind(ul, (struct sockaddr *)&unaddr, sizeof unaddr) == 0 && listen(ul, 0) == 0);
    for (int i = 0; i < 64; i++) {
        int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (connect(c, (struct sockaddr *)&unaddr, sizeof unaddr) != 0) {
            CHECK(errno == EAGAIN);
            close(c);
            break;
        }
    }
    chan = corun_chan_new(64, 0);
    chan_out = corun_chan_new(64, 0);
    chan_sel = corun_chan_new(64, 0);
    CHECK_EQ(corun_wg_add(&wg, 1), 0);

    corun_cancel_source_t *s = corun_cancel_source_new(NULL, 0);
    corun_co_t *co[KINDS];
    for (int k = 0; k < KINDS; k++)
        co[k] = corun_spawn_under(corun_cancel_token(s), blocked_call, (void *)(intptr_t)k);
    while (atomic_load(&parked) < KINDS)
        corun_sleep_ns(1 * MS);
    corun_sleep_ns(50 * MS);
    uint64_t t0 = co_now_ns();
    CHECK_EQ(corun_cancel(s), 0);
    for (int k = 0; k < KINDS; k++)
        CHECK_EQ(corun_join(co[k], NULL), 0);
    CHECK(co_now_ns() - t0 < 1000 * MS);
    corun_cancel_source_free(s);

    /* A call that need not wait completes, token or not; nothing else
     * (outside the token) was disturbed. */
    CHECK_EQ(write(sp[1], "hi", 2), 2);
    corun_cancel_source_t *dead = corun_cancel_source_new(NULL, 0);
    corun_cancel(dead);
    CHECK(corun_spawn_under(corun_cancel_token(dead), NULL, NULL) == NULL && errno == EINVAL);
    void *res = NULL;
    static char got[8];
    CHECK_EQ(corun_run_under(corun_cancel_token(dead), NULL, NULL, &res), EINVAL);
    corun_cancel_source_free(dead);
    CHECK_EQ(read(sp[0], got, sizeof got), 2);
    CHECK_EQ(corun_sleep_ns(1 * MS), 0);
}

/* ------------------------------------------------------------ deadline */

static void *read_forever(void *arg)
{
    (void)arg;
    char b;
    int r = (int)read(sp[0], &b, 1);
    return (void *)(intptr_t)(r == -1 ? errno : 0);
}

static void deadline(void)
{
    atomic_store(&calls, 0);
    /* t0 before the source: the 30 ms run from its creation (taken after,
     * a preemption in between made dt look shorter than the deadline). */
    uint64_t t0 = co_now_ns();
    corun_cancel_source_t *s = corun_cancel_source_new(NULL, 30 * MS);
    CHECK_EQ(corun_token_register(corun_cancel_token(s), count, (void *)1, NULL), 0);
    corun_co_t *co = corun_spawn_under(corun_cancel_token(s), read_forever, NULL);
    void *r;
    CHECK_EQ(corun_join(co, &r), 0);
    uint64_t dt = co_now_ns() - t0;
    CHECK_EQ((intptr_t)r, ECANCELED);
    CHECK(dt >= 30 * MS && dt < 1000 * MS);
    /* The deadline thread runs the callback as the waits fail: soon. */
    for (int i = 0; i < 1000 && atomic_load(&calls) == 0; i++)
        corun_sleep_ns(1 * MS);
    CHECK_EQ(atomic_load(&calls), 1);
    CHECK_EQ(corun_token_cancelled(corun_cancel_token(s)), 1);
    corun_cancel_source_free(s);
    /* A deadline met: freeing the source forgets it. */
    s = corun_cancel_source_new(NULL, 3600ull * 1000 * MS);
    corun_cancel_source_free(s);
}

/* ---------------------------------------------------------- run_under */

static void *sleepy(void *arg)
{
    CHECK(corun_token_current() == arg);
    return (void *)(intptr_t)corun_sleep_ns(3600ull * 1000 * MS);
}

static void run_under(void)
{
    corun_cancel_source_t *s = corun_cancel_source_new(NULL, 0);
    const corun_token_t *t = corun_cancel_token(s);
    corun_cancel(s);
    void *r = NULL;
    CHECK_EQ(corun_run_under(t, sleepy, (void *)t, &r), 0);
    CHECK_EQ((intptr_t)r, ECANCELED);
    CHECK(corun_token_current() == NULL);
    CHECK_EQ(corun_sleep_ns(1 * MS), 0); /* back to no token */
    corun_cancel_source_free(s);
}

/* -------------------------------------------------------------- scopes */

static int fail_soon(void *arg)
{
    corun_sleep_ns(10 * MS);
    return (int)(intptr_t)arg;
}

static atomic_int saw_cancel;
static int wait_long(void *arg)
{
    (void)arg;
    int r = corun_sleep_ns(3600ull * 1000 * MS);
    if (r == ECANCELED)
        atomic_fetch_add(&saw_cancel, 1);
    return r;
}

static int inner_scope(void *arg)
{
    (void)arg;
    corun_scope_t *in = corun_scope_new(0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(corun_scope_spawn(in, wait_long, NULL), 0);
    int r = corun_scope_wait(in);
    corun_scope_free(in);
    return r;
}

static void scopes(void)
{
    corun_scope_t *s = corun_scope_new(0);
    CHECK(corun_scope_token(s) != NULL);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(corun_scope_spawn(s, wait_long, NULL), 0);
    CHECK_EQ(corun_scope_spawn(s, inner_scope, NULL), 0); /* 3 more, nested */
    CHECK_EQ(corun_scope_spawn(s, fail_soon, (void *)(intptr_t)EIO), 0);
    CHECK_EQ(corun_scope_spawn(s, NULL, NULL), EINVAL);
    CHECK_EQ(corun_scope_wait(s), EIO); /* the first error wins */
    CHECK_EQ(atomic_load(&saw_cancel), 7);
    CHECK_EQ(corun_scope_cancel(s), EALREADY);
    corun_scope_free(s);

    /* a deadline; free cancels and joins what still runs */
    atomic_store(&saw_cancel, 0);
    uint64_t t0 = co_now_ns();
    s = corun_scope_new(20 * MS);
    CHECK_EQ(corun_scope_spawn(s, wait_long, NULL), 0);
    CHECK_EQ(corun_scope_wait(s), ECANCELED);
    CHECK(co_now_ns() - t0 >= 20 * MS);
    corun_scope_free(s);
    s = corun_scope_new(0);
    CHECK_EQ(corun_scope_spawn(s, wait_long, NULL), 0);
    CHECK_EQ(corun_scope_spawn(s, fail_soon, NULL), 0);
    corun_scope_free(s);
    CHECK_EQ(atomic_load(&saw_cancel), 2);
    /* all succeed */
    s = corun_scope_new(0);
    for (int i = 0; i < 10; i++)
        CHECK_EQ(corun_scope_spawn(s, fail_soon, NULL), 0);
    CHECK_EQ(corun_scope_wait(s), 0);
    corun_scope_free(s);
    CHECK_EQ(corun_scope_wait(NULL), EINVAL);
    CHECK_EQ(corun_scope_cancel(NULL), EINVAL);
    corun_scope_free(NULL);
}

int main(void)
{
    sources();
    hooked_calls();
    deadline();
    run_under();
    scopes();
    printf("co_cancel: ok\n");
    return 0;
}
