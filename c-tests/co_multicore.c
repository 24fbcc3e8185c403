/*
 * co_multicore MODE [ARGS]: multi-worker behaviour of corun, one mode per
 * check. Each prints what it measured and exits 1 when a check fails.
 *
 *   cpu N          N CPU-bound coroutines; prints how many kernel threads
 *                  ran them and the wall time.
 *   pinned PAIRS ROUNDS   PAIRS ping-pong pairs over socketpairs; every
 *                  coroutine checks its kernel thread id after each park
 *                  (2*ROUNDS parks each) never changes.
 *   wakes PAIRS ROUNDS    ping-pong pairs over pipes, counting every
 *                  wake-up exactly; prints the count and the thread spread.
 *   file PATH      a coroutine reads PATH (uncached) in large reads while
 *                  another answers a socketpair echo every millisecond;
 *                  prints the longest echo round trip and the longest read.
 *   dns N          N coroutines call getaddrinfo("localhost") at once.
 *   stall MS       one coroutine spins MS ms while another echoes; prints
 *                  the longest echo round trip.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <corun.h>

#include "kernel_tid.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *m)
{
    fprintf(stderr, "co_multicore: %s (%s)\n", m, strerror(errno));
    exit(1);
}

static int full_write(int fd, const void *b, size_t n)
{
    return write(fd, b, n) == (ssize_t)n ? 0 : -1;
}

/* ---- cpu ---- */
static long cpu_tids[64];
static volatile uint64_t cpu_sink;
static void *cpu_body(void *arg)
{
    long i = (long)arg;
    cpu_tids[i] = kernel_tid();
    uint64_t x = (uint64_t)i + 1;
    for (long k = 0; k < 300000000L; k++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    cpu_sink = x;
    return NULL;
}

static int mode_cpu(int n)
{
    if (n > 64)
        n = 64;
    corun_co_t *c[64];
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++)
        c[i] = corun_spawn(cpu_body, (void *)i);
    for (int i = 0; i < n; i++)
        corun_join(c[i], NULL);
    int distinct = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= cpu_tids[j] == cpu_tids[i];
        distinct += !seen;
    }
    printf("cpu: %d coroutines ran on %d kernel threads in %.0f ms\n", n, distinct, (now_ns() - t0) / 1e6);
    return 0;
}

/* ---- pinned / wakes ---- */
struct pair {
    int fd[2];      /* a -> b */
    int back[2];    /* b -> a */
    long rounds;
    long moved;     /* thread changes seen */
    long wakes;
    long tid_a, tid_b;
};

static void *ping(void *arg)
{
    struct pair *p = arg;
    long me = kernel_tid();
    p->tid_a = me;
    char c = 'x';
    for (long r = 0; r < p->rounds; r++) {
        if (full_write(p->fd[1], &c, 1))
            die("ping write");
        if (read(p->back[0], &c, 1) != 1)
            die("ping read");
        p->wakes++;
        if (kernel_tid() != me)
            p->moved++;
    }
    return NULL;
}

static void *pong(void *arg)
{
    struct pair *p = arg;
    long me = kernel_tid();
    p->tid_b = me;
    char c;
    for (long r = 0; r < p->rounds; r++) {
        if (read(p->fd[0], &c, 1) != 1)
            die("pong read");
        p->wakes++;
        if (kernel_tid() != me)
            p->moved++;
        if (full_write(p->back[1], &c, 1))
            die("pong write");
    }
    return NULL;
}

static int mode_pairs(int npairs, long rounds, int use_sockets)
{
    struct pair *ps = calloc((size_t)npairs, sizeof *ps);
    corun_co_t **cs = calloc((size_t)npairs * 2, sizeof *cs);
    for (int i = 0; i < npairs; i++) {
        ps[i].rounds = rounds;
        if (use_sockets) {
            if (socketpair(AF_UNIX, SOCK_STREAM, 0, ps[i].fd) || socketpair(AF_UNIX, SOCK_STREAM, 0, ps[i].back))
                die("socketpair");
        } else if (pipe(ps[i].fd) || pipe(ps[i].back)) {
            die("pipe");
        }
    }
    uint64_t t0 = now_ns();
    for (int i = 0; i < npairs; i++) {
        cs[2 * i] = corun_spawn(pong, &ps[i]);
        cs[2 * i + 1] = corun_spawn(ping, &ps[i]);
    }
    for (int i = 0; i < 2 * npairs; i++)
        corun_join(cs[i], NULL);
    double ms = (now_ns() - t0) / 1e6;
    long moved = 0, wakes = 0, cross = 0;
    for (int i = 0; i < npairs; i++) {
        moved += ps[i].moved;
        wakes += ps[i].wakes;
        cross += ps[i].tid_a != ps[i].tid_b;
    }
    printf("%s: %d pairs (%ld on different threads), %ld wake-ups counted (expected %ld), %ld thread changes, %.0f ms, %.0f ns per wake-up\n",
           use_sockets ? "pinned" : "wakes", npairs, cross, wakes, 2 * rounds * npairs, moved, ms,
           ms * 1e6 / (double)(wakes ? wakes : 1));
    return (moved == 0 && wakes == 2 * rounds * npairs) ? 0 : 1;
}

/* ---- echo probe shared by file and stall ---- */
static int probe_fd[2];
static volatile int probe_stop;
static uint64_t probe_max_ns;
static long probe_count;

static void *echo_side(void *arg)
{
    (void)arg;
    char c;
    while (read(probe_fd[1], &c, 1) == 1)
        if (full_write(probe_fd[1], &c, 1))
            break;
    return NULL;
}

static void *probe_side(void *arg)
{
    (void)arg;
    char c = 'p';
    while (!probe_stop) {
        uint64_t t = now_ns();
        if (full_write(probe_fd[0], &c, 1) || read(probe_fd[0], &c, 1) != 1)
            die("probe");
        uint64_t d = now_ns() - t;
        if (d > probe_max_ns)
            probe_max_ns = d;
        probe_count++;
        usleep(1000);
    }
    return NULL;
}

/* ---- file ---- */
static const char *file_path;
static uint64_t read_max_ns;
static long long file_bytes;
static void *file_reader(void *arg)
{
    (void)arg;
    int fd = open(file_path, O_RDONLY);
    if (fd < 0)
        die("open");
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    size_t sz = 32 << 20;
    char *buf = malloc(sz);
    for (;;) {
        uint64_t t = now_ns();
        ssize_t n = read(fd, buf, sz);
        uint64_t d = now_ns() - t;
        if (d > read_max_ns)
            read_max_ns = d;
        if (n <= 0)
            break;
        file_bytes += n;
    }
    close(fd);
    free(buf);
    return NULL;
}

static int mode_with_probe(void *(*load)(void *), const char *what)
{
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, probe_fd))
        die("socketpair");
    /* The load starts first and gets a worker to itself (placement avoids
     * a worker held by one coroutine); the echo pair is placed after it. */
    uint64_t t0 = now_ns();
    corun_co_t *l = corun_spawn(load, NULL);
    usleep(20000);
    corun_co_t *e = corun_spawn(echo_side, NULL);
    corun_co_t *p = corun_spawn(probe_side, NULL);
    corun_join(l, NULL);
    uint64_t load_ns = now_ns() - t0;
    probe_stop = 1;
    corun_join(p, NULL);
    shutdown(probe_fd[0], SHUT_RDWR);
    corun_join(e, NULL);
    printf("%s: load took %.0f ms (longest single read %.1f ms, %lld bytes); echo probe: %ld round trips, longest %.1f ms\n",
           what, load_ns / 1e6, read_max_ns / 1e6, file_bytes, probe_count, probe_max_ns / 1e6);
    return 0;
}

/* ---- stall ---- */
static long spin_ms;
/* Not static: -rdynamic exports it, so corun's watchdog can name it. */
void *spin_forever(void *arg);
void *spin_forever(void *arg)
{
    (void)arg;
    /* CPU time, not wall time: a loaded machine that leaves the worker
     * without a CPU does not cut the spin short (the watchdog measures a
     * computing coroutine in CPU time). */
    uint64_t end = cpu_ns() + (uint64_t)spin_ms * 1000000ull;
    volatile uint64_t x = 0;
    while (cpu_ns() < end)
        x++;
    return NULL;
}

/* ---- dns ---- */
static int dns_ok, dns_fail;
static void *resolve(void *arg)
{
    (void)arg;
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int r = getaddrinfo("localhost", "80", &hints, &res);
    if (r == 0 && res && res->ai_family == AF_INET)
        dns_ok++;
    else
        dns_fail++;
    if (res)
        freeaddrinfo(res);
    return NULL;
}

static int mode_dns(int n)
{
    corun_co_t **c = calloc((size_t)n, sizeof *c);
    uint64_t t0 = now_ns();
    for (int i = 0; i < n; i++)
        c[i] = corun_spawn(resolve, NULL);
    for (int i = 0; i < n; i++)
        corun_join(c[i], NULL);
    printf("dns: %d getaddrinfo(localhost) calls: %d resolved, %d failed, %.0f ms\n", n, dns_ok, dns_fail,
           (now_ns() - t0) / 1e6);
    return dns_ok == n ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *m = argv[1];
    if (!strcmp(m, "cpu"))
        return mode_cpu(argc > 2 ? atoi(argv[2]) : 4);
    if (!strcmp(m, "pinned"))
        return mode_pairs(argc > 2 ? atoi(argv[2]) : 8, argc > 3 ? atol(argv[3]) : 5000, 1);
    if (!strcmp(m, "wakes"))
        return mode_pairs(argc > 2 ? atoi(argv[2]) : 2, argc > 3 ? atol(argv[3]) : 250000, 0);
    if (!strcmp(m, "file")) {
        file_path = argv[2];
        return mode_with_probe(file_reader, "file");
    }
    if (!strcmp(m, "stall")) {
        spin_ms = argc > 2 ? atol(argv[2]) : 500;
        return mode_with_probe(spin_forever, "stall");
    }
    if (!strcmp(m, "dns"))
        return mode_dns(argc > 2 ? atoi(argv[2]) : 1000);
    return 2;
}
