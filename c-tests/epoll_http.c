/*
 * epoll_http PORT [BODY_BYTES]
 *
 * The same HTTP server as threaded_http (the request handling is
 * http_common.h), written the hand-tuned way: one thread, non-blocking
 * sockets, one edge-triggered epoll registration per connection (in, out and
 * rdhup, added once, never modified), per-connection state on the heap.
 * It is the practical limit for what corun tries to reach with blocking code.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_common.h"

struct conn {
    int fd;
    struct http_conn c;
    size_t have;       /* bytes in in[] */
    size_t sent;       /* bytes of out already written */
    struct http_out out;
    char in[HTTP_IN_CAP];
    char outbuf[HTTP_OUT_CAP];
};

static void drop(int ep, struct conn *k)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, k->fd, NULL);
    http_finish(k->fd);
    free(k);
}

/*
 * Makes all the progress possible without blocking. Edge-triggered: it must
 * stop only on EAGAIN (a new edge will come) or when the connection ends.
 */
static void progress(int ep, struct conn *k)
{
    for (;;) {
        /* 1. Write what is pending. */
        while (k->sent < k->out.len) {
            ssize_t w = write(k->fd, k->out.buf + k->sent, k->out.len - k->sent);
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EAGAIN)
                    return; /* EPOLLOUT edge will call again */
                drop(ep, k);
                return;
            }
            k->sent += (size_t)w;
        }
        k->out.len = k->sent = 0;
        if (k->c.close) {
            drop(ep, k);
            return;
        }
        /* 2. Answer the requests already buffered. */
        size_t u = http_consume(&k->c, k->in, k->have, &k->out);
        if (u) {
            memmove(k->in, k->in + u, k->have - u);
            k->have -= u;
        }
        if (k->out.len || k->c.close)
            continue;
        /* 3. Read more. */
        ssize_t r = read(k->fd, k->in + k->have, sizeof k->in - k->have);
        if (r > 0) {
            k->have += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            return; /* EPOLLIN edge will call again */
        drop(ep, k); /* EOF or error */
        return;
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PORT [BODY_BYTES]\n", argv[0]);
        return 2;
    }
    http_init(argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 128);
    signal(SIGPIPE, SIG_IGN);

    int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 65535)) {
        perror("bind/listen");
        return 1;
    }
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev)) {
        perror("epoll");
        return 1;
    }
    fprintf(stderr, "epoll_http: listening on 127.0.0.1:%s\n", argv[1]);
    struct epoll_event evs[512];
    int warned = 0;
    for (;;) {
        int n = epoll_wait(ep, evs, 512, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("epoll_wait");
            return 1;
        }
        for (int i = 0; i < n; i++) {
            struct conn *k = evs[i].data.ptr;
            if (k) {
                progress(ep, k);
                continue;
            }
            /* The listener (level-triggered): accept what is queued. */
            for (;;) {
                int fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK);
                if (fd < 0) {
                    if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS) {
                        if (!warned++)
                            perror("epoll_http: accept (retrying)");
                        break;
                    }
                    if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
                        continue;
                    break; /* EAGAIN */
                }
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                k = malloc(sizeof *k);
                if (!k) {
                    close(fd);
                    continue;
                }
                k->fd = fd;
                k->c.skip = 0;
                k->c.close = 0;
                k->have = k->sent = 0;
                k->out.buf = k->outbuf;
                k->out.len = 0;
                k->out.cap = sizeof k->outbuf;
                struct epoll_event ce = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = k};
                if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ce)) {
                    close(fd);
                    free(k);
                    continue;
                }
                /* ADD reports the current readiness (writable at least):
                 * progress() runs on the first epoll_wait. */
            }
        }
    }
}
