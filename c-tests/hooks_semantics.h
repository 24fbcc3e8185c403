/*
 * hooks_semantics.h - what the scenarios of hooks_semantics.c share: the
 * transcript output, time, test data, the helper threads (rescuer, guard)
 * and fd helpers. Included once, by hooks_semantics.c (static functions).
 */
#ifndef HOOKS_SEMANTICS_H
#define HOOKS_SEMANTICS_H

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define RESCUE_MS 250
#define GUARD_MS 500
#define BIG (4u << 20)

/* ---------- output ---------- */

static void out(const char *name, const char *fmt, ...)
{
    va_list ap;
    printf("%-26s ", name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

static const char *ename(int e)
{
    if (e == 0)
        return "0";
    const char *n = strerrorname_np(e);
    return n ? n : "E?";
}

/* Rotating string buffers, so several can appear in one printf. */
static char *sbuf(void)
{
    static char bufs[32][96];
    static unsigned i;
    return bufs[i++ % 32];
}

/* "ret=N errno=E" for calls returning a count. */
static const char *RES(long r, int e)
{
    char *b = sbuf();
    snprintf(b, 96, "ret=%ld errno=%s", r, ename(r < 0 ? e : 0));
    return b;
}

/* "ret=fd errno=0" / "ret=-1 errno=E" for calls returning an fd. */
static const char *RESFD(long r, int e)
{
    char *b = sbuf();
    if (r >= 0)
        snprintf(b, 96, "ret=fd errno=0");
    else
        snprintf(b, 96, "ret=%ld errno=%s", r, ename(e));
    return b;
}

/* The kernel's view of the fd's status flags (raw syscall: the truth). */
static const char *FL(int fd)
{
    char *b = sbuf();
    long fl = syscall(SYS_fcntl, fd, F_GETFL);
    if (fl < 0) {
        snprintf(b, 96, "closed");
        return b;
    }
    int acc = fl & O_ACCMODE;
    long rest = fl & ~(long)(O_ACCMODE | O_NONBLOCK);
    int n = snprintf(b, 96, "%s%s", acc == O_RDONLY ? "ro" : acc == O_WRONLY ? "wo" : "rw",
                     (fl & O_NONBLOCK) ? "|nonblock" : "");
    if (rest)
        snprintf(b + n, 96 - n, "|0x%lx", rest);
    return b;
}

static const char *YN(int c) { return c ? "yes" : "no"; }

static void die(const char *what)
{
    fprintf(stderr, "hooks_semantics: setup failed: %s: %s\n", what, strerror(errno));
    fflush(stdout);
    _exit(3);
}
#define MUST(x) do { if ((x) < 0) die(#x); } while (0)

/* ---------- time ---------- */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double since_ms(int64_t t0) { return (now_ns() - t0) / 1e6; }

static void msleep(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

/* ---------- data ---------- */

static uint8_t *bigbuf;

static void fill_pattern(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 131u + (i >> 9) + seed);
}

static uint32_t cksum(uint32_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}
#define CK0 2166136261u

/* ---------- helpers (plain blocking calls only) ---------- */

enum jkind {
    J_WRITE,       /* after delay: write s1; after gap: write s2 (if any) */
    J_CLOSE,       /* after delay: close fd */
    J_CLOSE_QUEUED,/* when fd has more than `total` bytes queued, + delay: close fd */
    J_RST,         /* after delay: SO_LINGER {1,0} then close fd (TCP RST) */
    J_WRITE_CLOSE, /* after delay: write s1; after gap: close fd */
    J_DRAIN,       /* after delay: read `total` bytes in `chunk` pieces, pausing */
    J_CONNECT,     /* after delay: connect a TCP socket to port; keep it in fd2 */
    J_SIGNAL_WRITE,/* after delay: kill(getpid(), SIGUSR1); after gap: write s1 */
    J_RESCUE_WRITE,   /* if not done after RESCUE_MS: write "R" to fd */
    J_RESCUE_CONNECT, /* if not done after RESCUE_MS: connect to port */
};

struct job {
    enum jkind kind;
    int fd;
    int delay_ms, gap_ms;
    const char *s1, *s2;
    size_t total, chunk;
    int pause_us;
    int port;
    int guard; /* fd + 1 to close if the call is stuck; 0: none */
    volatile int done;
    /* results */
    pthread_t t;
    int fd2;
    size_t got;
    uint32_t sum;
    int fired;
};

static int tcp_connect_port(int port)
{
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (c < 0)
        return -1;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(c, (struct sockaddr *)&a, sizeof a) < 0) {
        close(c);
        return -1;
    }
    return c;
}

static void wr_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t r = write(fd, c, n);
        if (r <= 0)
            return;
        c += r;
        n -= (size_t)r;
    }
}

/* Waits until the program's call returned (done) or ms passed. */
static void wait_done(struct job *j, int ms)
{
    for (int i = 0; i < ms / 5 && !j->done; i++)
        msleep(5);
}

/* The call is still stuck GUARD_MS after the helper's part: close its fd. */
static void guard(struct job *j, int ms)
{
    if (!j->guard)
        return;
    wait_done(j, ms);
    if (!j->done) {
        fprintf(stderr, "hooks_semantics: a call is stuck; the guard closes its fd\n");
        close(j->guard - 1);
    }
}

static void *job_main(void *arg)
{
    struct job *j = arg;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
    if (j->kind == J_RESCUE_WRITE || j->kind == J_RESCUE_CONNECT) {
        wait_done(j, RESCUE_MS);
        if (j->done)
            return NULL;
        j->fired = 1;
        if (j->kind == J_RESCUE_WRITE)
            wr_all(j->fd, "R", 1);
        else
            j->fd2 = tcp_connect_port(j->port);
        guard(j, RESCUE_MS);
        return NULL;
    }
    if (j->delay_ms && j->kind != J_CLOSE_QUEUED)
        msleep(j->delay_ms);
    switch (j->kind) {
    case J_WRITE:
        wr_all(j->fd, j->s1, strlen(j->s1));
        if (j->s2) {
            msleep(j->gap_ms);
            wr_all(j->fd, j->s2, strlen(j->s2));
        }
        break;
    case J_CLOSE:
        close(j->fd);
        break;
    case J_CLOSE_QUEUED:
        for (int i = 0; i < 2000; i++) {
            int q = 0;
            if (ioctl(j->fd, FIONREAD, &q) < 0 || (size_t)q > j->total)
                break;
            msleep(1);
        }
        msleep(30); /* the writer is blocked by now */
        close(j->fd);
        break;
    case J_RST: {
        struct linger l = { 1, 0 };
        setsockopt(j->fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        close(j->fd);
        break;
    }
    case J_WRITE_CLOSE:
        wr_all(j->fd, j->s1, strlen(j->s1));
        msleep(j->gap_ms);
        close(j->fd);
        break;
    case J_DRAIN: {
        uint8_t *b = malloc(j->chunk);
        j->sum = CK0;
        while (j->got < j->total) {
            size_t want = j->total - j->got < j->chunk ? j->total - j->got : j->chunk;
            ssize_t r = read(j->fd, b, want);
            if (r <= 0)
                break;
            j->sum = cksum(j->sum, b, (size_t)r);
            j->got += (size_t)r;
            if (j->pause_us)
                usleep((useconds_t)j->pause_us);
        }
        free(b);
        break;
    }
    case J_CONNECT:
        j->fd2 = tcp_connect_port(j->port);
        break;
    case J_SIGNAL_WRITE:
        kill(getpid(), SIGUSR1);
        msleep(j->gap_ms);
        wr_all(j->fd, j->s1, strlen(j->s1));
        break;
    default:
        break;
    }
    guard(j, GUARD_MS);
    return NULL;
}

static void job_start(struct job *j)
{
    j->fd2 = -1;
    j->done = 0;
    j->fired = 0;
    if (pthread_create(&j->t, NULL, job_main, j) != 0)
        die("pthread_create");
}

static void job_join(struct job *j)
{
    j->done = 1;
    pthread_join(j->t, NULL);
}

#define G(fd) ((fd) + 1)

/* Starts in *j (which must outlive job_join) a rescuer that writes to `peer`
 * and then closes `stuck` if the program's call on `stuck` does not return. */
static void rescue_write(struct job *j, int peer, int stuck)
{
    memset(j, 0, sizeof *j);
    j->kind = J_RESCUE_WRITE;
    j->fd = peer;
    j->guard = G(stuck);
    job_start(j);
}

/* ---------- fd helpers ---------- */

static void spair(int sv[2])
{
    MUST(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
}

static int listener(int flags, int *port)
{
    int l = socket(AF_INET, SOCK_STREAM | flags, 0);
    MUST(l);
    int one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = { .sin_family = AF_INET };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    MUST(bind(l, (struct sockaddr *)&a, sizeof a));
    MUST(listen(l, 16));
    socklen_t al = sizeof a;
    MUST(getsockname(l, (struct sockaddr *)&a, &al));
    *port = ntohs(a.sin_port);
    return l;
}

/* A connected TCP pair over 127.0.0.1. */
static void tcp_pair(int *c, int *s)
{
    int port;
    int l = listener(0, &port);
    *c = tcp_connect_port(port);
    MUST(*c);
    *s = accept(l, NULL, NULL);
    MUST(*s);
    close(l);
}

static void set_nb(int fd, int on)
{
    int fl = fcntl(fd, F_GETFL);
    MUST(fl);
    MUST(fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK));
}

static volatile sig_atomic_t n_sigpipe, n_sigusr1;
static void on_sigpipe(int s) { (void)s; n_sigpipe++; }
static void on_sigusr1(int s) { (void)s; n_sigusr1++; }

static void sigpipe_counting(void)
{
    struct sigaction sa = { 0 };
    sa.sa_handler = on_sigpipe;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, NULL);
    n_sigpipe = 0;
}

static void sigpipe_ignored(void) { signal(SIGPIPE, SIG_IGN); }

/* ---------- receiving calls, by name ---------- */

enum rop { OP_READ, OP_RECV, OP_READV, OP_PEEK };
static const char *rop_name[] = { "read", "recv", "readv", "recv_peek" };

static long do_rop(enum rop op, int fd, char *buf, size_t n)
{
    switch (op) {
    case OP_READ:
        return read(fd, buf, n);
    case OP_RECV:
        return recv(fd, buf, n, 0);
    case OP_PEEK:
        return recv(fd, buf, n, MSG_PEEK);
    case OP_READV: {
        struct iovec iov[2] = { { buf, 3 }, { buf + 3, n - 3 } };
        return readv(fd, iov, 2);
    }
    }
    return -1;
}

#endif
