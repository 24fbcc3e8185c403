/*
 * co_http_deadline PORT DEADLINE_MS - an HTTP/1.1 server (keep-alive, GET)
 * on corun's C API in which every request runs under a cancel token with
 * a deadline: when it passes, whatever the handler waits in fails with
 * ECANCELED (a sleep, a hooked read, a scope of helpers) and the server
 * answers 504 at once, on the same connection.
 *
 *   /fast        200 "fast"
 *   /sleep/N     sleeps N ms: 200 "slept N", or 504 past the deadline
 *   /read        reads a socket nobody writes to: 504 at the deadline
 *   /scope/N     a scope of 3 coroutines sleeping N ms each: 200 or 504
 *
 * Runs until killed.
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
#include <sys/socket.h>
#include <unistd.h>

#include <corun.h>

static uint64_t deadline_ns;

struct req {
    char path[256];
    int status;
    char body[128];
};

static int sleeper(void *arg)
{
    return corun_sleep_ns((uint64_t)(uintptr_t)arg);
}

/* Runs under the request's token: any wait may fail with ECANCELED. */
static void *handle(void *arg)
{
    struct req *r = arg;
    unsigned long n = 0;
    int err = 0;
    if (!strcmp(r->path, "/fast")) {
        snprintf(r->body, sizeof r->body, "fast\n");
    } else if (sscanf(r->path, "/sleep/%lu", &n) == 1) {
        err = corun_sleep_ns(n * 1000000ull);
        snprintf(r->body, sizeof r->body, "slept %lu\n", n);
    } else if (!strcmp(r->path, "/read")) {
        int sp[2];
        char b;
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0) {
            if (read(sp[0], &b, 1) < 0)
                err = errno;
            close(sp[0]);
            close(sp[1]);
        }
        snprintf(r->body, sizeof r->body, "read\n");
    } else if (sscanf(r->path, "/scope/%lu", &n) == 1) {
        corun_scope_t *s = corun_scope_new(0); /* a child of the request's token */
        for (int i = 0; i < 3; i++)
            corun_scope_spawn(s, sleeper, (void *)(uintptr_t)(n * 1000000ull));
        err = corun_scope_wait(s);
        corun_scope_free(s);
        snprintf(r->body, sizeof r->body, "scope %lu\n", n);
    } else {
        r->status = 404;
        snprintf(r->body, sizeof r->body, "not found\n");
        return NULL;
    }
    if (err == ECANCELED) {
        r->status = 504;
        snprintf(r->body, sizeof r->body, "deadline exceeded\n");
    } else if (err) {
        r->status = 500;
        snprintf(r->body, sizeof r->body, "%s\n", strerror(err));
    }
    return NULL;
}

static void *serve(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[8192];
    size_t len = 0;
    for (;;) {
        char *end;
        while (!(end = memmem(buf, len, "\r\n\r\n", 4))) {
            if (len == sizeof buf)
                goto out;
            ssize_t n = read(fd, buf + len, sizeof buf - len);
            if (n <= 0)
                goto out;
            len += (size_t)n;
        }
        struct req r = {.status = 200};
        if (sscanf(buf, "GET %255s", r.path) != 1)
            goto out;
        corun_cancel_source_t *src = corun_cancel_source_new(corun_token_current(), deadline_ns);
        corun_run_under(corun_cancel_token(src), handle, &r, NULL);
        corun_cancel_source_free(src);
        const char *reason = r.status == 200 ? "OK" : r.status == 504 ? "Gateway Timeout" : "Error";
        char out[512];
        int k = snprintf(out, sizeof out,
                         "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n\r\n%s", r.status,
                         reason, strlen(r.body), r.body);
        if (write(fd, out, (size_t)k) != k)
            goto out;
        size_t used = (size_t)(end + 4 - buf);
        memmove(buf, buf + used, len - used);
        len -= used;
    }
out:
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s PORT DEADLINE_MS\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    deadline_ns = strtoull(argv[2], NULL, 10) * 1000000ull;
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&sa, sizeof sa) || listen(ls, 4096)) {
        perror("bind/listen");
        return 1;
    }
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE)
                corun_sleep_ns(10 * 1000000ull);
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        corun_co_t *co = corun_spawn(serve, (void *)(intptr_t)fd);
        if (co)
            corun_detach(co);
        else
            close(fd);
    }
}
