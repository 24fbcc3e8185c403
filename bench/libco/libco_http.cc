/*
 * libco_http PORT [BODY_BYTES] - libco's side of the wrk benchmark
 * (scripts/bench.sh): Tencent's libco, the C++ stackful-coroutine library,
 * serving threaded_http's exact bytes with the same request handling
 * (c-tests/http_common.h).
 *
 * Written the way libco's own example server is (example_echosvr.cpp):
 * each thread runs libco's event loop with an accepting coroutine and a
 * pool of connection coroutines that libco's system-call hooks
 * (co_enable_hook_sys) turn blocking `read`/`write` into waits on the
 * loop's epoll. A connection coroutine serves one connection at a time and
 * goes back to the pool when it ends (libco cannot free a coroutine from
 * inside itself). LIBCO_THREADS threads (default 1) each have a listening
 * socket of their own on the same port (SO_REUSEPORT), since libco's loop
 * and coroutines belong to one thread.
 *
 * libco's hooked read gives up after the socket's receive timeout (1 s by
 * default) with EAGAIN; an idle keep-alive connection must stay open, so
 * the timeout is set to an hour (libco's hook of setsockopt records it)
 * and EAGAIN is read as "wait again".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "co_routine.h"
#include "http_common.h"

int co_accept(int fd, struct sockaddr *addr, socklen_t *len);

namespace {

struct Conn {
    stCoRoutine_t *co;
    int fd;
    std::vector<Conn *> *idle;
};

struct Loop {
    int listen_fd;
    std::vector<Conn *> idle;
};

uint16_t g_port;

int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -1;
        }
        if (w == 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* threaded_http's serve(), with EAGAIN (libco's read timeout) retried. */
void serve(int fd)
{
    char in[HTTP_IN_CAP];
    char outbuf[HTTP_OUT_CAP];
    struct http_out out = {outbuf, 0, sizeof outbuf};
    struct http_conn c = {0, 0};
    size_t have = 0;

    for (;;) {
        ssize_t r = read(fd, in + have, sizeof in - have);
        if (r == 0)
            break;
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            break;
        }
        have += (size_t)r;
        size_t off = 0;
        for (;;) {
            size_t u = http_consume(&c, in + off, have - off, &out);
            off += u;
            int wrote = out.len > 0;
            if (wrote) {
                if (write_all(fd, out.buf, out.len) < 0)
                    goto done;
                out.len = 0;
            }
            if (c.close)
                goto done;
            if (u == 0 && !wrote)
                break;
        }
        memmove(in, in + off, have - off);
        have -= off;
    }
done:
    http_finish(fd);
}

void *conn_main(void *arg)
{
    Conn *c = static_cast<Conn *>(arg);
    co_enable_hook_sys();
    for (;;) {
        if (c->fd < 0) {
            c->idle->push_back(c);
            co_yield_ct();
            continue;
        }
        serve(c->fd);
        c->fd = -1;
    }
    return nullptr;
}

void *accept_main(void *arg)
{
    Loop *l = static_cast<Loop *>(arg);
    co_enable_hook_sys();
    int one = 1;
    struct timeval hour = {3600, 0};
    for (;;) {
        int fd = co_accept(l->listen_fd, nullptr, nullptr);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE)
                usleep(10000);
            struct pollfd pf = {l->listen_fd, POLLIN | POLLERR | POLLHUP, 0};
            co_poll(co_get_epoll_ct(), &pf, 1, 1000);
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &hour, sizeof hour);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &hour, sizeof hour);
        Conn *c;
        if (l->idle.empty()) {
            c = new Conn{nullptr, -1, &l->idle};
            co_create(&c->co, nullptr, conn_main, c);
            co_resume(c->co); /* runs to its first yield: now idle */
        }
        c = l->idle.back();
        l->idle.pop_back();
        c->fd = fd;
        co_resume(c->co);
    }
    return nullptr;
}

int listen_on(uint16_t port)
{
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(ls, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    struct sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 65535)) {
        perror("libco_http: bind/listen");
        exit(1);
    }
    return ls;
}

void *loop_thread(void *arg)
{
    Loop *l = static_cast<Loop *>(arg);
    stCoRoutine_t *acceptor;
    co_create(&acceptor, nullptr, accept_main, l);
    co_resume(acceptor);
    co_eventloop(co_get_epoll_ct(), nullptr, nullptr);
    return nullptr;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PORT [BODY_BYTES]\n", argv[0]);
        return 2;
    }
    http_init(argc > 2 ? (size_t)strtoul(argv[2], nullptr, 10) : 128);
    signal(SIGPIPE, SIG_IGN);
    g_port = (uint16_t)atoi(argv[1]);
    const char *t = getenv("LIBCO_THREADS");
    int threads = t ? atoi(t) : 1;
    if (threads < 1 || threads > 64) {
        fprintf(stderr, "libco_http: LIBCO_THREADS must be 1-64\n");
        return 2;
    }
    std::vector<pthread_t> ids(threads);
    for (int i = 0; i < threads; i++) {
        Loop *l = new Loop{listen_on(g_port), {}};
        if (pthread_create(&ids[i], nullptr, loop_thread, l)) {
            perror("libco_http: pthread_create");
            return 1;
        }
    }
    fprintf(stderr, "libco_http: listening on 127.0.0.1:%u, %d threads\n", g_port, threads);
    for (auto &id : ids)
        pthread_join(id, nullptr);
    return 0;
}
