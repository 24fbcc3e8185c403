/* Loops of poll/ppoll/select that get an answer at once, waiting for
 * another thread: the descriptor stays ready until that thread reads it.
 * CPython's multiprocessing.Pool does this (its worker-handler thread
 * waits on the result pipe, readable until the result-handler thread
 * reads it, then polls another pipe with a zero timeout, in a loop).
 * The same loop on epoll_wait/epoll_pwait/epoll_pwait2 (a level-triggered
 * epoll set holding the pipe: an event loop that has a ready descriptor
 * it leaves to another thread).
 * Natively the kernel preempts the looping thread and the reader runs.
 * Under corun, with the reader homed on the looping thread's worker, the
 * loop never parked and the reader never ran: Pool.map hung. Each round
 * gives up after 10 s and says so instead of hanging.
 *
 * Last, test_ftplib's shape: a server thread loops on poll(POLLIN|POLLOUT)
 * of its connection, answered at once (writable), and answers each
 * request; the client (main, same worker) sends a request and waits for
 * the reply in read(), parked. Under corun the spinning server never let
 * its worker look at its netpoller, so the parked client was never woken
 * and never sent the request that ends the server's loop. */
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

static int fds[2];
static volatile int drained;
static int ep; /* an epoll set watching fds[0], level-triggered */

static void *drainer(void *arg)
{
    (void)arg;
    char c;
    if (read(fds[0], &c, 1) == 1)
        drained = 1;
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One poll of the read end in the way `how` names: 1 if readable. */
static int ready(const char *how)
{
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    if (how[0] == 'p' && how[1] == 'o' && how[4] == '0') /* poll0 */
        return poll(&p, 1, 0) == 1;
    if (how[0] == 'p' && how[1] == 'o') /* poll: 50 ms, returns at once while readable */
        return poll(&p, 1, 50) == 1;
    if (how[0] == 'e') {
        struct epoll_event ev;
        if (how[5] == '0') /* epoll0 */
            return epoll_wait(ep, &ev, 1, 0) == 1;
        if (how[6] == 'p' && how[11] == '2') { /* epoll_pwait2 */
            struct timespec ts = {0, 50 * 1000 * 1000};
            return epoll_pwait2(ep, &ev, 1, &ts, NULL) == 1;
        }
        if (how[6] == 'p') /* epoll_pwait */
            return epoll_pwait(ep, &ev, 1, 50, NULL) == 1;
        return epoll_wait(ep, &ev, 1, 50) == 1;
    }
    if (how[0] == 'p') { /* ppoll */
        struct timespec ts = {0, 50 * 1000 * 1000};
        return ppoll(&p, 1, &ts, NULL) == 1;
    }
    fd_set r;
    FD_ZERO(&r);
    FD_SET(fds[0], &r);
    struct timeval tv = {0, 50 * 1000};
    return select(fds[0] + 1, &r, NULL, NULL, &tv) == 1;
}

static int conn[2];

static void *spinning_server(void *arg)
{
    (void)arg;
    double start = now_s();
    int answered = 0;
    while (answered < 2 && now_s() - start < 10) {
        struct pollfd p = {.fd = conn[1], .events = POLLIN | POLLOUT};
        if (poll(&p, 1, 100) > 0 && (p.revents & POLLIN)) {
            char c;
            if (read(conn[1], &c, 1) == 1 && write(conn[1], &c, 1) == 1)
                answered++;
        }
    }
    return (void *)(long)answered;
}

static int ftplib_shape(void)
{
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, conn) != 0)
        return 0;
    struct timeval limit = {10, 0}; /* a reply that never comes fails the read */
    setsockopt(conn[0], SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    pthread_t t;
    pthread_create(&t, NULL, spinning_server, NULL);
    int ok = 1;
    for (int i = 0; i < 2; i++) {
        char c = (char)('a' + i), r = 0;
        ok &= write(conn[0], &c, 1) == 1 && read(conn[0], &r, 1) == 1 && r == c;
    }
    void *answered;
    pthread_join(t, &answered);
    return ok && (long)answered == 2;
}

int main(void)
{
    const char *hows[] = {"poll", "poll0", "ppoll", "select", "epoll_wait", "epoll0", "epoll_pwait", "epoll_pwait2"};
    if (pipe(fds) != 0)
        return 2;
    ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[0]};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev) != 0)
        return 2;
    int failed = 0;
    for (int i = 0; i < 8; i++) {
        drained = 0;
        if (write(fds[1], "x", 1) != 1)
            return 2;
        pthread_t t;
        pthread_create(&t, NULL, drainer, NULL);
        double start = now_s();
        long rounds = 0;
        while (!drained && now_s() - start < 10) {
            ready(hows[i]);
            rounds++;
        }
        if (drained) {
            pthread_join(t, NULL);
            printf("%s: the reader ran while this thread looped\n", hows[i]);
        } else {
            printf("%s: the reader never ran in 10 s (%ld calls)\n", hows[i], rounds);
            failed = 1;
            fflush(stdout);
            _exit(1); /* the reader is still blocked in read */
        }
    }
    printf("a client parked beside a spinning server: %s\n",
           ftplib_shape() ? "both replies came" : "no reply in 10 s");
    return failed;
}
