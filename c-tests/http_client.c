/*
 * http_client - a byte-checking client for threaded_http and epoll_http.
 *
 *   http_client check PORT BODY_BYTES [CONNS]
 *       Runs the protocol cases below against 127.0.0.1:PORT, then CONNS
 *       (default 200) concurrent connections sending random pipelined
 *       requests split at random bytes. Every byte of every reply is
 *       compared with the reply built here, independently of the server's
 *       code. Prints one line per case; exits 1 at the first failure.
 *   http_client idle PORT N BODY_BYTES
 *       Opens N keep-alive connections, checks one reply on each, prints
 *       "idle: N connections open" and then keeps them open until killed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static int port;
static size_t body_len;

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "http_client: FAIL: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static char body_byte(size_t i)
{
    static const char a[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    return a[i % 62];
}

/* A growable byte string. */
struct str {
    char *p;
    size_t n, cap;
};

static void put(struct str *s, const char *b, size_t n)
{
    if (s->n + n > s->cap) {
        s->cap = (s->n + n) * 2 + 64;
        s->p = realloc(s->p, s->cap);
        if (!s->p)
            die("out of memory");
    }
    memcpy(s->p + s->n, b, n);
    s->n += n;
}

static void puts_(struct str *s, const char *z) { put(s, z, strlen(z)); }

enum { KEEP, CLOSE, KEEP10 }; /* no Connection header, close, keep-alive */

static const char *conn_hdr(int mode)
{
    return mode == CLOSE ? "Connection: close\r\n" : mode == KEEP10 ? "Connection: keep-alive\r\n" : "";
}

/* The exact reply expected for GET (head=0) or HEAD (head=1). */
static void expect_ok(struct str *s, int head, int mode)
{
    char h[256];
    snprintf(h, sizeof h,
             "HTTP/1.1 200 OK\r\nServer: corun-bench\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n%s\r\n",
             body_len, conn_hdr(mode));
    puts_(s, h);
    if (!head)
        for (size_t i = 0; i < body_len; i++) {
            char c = body_byte(i);
            put(s, &c, 1);
        }
}

static void expect_err(struct str *s, const char *status, const char *extra, int mode)
{
    char h[256];
    snprintf(h, sizeof h, "HTTP/1.1 %s\r\nServer: corun-bench\r\n%sContent-Length: 0\r\n%s\r\n", status, extra,
             conn_hdr(mode));
    puts_(s, h);
}

static int dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        die("socket: %s", strerror(errno));
    struct timeval tv = {.tv_sec = 20};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a))
        die("connect: %s", strerror(errno));
    return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            die("write: %s", strerror(errno));
        }
        p += w;
        n -= (size_t)w;
    }
}

static void send_z(int fd, const char *z) { send_all(fd, z, strlen(z)); }

/* Reads exactly e->n bytes and compares each with e. */
static void expect(int fd, const struct str *e, const char *what)
{
    char *got = malloc(e->n + 1);
    size_t have = 0;
    while (have < e->n) {
        ssize_t r = read(fd, got + have, e->n - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            die("%s: %s after %zu of %zu reply bytes", what, r == 0 ? "EOF" : strerror(errno), have, e->n);
        have += (size_t)r;
    }
    for (size_t i = 0; i < e->n; i++)
        if (got[i] != e->p[i]) {
            size_t s = i > 20 ? i - 20 : 0;
            die("%s: byte %zu differs: got \"%.*s\" expected \"%.*s\"", what, i, (int)(e->n - s < 40 ? e->n - s : 40),
                got + s, (int)(e->n - s < 40 ? e->n - s : 40), e->p + s);
        }
    free(got);
}

static void expect_eof(int fd, const char *what)
{
    char c;
    ssize_t r;
    do
        r = read(fd, &c, 1);
    while (r < 0 && errno == EINTR);
    if (r != 0)
        die("%s: expected the server to close, got %s", what, r > 0 ? "more bytes" : strerror(errno));
}

static void ok(const char *what) { printf("ok: %s\n", what); }

#define GET "GET /index.html HTTP/1.1\r\nHost: localhost\r\nUser-Agent: http_client\r\n\r\n"
#define HEAD "HEAD / HTTP/1.1\r\nHost: localhost\r\n\r\n"

static void case_keepalive(void)
{
    int fd = dial();
    struct str e = {0};
    expect_ok(&e, 0, KEEP);
    for (int i = 0; i < 3; i++) {
        send_z(fd, GET);
        expect(fd, &e, "keep-alive GET");
    }
    e.n = 0;
    expect_ok(&e, 1, KEEP);
    send_z(fd, HEAD);
    expect(fd, &e, "HEAD");
    close(fd);
    free(e.p);
    ok("3 keep-alive GETs and a HEAD on one connection");
}

static void case_pipelined(void)
{
    int fd = dial();
    struct str req = {0}, e = {0};
    for (int i = 0; i < 100; i++) {
        int head = i % 7 == 3;
        puts_(&req, head ? HEAD : GET);
        expect_ok(&e, head, KEEP);
    }
    send_all(fd, req.p, req.n);
    expect(fd, &e, "100 pipelined requests");
    close(fd);
    free(req.p);
    free(e.p);
    ok("100 pipelined requests in one write (replies span several server writes)");
}

static void case_partial(void)
{
    int fd = dial();
    struct str e = {0};
    expect_ok(&e, 0, KEEP);
    const char *r = GET;
    for (size_t i = 0; i < strlen(r); i++) {
        send_all(fd, r + i, 1);
        usleep(500);
    }
    expect(fd, &e, "request sent byte by byte");
    /* Two requests, the cut inside the second's terminator. */
    struct str two = {0};
    puts_(&two, GET);
    puts_(&two, GET);
    send_all(fd, two.p, two.n - 2);
    usleep(20000);
    send_all(fd, two.p + two.n - 2, 2);
    expect(fd, &e, "1st of a split pair");
    expect(fd, &e, "2nd of a split pair");
    close(fd);
    free(e.p);
    free(two.p);
    ok("request sent byte by byte; pair split inside the blank line");
}

static void case_versions(void)
{
    struct str e = {0};
    int fd = dial();
    send_z(fd, "GET / HTTP/1.0\r\n\r\n");
    expect_ok(&e, 0, CLOSE);
    expect(fd, &e, "HTTP/1.0");
    expect_eof(fd, "HTTP/1.0 without keep-alive");
    close(fd);

    fd = dial();
    e.n = 0;
    expect_ok(&e, 0, KEEP10);
    send_z(fd, "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
    expect(fd, &e, "HTTP/1.0 keep-alive");
    send_z(fd, "GET / HTTP/1.0\r\nconnection: keep-alive\r\n\r\n");
    expect(fd, &e, "HTTP/1.0 keep-alive, 2nd");
    close(fd);

    fd = dial();
    e.n = 0;
    expect_ok(&e, 0, KEEP);
    expect_ok(&e, 0, CLOSE);
    send_z(fd, GET "GET / HTTP/1.1\r\nconnection: foo, CLOSE\r\n\r\n" GET);
    expect(fd, &e, "Connection: close");
    expect_eof(fd, "after Connection: close (the pipelined 3rd request is not answered)");
    close(fd);
    free(e.p);
    ok("HTTP/1.0 closes, HTTP/1.0 keep-alive stays, Connection: close closes");
}

static void case_bodies(void)
{
    int fd = dial();
    struct str e = {0};
    expect_err(&e, "405 Method Not Allowed", "Allow: GET, HEAD\r\n", KEEP);
    expect_ok(&e, 0, KEEP);
    send_z(fd, "POST /form HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello");
    usleep(10000);
    send_z(fd, " world" GET);
    expect(fd, &e, "POST body skipped, then GET");
    close(fd);
    free(e.p);
    ok("POST gets 405, its split body is skipped, the next request is answered");
}

static void case_bad(void)
{
    static const char *bad[] = {"BLAH\r\n\r\n", "GET / HTTP/2.0\r\n\r\n", "GET /\r\n\r\n",
                                "GET / HTTP/1.1\r\nNoColonHere\r\n\r\n",
                                "GET / HTTP/1.1\r\nContent-Length: 12x\r\n\r\n", " GET / HTTP/1.1\r\n\r\n"};
    struct str e = {0}, okr = {0};
    expect_ok(&okr, 0, KEEP);
    int good = dial();
    send_z(good, GET);
    expect(good, &okr, "before the bad requests");
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int fd = dial();
        e.n = 0;
        expect_err(&e, "400 Bad Request", "", CLOSE);
        send_z(fd, bad[i]);
        expect(fd, &e, bad[i]);
        expect_eof(fd, "after 400");
        close(fd);
        send_z(good, GET);
        expect(good, &okr, "another connection after a bad request");
    }
    int fd = dial();
    e.n = 0;
    expect_err(&e, "501 Not Implemented", "", CLOSE);
    send_z(fd, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
    expect(fd, &e, "chunked");
    expect_eof(fd, "after 501");
    close(fd);

    fd = dial();
    struct str big = {0};
    puts_(&big, "GET / HTTP/1.1\r\nX-Big: ");
    while (big.n < 9000)
        puts_(&big, "aaaaaaaaaaaaaaaa");
    send_all(fd, big.p, big.n);
    e.n = 0;
    expect_err(&e, "431 Request Header Fields Too Large", "", CLOSE);
    expect(fd, &e, "9 KB of header");
    expect_eof(fd, "after 431");
    close(fd);
    send_z(good, GET);
    expect(good, &okr, "the good connection at the end");
    close(good);
    free(e.p);
    free(okr.p);
    free(big.p);
    ok("malformed requests get 400, chunked 501, huge headers 431, each closes; another connection is unaffected");
}

/* Concurrent connections: random pipelines, random splits, a few bad. */
struct worker {
    unsigned seed;
    int rounds;
    pthread_barrier_t *start;
};

static unsigned rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffffff;
}

static void *conc(void *arg)
{
    struct worker *w = arg;
    unsigned s = w->seed;
    int fd = dial();
    pthread_barrier_wait(w->start); /* every connection is open at once */
    struct str req = {0}, e = {0};
    int bad_at = rnd(&s) % 10 == 0 ? (int)(rnd(&s) % (unsigned)w->rounds) : -1;
    for (int r = 0; r < w->rounds; r++) {
        req.n = e.n = 0;
        int k = 1 + (int)(rnd(&s) % 5);
        for (int i = 0; i < k; i++) {
            switch (rnd(&s) % 4) {
            case 0:
                puts_(&req, HEAD);
                expect_ok(&e, 1, KEEP);
                break;
            case 1:
                puts_(&req, "PUT /x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
                expect_err(&e, "405 Method Not Allowed", "Allow: GET, HEAD\r\n", KEEP);
                break;
            default:
                puts_(&req, GET);
                expect_ok(&e, 0, KEEP);
            }
        }
        if (r == bad_at) {
            puts_(&req, "GET / HTTP/1.1\r\nBroken header\r\n\r\n");
            expect_err(&e, "400 Bad Request", "", CLOSE);
        }
        size_t off = 0;
        while (off < req.n) {
            size_t c = 1 + rnd(&s) % (req.n - off);
            send_all(fd, req.p + off, c);
            off += c;
            if (rnd(&s) % 4 == 0)
                usleep(rnd(&s) % 2000);
        }
        expect(fd, &e, "concurrent pipeline");
        if (r == bad_at) {
            expect_eof(fd, "concurrent bad request");
            break;
        }
    }
    close(fd);
    free(req.p);
    free(e.p);
    return NULL;
}

static void case_concurrent(int conns)
{
    pthread_t *t = calloc((size_t)conns, sizeof *t);
    struct worker *w = calloc((size_t)conns, sizeof *w);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)conns);
    for (int i = 0; i < conns; i++) {
        w[i].seed = 7919u * (unsigned)i + 17u;
        w[i].rounds = 20;
        w[i].start = &start;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 256 * 1024);
        if (pthread_create(&t[i], &a, conc, &w[i]))
            die("pthread_create");
        pthread_attr_destroy(&a);
    }
    for (int i = 0; i < conns; i++)
        pthread_join(t[i], NULL);
    char m[160];
    snprintf(m, sizeof m,
             "%d concurrent connections x 20 rounds of 1-5 pipelined requests split at random bytes, "
             "~10%% ending in a bad request",
             conns);
    ok(m);
    free(t);
    free(w);
}

static void idle(int n)
{
    int *fds = calloc((size_t)n, sizeof *fds);
    struct str e = {0};
    expect_ok(&e, 0, KEEP);
    for (int i = 0; i < n; i++) {
        fds[i] = dial();
        send_z(fds[i], GET);
        expect(fds[i], &e, "idle connection's request");
    }
    printf("idle: %d connections open\n", n);
    fflush(stdout);
    for (;;)
        pause();
}

int main(int argc, char **argv)
{
    if (argc < 5 && !(argc >= 4 && strcmp(argv[1], "check") == 0)) {
        fprintf(stderr, "usage: %s check PORT BODY_BYTES [CONNS] | idle PORT N BODY_BYTES\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    port = atoi(argv[2]);
    if (strcmp(argv[1], "idle") == 0) {
        body_len = strtoul(argv[4], NULL, 10);
        idle(atoi(argv[3]));
    }
    body_len = strtoul(argv[3], NULL, 10);
    case_keepalive();
    case_pipelined();
    case_partial();
    case_versions();
    case_bodies();
    case_bad();
    case_concurrent(argc > 4 ? atoi(argv[4]) : 200);
    printf("all cases passed\n");
    return 0;
}
