/*
 * threaded_http PORT [BODY_BYTES]
 *
 * An HTTP/1.1 keep-alive server written the plain, blocking way: one
 * pthread per connection (default attributes), blocking accept/read/write,
 * buffers on the thread's stack. It serves a static body of BODY_BYTES
 * (default 128) to GET and HEAD; the request handling is http_common.h,
 * shared with epoll_http.c. Listens on 127.0.0.1:PORT until killed.
 *
 * It knows nothing of corun: natively every connection costs a kernel
 * thread; under LD_PRELOAD=libcorun.so the same binary runs each thread as
 * a coroutine.
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

#include "http_common.h"

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void *serve(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char in[HTTP_IN_CAP];
    char outbuf[HTTP_OUT_CAP];
    struct http_out out = {outbuf, 0, sizeof outbuf};
    struct http_conn c = {0, 0};
    size_t have = 0;

    for (;;) {
        ssize_t r = read(fd, in + have, sizeof in - have);
        if (r == 0)
            break; /* the client closed */
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break; /* reset: this connection only */
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
                break; /* needs more input */
        }
        memmove(in, in + off, have - off);
        have -= off;
    }
done:
    http_finish(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PORT [BODY_BYTES]\n", argv[0]);
        return 2;
    }
    http_init(argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 128);
    signal(SIGPIPE, SIG_IGN);

    int ls = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 65535)) {
        perror("bind/listen");
        return 1;
    }
    fprintf(stderr, "threaded_http: listening on 127.0.0.1:%s\n", argv[1]);
    int warned = 0;
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS) {
                if (!warned++)
                    perror("threaded_http: accept (retrying)");
                usleep(10000);
                continue;
            }
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
                continue;
            perror("threaded_http: accept");
            return 1;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_t t;
        int e = pthread_create(&t, NULL, serve, (void *)(intptr_t)fd);
        if (e) {
            if (!warned++)
                fprintf(stderr, "threaded_http: pthread_create: %s (dropping connections)\n", strerror(e));
            close(fd);
            continue;
        }
        pthread_detach(t);
    }
}
