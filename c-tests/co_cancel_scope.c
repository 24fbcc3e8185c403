/*
 * co_cancel_scope N
 *
 * A scope of N coroutines, a quarter each parked in read (a socketpair of
 * its own), accept (one listening socket), nanosleep (an hour) and
 * corun_chan_recv (one channel). Once all are parked, the scope is
 * cancelled: each call must fail with ECANCELED, and corun_scope_wait
 * must return. Prints the time from corun_scope_cancel to the return of
 * corun_scope_wait. KIND=0..3 in the environment parks them all in one
 * kind of call (read, accept, nanosleep, chan_recv), to see each alone.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#include <corun.h>

#include "co_check.h"

static atomic_int started, cancelled;
static int listener;
static corun_chan_t *chan;
static int (*pairs)[2];

static int member(void *arg)
{
    long i = (long)(intptr_t)arg;
    int r = 0, e = 0;
    atomic_fetch_add(&started, 1);
    switch (getenv("KIND") ? atoi(getenv("KIND")) : i % 4) {
    case 0: {
        char b[16];
        r = (int)read(pairs[i / 4][0], b, sizeof b);
        e = errno;
        break;
    }
    case 1:
        r = accept(listener, NULL, NULL);
        e = errno;
        break;
    case 2: {
        struct timespec ts = {.tv_sec = 3600};
        r = nanosleep(&ts, NULL);
        e = errno;
        break;
    }
    case 3: {
        int v;
        e = corun_chan_recv(chan, &v);
        r = e ? -1 : 0;
        break;
    }
    }
    if (r == -1 && e == ECANCELED)
        atomic_fetch_add(&cancelled, 1);
    else
        fprintf(stderr, "member %ld (kind %ld): r=%d errno %s\n", i, i % 4, r, strerror(e));
    return 0;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 10000;
    pairs = calloc((size_t)(n / 4 + 1), sizeof *pairs);
    for (long i = 0; i < n / 4 + 1; i++)
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, pairs[i]) == 0);
    listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(listener, (struct sockaddr *)&a, sizeof a) == 0 && listen(listener, 16) == 0);
    chan = corun_chan_new(sizeof(int), 0);
    corun_scope_t *s = corun_scope_new(0);
    CHECK(s);
    for (long i = 0; i < n; i++)
        CHECK_EQ(corun_scope_spawn(s, member, (void *)(intptr_t)i), 0);
    while (atomic_load(&started) < n)
        corun_sleep_ns(1 * MS);
    corun_sleep_ns(200 * MS); /* from "about to call" to parked */
    uint64_t t0 = co_now_ns();
    CHECK_EQ(corun_scope_cancel(s), 0);
    uint64_t t1 = co_now_ns();
    int r = corun_scope_wait(s);
    uint64_t dt = co_now_ns() - t0;
    CHECK_EQ(r, 0);
    CHECK_EQ(atomic_load(&cancelled), n);
    CHECK_EQ(corun_scope_cancel(s), EALREADY);
    corun_scope_free(s);
    printf("cancelled %ld coroutines (read, accept, nanosleep, chan_recv) in %.1f ms (the cancel call: %.1f ms)\n", n,
           dt / 1e6, (t1 - t0) / 1e6);
    return 0;
}
