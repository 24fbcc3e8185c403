/*
 * fault_client MODE HOST PORT [ARGS]: faulty peers for an echo server
 * (independent of corun: plain threads and blocking sockets).
 *
 *   resets N      N concurrent connections; every third sends part of a
 *                 256 KiB payload and resets (SO_LINGER 0) mid-transfer;
 *                 the others must get every byte echoed.
 *   halfclose N   N concurrent connections each send 200 KiB, shut down
 *                 their write side, and must still read the whole echo,
 *                 then EOF.
 *   slow N SECS   N connections trickle one byte every 100 ms (each byte
 *                 checked when it comes back) while one fast connection
 *                 makes 1 KiB round trips for SECS seconds; prints the
 *                 fast client's longest round trip.
 *
 * Prints one summary line; exits 1 on any wrong byte or unexpected error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in addr;
static volatile int failures;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint8_t pat(uint64_t seed, size_t i) { return (uint8_t)((seed * 2654435761u + i * 40503u) >> 7); }

static int dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr)) {
        perror("connect");
        __sync_fetch_and_add(&failures, 1);
        return -1;
    }
    return fd;
}

static void *writer_all(void *arg);
struct job { int fd; size_t len; uint64_t seed; int reset; };

static void *writer_all(void *arg)
{
    struct job *j = arg;
    uint8_t buf[16384];
    size_t limit = j->reset ? j->len / 2 : j->len;
    for (size_t off = 0; off < limit;) {
        size_t n = limit - off < sizeof buf ? limit - off : sizeof buf;
        for (size_t k = 0; k < n; k++)
            buf[k] = pat(j->seed, off + k);
        ssize_t w = send(j->fd, buf, n, MSG_NOSIGNAL);
        if (w <= 0)
            return NULL;
        off += (size_t)w;
    }
    return NULL;
}

/* One connection: send len bytes from a second thread, read the echo. */
static void *conn_main(void *arg)
{
    struct job *j = arg;
    j->fd = dial();
    if (j->fd < 0)
        return NULL;
    pthread_t w;
    pthread_create(&w, NULL, writer_all, j);
    uint8_t buf[16384];
    size_t got = 0;
    if (j->reset) {
        pthread_join(w, NULL);
        struct linger lg = {1, 0};
        setsockopt(j->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        close(j->fd);
        return NULL;
    }
    while (got < j->len) {
        ssize_t r = recv(j->fd, buf, sizeof buf, 0);
        if (r <= 0) {
            fprintf(stderr, "conn: recv %zd after %zu of %zu (%s)\n", r, got, j->len, strerror(errno));
            __sync_fetch_and_add(&failures, 1);
            break;
        }
        for (ssize_t k = 0; k < r; k++)
            if (buf[k] != pat(j->seed, got + (size_t)k)) {
                fprintf(stderr, "conn: wrong byte at %zu\n", got + (size_t)k);
                __sync_fetch_and_add(&failures, 1);
                r = -1;
                break;
            }
        if (r < 0)
            break;
        got += (size_t)r;
    }
    pthread_join(w, NULL);
    close(j->fd);
    return NULL;
}

static int run_conns(int n, size_t len, int with_resets, int halfclose)
{
    pthread_t *t = calloc((size_t)n, sizeof *t);
    struct job *jobs = calloc((size_t)n, sizeof *jobs);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 256 << 10);
    for (int i = 0; i < n; i++) {
        jobs[i] = (struct job){.len = len, .seed = (uint64_t)i + 1, .reset = with_resets && i % 3 == 0};
        pthread_create(&t[i], &at, conn_main, &jobs[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    (void)halfclose;
    return failures;
}

/* halfclose: send everything, shutdown(SHUT_WR), read all, expect EOF. */
static void *half_main(void *arg)
{
    struct job *j = arg;
    int fd = dial();
    if (fd < 0)
        return NULL;
    uint8_t *out = malloc(j->len), buf[16384];
    for (size_t k = 0; k < j->len; k++)
        out[k] = pat(j->seed, k);
    /* Small enough for the socket buffers both ways: send all first. */
    size_t off = 0;
    while (off < j->len) {
        ssize_t w = send(fd, out + off, j->len - off, MSG_NOSIGNAL);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    shutdown(fd, SHUT_WR);
    size_t got = 0;
    for (;;) {
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r < 0) {
            __sync_fetch_and_add(&failures, 1);
            break;
        }
        if (r == 0)
            break;
        for (ssize_t k = 0; k < r; k++)
            if (got + (size_t)k >= j->len || buf[k] != out[got + (size_t)k]) {
                __sync_fetch_and_add(&failures, 1);
                r = 0;
                break;
            }
        got += (size_t)r;
    }
    if (got != j->len) {
        fprintf(stderr, "halfclose: got %zu of %zu before EOF\n", got, j->len);
        __sync_fetch_and_add(&failures, 1);
    }
    free(out);
    close(fd);
    return NULL;
}

static volatile int slow_stop;
struct slow { int *fds; int n; long bytes; };

static void *slow_main(void *arg)
{
    struct slow *s = arg;
    long sent = 0;
    while (!slow_stop) {
        for (int i = 0; i < s->n; i++) {
            uint8_t c = pat((uint64_t)i, (size_t)sent);
            if (send(s->fds[i], &c, 1, MSG_NOSIGNAL) != 1)
                __sync_fetch_and_add(&failures, 1);
        }
        for (int i = 0; i < s->n; i++) {
            uint8_t c;
            if (recv(s->fds[i], &c, 1, 0) != 1 || c != pat((uint64_t)i, (size_t)sent)) {
                __sync_fetch_and_add(&failures, 1);
                fprintf(stderr, "slow client %d: bad echo\n", i);
                return NULL;
            }
        }
        sent++;
        usleep(100000);
    }
    s->bytes = sent * s->n;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    const char *mode = argv[1];
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)atoi(argv[3]));
    inet_pton(AF_INET, argv[2], &addr.sin_addr);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    int n = atoi(argv[4]);
    if (!strcmp(mode, "resets")) {
        run_conns(n, 256 << 10, 1, 0);
        printf("resets: %d connections, %d reset mid-transfer, failures %d\n", n, (n + 2) / 3, failures);
    } else if (!strcmp(mode, "halfclose")) {
        pthread_t *t = calloc((size_t)n, sizeof *t);
        struct job *jobs = calloc((size_t)n, sizeof *jobs);
        for (int i = 0; i < n; i++) {
            jobs[i] = (struct job){.len = 200 << 10, .seed = (uint64_t)i + 7};
            pthread_create(&t[i], NULL, half_main, &jobs[i]);
        }
        for (int i = 0; i < n; i++)
            pthread_join(t[i], NULL);
        printf("halfclose: %d connections, failures %d\n", n, failures);
    } else if (!strcmp(mode, "slow")) {
        int secs = argc > 5 ? atoi(argv[5]) : 3;
        struct slow s = {.fds = calloc((size_t)n, sizeof(int)), .n = n};
        for (int i = 0; i < n; i++)
            if ((s.fds[i] = dial()) < 0)
                return 1;
        pthread_t st;
        pthread_create(&st, NULL, slow_main, &s);
        int fd = dial();
        uint8_t out[1024], in[1024];
        uint64_t worst = 0, end = now_ns() + (uint64_t)secs * 1000000000ull;
        long trips = 0;
        while (now_ns() < end && fd >= 0) {
            for (size_t k = 0; k < sizeof out; k++)
                out[k] = pat((uint64_t)trips, k);
            uint64_t t0 = now_ns();
            if (send(fd, out, sizeof out, MSG_NOSIGNAL) != (ssize_t)sizeof out)
                break;
            size_t got = 0;
            while (got < sizeof in) {
                ssize_t r = recv(fd, in + got, sizeof in - got, 0);
                if (r <= 0)
                    break;
                got += (size_t)r;
            }
            if (got != sizeof in || memcmp(in, out, sizeof in)) {
                failures++;
                break;
            }
            uint64_t d = now_ns() - t0;
            if (d > worst)
                worst = d;
            trips++;
            usleep(1000);
        }
        slow_stop = 1;
        pthread_join(st, NULL);
        printf("slow: %d trickling clients, %ld bytes trickled; fast client %ld round trips, longest %.1f ms, failures %d\n",
               n, s.bytes, trips, worst / 1e6, failures);
    } else {
        return 2;
    }
    return failures ? 1 : 0;
}
