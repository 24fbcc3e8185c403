/*
 * echo_client HOST PORT CONNS MAXLEN [ROUNDS] [SEED]
 *
 * A load client for echo servers, independent of corun (a single-threaded
 * epoll state machine with non-blocking sockets). It opens CONNS
 * connections and keeps them all open at once; on each it sends ROUNDS
 * messages of a random length from 1 to MAXLEN bytes, one after the other,
 * reading the echo of each while still sending it, and checks every byte
 * against what was sent. Prints one summary line; exits 1 on any error or
 * mismatch, 0 when every byte came back right.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct conn {
    int fd;
    int round;
    size_t len, sent, got;
    uint64_t seed;
    int connected;
};

static uint8_t byte_at(uint64_t seed, size_t i)
{
    uint64_t x = seed + (uint64_t)(i / 8) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 30; x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27; x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return (uint8_t)(x >> ((i % 8) * 8));
}

static uint64_t rng_state;
static uint64_t rng(void)
{
    rng_state += 0x9E3779B97F4A7C15ull;
    uint64_t z = rng_state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t maxlen;
static int rounds;

static void new_round(struct conn *c)
{
    c->len = 1 + (size_t)(rng() % maxlen);
    c->seed = rng();
    c->sent = c->got = 0;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s HOST PORT CONNS MAXLEN [ROUNDS] [SEED]\n", argv[0]);
        return 2;
    }
    const char *host = argv[1];
    int port = atoi(argv[2]);
    int nconn = atoi(argv[3]);
    maxlen = (size_t)atol(argv[4]);
    rounds = argc > 5 ? atoi(argv[5]) : 1;
    rng_state = argc > 6 ? (uint64_t)atoll(argv[6]) : (uint64_t)time(NULL);
    if (nconn <= 0 || maxlen == 0 || rounds <= 0)
        return 2;

    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);

    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &a.sin_addr);
    int ep = epoll_create1(0);
    struct conn *cs = calloc((size_t)nconn, sizeof *cs);
    uint8_t *buf = malloc(1 << 16);
    double t0 = now();
    int open_now = 0, peak_open = 0;
    for (int i = 0; i < nconn; i++) {
        struct conn *c = &cs[i];
        c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (c->fd < 0) {
            perror("socket");
            return 1;
        }
        if (connect(c->fd, (struct sockaddr *)&a, sizeof a) && errno != EINPROGRESS) {
            fprintf(stderr, "connect %d: %s\n", i, strerror(errno));
            return 1;
        }
        new_round(c);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
        open_now++;
    }
    peak_open = open_now;
    int done = 0;
    unsigned long long bytes = 0;
    struct epoll_event evs[512];
    while (done < nconn) {
        int n = epoll_wait(ep, evs, 512, 20000);
        if (n == 0) {
            fprintf(stderr, "echo_client: no progress for 20 s (%d of %d done)\n", done, nconn);
            return 1;
        }
        for (int k = 0; k < n; k++) {
            struct conn *c = &cs[evs[k].data.u32];
            if (c->fd < 0)
                continue;
            if (evs[k].events & EPOLLERR) {
                int err = 0;
                socklen_t l = sizeof err;
                getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
                fprintf(stderr, "conn %u: socket error %s\n", evs[k].data.u32, strerror(err));
                return 1;
            }
            for (;;) { /* edge-triggered: work until EAGAIN */
                int progress = 0;
                while (c->sent < c->len) {
                    size_t chunk = c->len - c->sent;
                    if (chunk > (1 << 16))
                        chunk = 1 << 16;
                    for (size_t j = 0; j < chunk; j++)
                        buf[j] = byte_at(c->seed, c->sent + j);
                    ssize_t w = send(c->fd, buf, chunk, MSG_NOSIGNAL);
                    if (w < 0) {
                        if (errno == EAGAIN || errno == ENOTCONN)
                            break;
                        fprintf(stderr, "send: %s\n", strerror(errno));
                        return 1;
                    }
                    c->sent += (size_t)w;
                    progress = 1;
                }
                ssize_t r = recv(c->fd, buf, 1 << 16, 0);
                if (r < 0) {
                    if (errno == EAGAIN || errno == ENOTCONN) {
                        if (!progress)
                            break;
                        continue;
                    }
                    fprintf(stderr, "recv: %s\n", strerror(errno));
                    return 1;
                }
                if (r == 0) {
                    fprintf(stderr, "conn %u: EOF after %zu of %zu bytes\n", evs[k].data.u32, c->got, c->len);
                    return 1;
                }
                for (ssize_t j = 0; j < r; j++) {
                    if (c->got + (size_t)j >= c->len || buf[j] != byte_at(c->seed, c->got + (size_t)j)) {
                        fprintf(stderr, "conn %u: byte %zu wrong\n", evs[k].data.u32, c->got + (size_t)j);
                        return 1;
                    }
                }
                c->got += (size_t)r;
                bytes += (unsigned long long)r;
                if (c->got == c->len) {
                    if (++c->round == rounds) {
                        close(c->fd);
                        c->fd = -1;
                        done++;
                        break;
                    }
                    new_round(c);
                }
            }
        }
    }
    double dt = now() - t0;
    printf("echo_client: %d connections (%d open at once), %d rounds each, %llu bytes echoed and checked, %.2f s\n",
           nconn, peak_open, rounds, bytes, dt);
    return 0;
}
