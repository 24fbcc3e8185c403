/*
 * hooks_semantics - a plain blocking program whose transcript must be the
 * same natively and under corun.
 *
 * It runs one list of scenarios twice: from a constructor (before main;
 * under corun that is outside any coroutine, so every hook must be an exact
 * passthrough) and from main (under corun, main is a coroutine and calls
 * that would block park instead). Each call prints one line on stdout: the
 * scenario, the result and errno, and where relevant the F_GETFL flags of
 * the fd before and after the call. Fd numbers and ports are never printed,
 * so the native and the corun transcripts can be compared with diff.
 * Whether the phase ran in a coroutine goes to stderr only (looked up with
 * dlsym, the program does not link corun).
 *
 * Helpers are plain pthreads that only make plain blocking calls (sleep,
 * then write / close / connect / drain), so they behave the same whether
 * pthread_create makes a kernel thread or a coroutine. A call that must
 * return at once (EAGAIN, EINVAL...) runs with a "rescuer": a helper that,
 * if the call has not returned after RESCUE_MS, writes to the fd's peer (or
 * connects) so that a wrongly parked call ends and shows as a mismatch
 * ("immediate=no") instead of hanging the test. Helpers also carry a
 * "guard": the fd the program waits on, which the helper closes if the call
 * still has not returned GUARD_MS after the helper did its part (under
 * corun, close wakes a parked call with EBADF), so that a wait that can never
 * end (a lost wake-up) shows as EBADF instead of hanging. Natively, and in a
 * correct run, neither the rescue nor the guard ever fires.
 */
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

/* ---------- scenarios ---------- */

/* A receiving call on a socketpair (or pipe) that blocks until a helper
 * writes 30 ms later. */
static void sc_park_read(enum rop op, int use_pipe)
{
    int sv[2];
    if (use_pipe)
        MUST(pipe(sv));
    else
        spair(sv);
    char buf[64] = { 0 }, name[40];
    snprintf(name, sizeof name, "%s_%s_park", use_pipe ? "pipe" : "sock", rop_name[op]);
    const char *f0 = FL(sv[0]);
    struct job j = { .kind = J_WRITE, .fd = sv[1], .delay_ms = 30, .s1 = "hello",
                     .guard = G(sv[0]) };
    int64_t t0 = now_ns();
    job_start(&j);
    long r = do_rop(op, sv[0], buf, sizeof buf);
    int e = errno;
    double dt = since_ms(t0);
    job_join(&j);
    out(name, "%s data=%s waited=%s fl=%s->%s", RES(r, e),
        YN(r == 5 && memcmp(buf, "hello", 5) == 0), YN(dt >= 25), f0, FL(sv[0]));
    if (op == OP_PEEK) {
        char b2[64] = { 0 };
        r = read(sv[0], b2, sizeof b2);
        e = errno;
        out("  read_after_peek", "%s same=%s", RES(r, e), YN(r == 5 && memcmp(b2, buf, 5) == 0));
    }
    close(sv[0]);
    close(sv[1]);
}

/* Data already there, less than asked: the call returns what is there. */
static void sc_partial(enum rop op, int use_pipe)
{
    int sv[2];
    if (use_pipe)
        MUST(pipe(sv));
    else
        spair(sv);
    char buf[100] = { 0 }, name[40];
    snprintf(name, sizeof name, "%s_%s_partial", use_pipe ? "pipe" : "sock", rop_name[op]);
    wr_all(sv[1], "0123456789", 10);
    long r = do_rop(op, sv[0], buf, sizeof buf);
    int e = errno;
    out(name, "%s data=%s fl=%s", RES(r, e), YN(r == 10 && memcmp(buf, "0123456789", 10) == 0),
        FL(sv[0]));
    close(sv[0]);
    close(sv[1]);
}

/* Peer closed: 0 at once; peer closing while the call waits: 0 then. */
static void sc_eof(enum rop op, int use_pipe, int park)
{
    int sv[2];
    if (use_pipe)
        MUST(pipe(sv));
    else
        spair(sv);
    char buf[16], name[40];
    snprintf(name, sizeof name, "%s_%s_eof%s", use_pipe ? "pipe" : "sock", rop_name[op],
             park ? "_park" : "");
    struct job j = { .kind = J_CLOSE, .fd = sv[1], .delay_ms = 30, .guard = G(sv[0]) };
    int64_t t0 = now_ns();
    if (park)
        job_start(&j);
    else
        close(sv[1]);
    long r = do_rop(op, sv[0], buf, sizeof buf);
    int e = errno;
    double dt = since_ms(t0);
    if (park)
        job_join(&j);
    out(name, "%s waited=%s fl=%s", RES(r, e), YN(dt >= 25), FL(sv[0]));
    close(sv[0]);
}

static void sc_peek_then_read(void)
{
    int sv[2];
    spair(sv);
    wr_all(sv[1], "peekdata", 8);
    char a[4] = { 0 }, b[16] = { 0 };
    long r = recv(sv[0], a, 4, MSG_PEEK);
    int e = errno;
    out("sock_peek", "%s data=%s", RES(r, e), YN(r == 4 && memcmp(a, "peek", 4) == 0));
    r = read(sv[0], b, sizeof b);
    e = errno;
    out("  read_after_peek", "%s data=%s", RES(r, e), YN(r == 8 && memcmp(b, "peekdata", 8) == 0));
    close(sv[0]);
    close(sv[1]);
}

static void sc_waitall(void)
{
    int sv[2];
    spair(sv);
    char buf[16] = { 0 };
    struct job j = { .kind = J_WRITE, .fd = sv[1], .delay_ms = 10, .s1 = "abcd", .s2 = "efgh",
                     .gap_ms = 20, .guard = G(sv[0]) };
    int64_t t0 = now_ns();
    job_start(&j);
    long r = recv(sv[0], buf, 8, MSG_WAITALL);
    int e = errno;
    double dt = since_ms(t0);
    job_join(&j);
    out("sock_recv_waitall", "%s data=%s waited=%s fl=%s", RES(r, e),
        YN(r == 8 && memcmp(buf, "abcdefgh", 8) == 0), YN(dt >= 25), FL(sv[0]));

    /* EOF before the full amount: what arrived. */
    memset(buf, 0, sizeof buf);
    struct job j2 = { .kind = J_WRITE_CLOSE, .fd = sv[1], .delay_ms = 10, .s1 = "abc",
                      .gap_ms = 20, .guard = G(sv[0]) };
    job_start(&j2);
    r = recv(sv[0], buf, 8, MSG_WAITALL);
    e = errno;
    job_join(&j2);
    out("sock_recv_waitall_eof", "%s data=%s", RES(r, e), YN(r == 3 && memcmp(buf, "abc", 3) == 0));
    close(sv[0]);

    /* The program's own O_NONBLOCK with MSG_WAITALL: what is there. */
    spair(sv);
    set_nb(sv[0], 1);
    wr_all(sv[1], "xyz", 3);
    struct job rs;
    rescue_write(&rs, sv[1], sv[0]);
    t0 = now_ns();
    r = recv(sv[0], buf, 8, MSG_WAITALL);
    e = errno;
    dt = since_ms(t0);
    job_join(&rs);
    out("sock_recv_waitall_nb", "%s immediate=%s fl=%s", RES(r, e), YN(dt < RESCUE_MS / 2),
        FL(sv[0]));
    close(sv[0]);
    close(sv[1]);
}

static void sc_tcp_reset(void)
{
    int c, s;
    char buf[16];
    /* The RST is already there. */
    tcp_pair(&c, &s);
    wr_all(s, "unread", 6);
    msleep(5);
    struct linger l = { 1, 0 };
    MUST(setsockopt(c, SOL_SOCKET, SO_LINGER, &l, sizeof l));
    close(c);
    struct pollfd p = { .fd = s, .events = POLLIN };
    poll(&p, 1, 1000);
    const char *f0 = FL(s);
    long r = read(s, buf, sizeof buf);
    int e = errno;
    out("tcp_read_reset", "%s fl=%s->%s", RES(r, e), f0, FL(s));
    r = read(s, buf, sizeof buf);
    e = errno;
    out("  read_again", "%s", RES(r, e));
    sigpipe_counting();
    r = write(s, "x", 1);
    e = errno;
    out("  write_after_reset", "%s sigpipe=%d", RES(r, e), (int)n_sigpipe);
    sigpipe_ignored();
    close(s);

    /* The RST arrives while the read waits. */
    tcp_pair(&c, &s);
    wr_all(s, "unread", 6);
    struct job j = { .kind = J_RST, .fd = c, .delay_ms = 30, .guard = G(s) };
    int64_t t0 = now_ns();
    job_start(&j);
    r = recv(s, buf, sizeof buf, 0);
    e = errno;
    double dt = since_ms(t0);
    job_join(&j);
    out("tcp_recv_reset_park", "%s waited=%s fl=%s", RES(r, e), YN(dt >= 25), FL(s));
    close(s);

    /* Orderly shutdown: EOF. */
    tcp_pair(&c, &s);
    struct job j2 = { .kind = J_WRITE, .fd = c, .delay_ms = 20, .s1 = "bye" };
    job_start(&j2);
    job_join(&j2);
    shutdown(c, SHUT_WR);
    r = read(s, buf, sizeof buf);
    e = errno;
    out("tcp_read_data", "%s", RES(r, e));
    r = read(s, buf, sizeof buf);
    e = errno;
    out("tcp_read_shutdown_eof", "%s fl=%s", RES(r, e), FL(s));
    close(c);
    close(s);
}

static void sc_epipe(void)
{
    int sv[2];
    spair(sv);
    close(sv[1]);
    sigpipe_ignored();
    const char *f0 = FL(sv[0]);
    long r = write(sv[0], "x", 1);
    int e = errno;
    out("sock_write_epipe_ign", "%s fl=%s->%s", RES(r, e), f0, FL(sv[0]));
    r = send(sv[0], "x", 1, 0);
    e = errno;
    out("sock_send_epipe_ign", "%s", RES(r, e));
    struct iovec iov[2] = { { "a", 1 }, { "b", 1 } };
    r = writev(sv[0], iov, 2);
    e = errno;
    out("sock_writev_epipe_ign", "%s", RES(r, e));

    sigpipe_counting();
    r = write(sv[0], "x", 1);
    e = errno;
    out("sock_write_epipe_handler", "%s sigpipe=%d", RES(r, e), (int)n_sigpipe);
    r = send(sv[0], "x", 1, MSG_NOSIGNAL);
    e = errno;
    out("sock_send_epipe_nosignal", "%s sigpipe=%d", RES(r, e), (int)n_sigpipe);
    sigpipe_ignored();
    close(sv[0]);

    int p[2];
    MUST(pipe(p));
    close(p[0]);
    sigpipe_counting();
    r = write(p[1], "x", 1);
    e = errno;
    out("pipe_write_epipe_handler", "%s sigpipe=%d fl=%s", RES(r, e), (int)n_sigpipe, FL(p[1]));
    sigpipe_ignored();
    close(p[1]);
}

/* A big blocking write whose reader goes away part-way. */
static void sc_epipe_partial(void)
{
    int sv[2];
    const char *what[] = { "sock", "pipe", "tcp" };
    for (int k = 0; k < 3; k++) {
        int w, rd;
        if (k == 0) {
            spair(sv);
            w = sv[0], rd = sv[1];
        } else if (k == 1) {
            MUST(pipe(sv));
            w = sv[1], rd = sv[0];
        } else {
            tcp_pair(&w, &rd);
            wr_all(w, "unread", 6); /* makes rd's close a RST */
        }
        sigpipe_counting();
        struct job j = { .kind = J_CLOSE_QUEUED, .fd = rd, .total = k == 2 ? 6 : 0,
                         .guard = G(w) };
        job_start(&j);
        size_t n = k == 2 ? 2 * BIG : BIG;
        uint8_t *b = k == 2 ? malloc(n) : bigbuf;
        if (k == 2)
            memset(b, 'z', n);
        long r = write(w, b, n);
        int e = errno;
        job_join(&j);
        char name[40];
        snprintf(name, sizeof name, "%s_write_peer_gone", what[k]);
        out(name, "ret=%s errno=%s sigpipe=%d fl=%s",
            r < 0 ? "-1" : r == 0 ? "0" : (size_t)r < n ? "partial" : "full",
            ename(r < 0 ? e : 0), (int)n_sigpipe, FL(w));
        r = write(w, "x", 1);
        e = errno;
        out("  write_again", "%s sigpipe=%d", RES(r, e), (int)n_sigpipe);
        sigpipe_ignored();
        if (k == 2)
            free(b);
        close(w);
    }
}

/* A 4 MiB blocking write while a helper drains slowly. */
static void sc_big_write(int how)
{
    const char *names[] = { "sock_write_big", "sock_send_big", "sock_writev_big", "pipe_write_big" };
    int sv[2], w, rd;
    if (how == 3) {
        MUST(pipe(sv));
        w = sv[1], rd = sv[0];
    } else {
        spair(sv);
        w = sv[0], rd = sv[1];
    }
    struct job j = { .kind = J_DRAIN, .fd = rd, .delay_ms = 10, .total = BIG, .chunk = 65536,
                     .pause_us = 300 };
    const char *f0 = FL(w);
    job_start(&j);
    long r;
    if (how == 0 || how == 3)
        r = write(w, bigbuf, BIG);
    else if (how == 1)
        r = send(w, bigbuf, BIG, 0);
    else {
        struct iovec iov[3] = { { bigbuf, 1000 }, { bigbuf + 1000, BIG / 2 - 1000 },
                                { bigbuf + BIG / 2, BIG / 2 } };
        r = writev(w, iov, 3);
    }
    int e = errno;
    job_join(&j);
    uint32_t want = cksum(CK0, bigbuf, BIG);
    out(names[how], "%s intact=%s fl=%s->%s", RES(r, e), YN(j.got == BIG && j.sum == want), f0,
        FL(w));
    close(sv[0]);
    close(sv[1]);
}

/* A pipe filled to capacity, then a write that waits for the reader. */
static void sc_pipe_full(void)
{
    int p[2];
    MUST(pipe(p));
    int cap = fcntl(p[1], F_GETPIPE_SZ);
    MUST(cap);
    long r = write(p[1], bigbuf, (size_t)cap);
    int e = errno;
    out("pipe_write_fill", "%s", r == cap ? "ret=cap errno=0" : RES(r, e));
    struct job j = { .kind = J_DRAIN, .fd = p[0], .delay_ms = 30, .total = (size_t)cap + 1000,
                     .chunk = 4096 };
    int64_t t0 = now_ns();
    job_start(&j);
    r = write(p[1], bigbuf + cap, 1000);
    e = errno;
    double dt = since_ms(t0);
    job_join(&j);
    out("pipe_write_when_full", "%s waited=%s intact=%s fl=%s", RES(r, e), YN(dt >= 25),
        YN(j.got == (size_t)cap + 1000 && j.sum == cksum(CK0, bigbuf, (size_t)cap + 1000)),
        FL(p[1]));
    close(p[0]);
    close(p[1]);
}

/* Fills a (non-blocking) fd with 64 KiB writes until one fails. */
static void fill_until_fail(const char *name, int fd, int flags)
{
    long r = 0;
    int e = 0, n = 0;
    while (n++ < 4096) {
        r = flags < 0 ? write(fd, bigbuf, 65536) : send(fd, bigbuf, 65536, flags);
        if (r < 0) {
            e = errno;
            break;
        }
    }
    out(name, "last=%s fl=%s", RES(r, e), FL(fd));
}

/* A receiving call that must return EAGAIN at once (the program asked for
 * it); a rescuer ends a wrongly parked call. */
static void expect_now(const char *name, enum rop op, int fd, int peer)
{
    char buf[16];
    struct job rs;
    rescue_write(&rs, peer, fd);
    const char *f0 = FL(fd);
    int64_t t0 = now_ns();
    long r = do_rop(op, fd, buf, sizeof buf);
    int e = errno;
    double dt = since_ms(t0);
    job_join(&rs);
    out(name, "%s immediate=%s fl=%s->%s", RES(r, e), YN(dt < RESCUE_MS / 2), f0, FL(fd));
}

static void sc_user_nonblock(void)
{
    int sv[2];
    /* fcntl(F_SETFL, O_NONBLOCK). */
    spair(sv);
    set_nb(sv[0], 1);
    expect_now("fcntl_nb_read", OP_READ, sv[0], sv[1]);
    expect_now("fcntl_nb_recv", OP_RECV, sv[0], sv[1]);
    expect_now("fcntl_nb_readv", OP_READV, sv[0], sv[1]);
    fill_until_fail("fcntl_nb_write_full", sv[0], -1);
    /* Cleared again: blocks until the helper writes. */
    char buf[16];
    long r;
    close(sv[0]);
    close(sv[1]);
    spair(sv);
    set_nb(sv[0], 1);
    set_nb(sv[0], 0);
    struct job j = { .kind = J_WRITE, .fd = sv[1], .delay_ms = 30, .s1 = "hello",
                     .guard = G(sv[0]) };
    int64_t t0 = now_ns();
    job_start(&j);
    r = read(sv[0], buf, sizeof buf);
    int e = errno;
    double dt = since_ms(t0);
    job_join(&j);
    out("fcntl_nb_cleared_read", "%s waited=%s fl=%s", RES(r, e), YN(dt >= 25), FL(sv[0]));
    close(sv[0]);
    close(sv[1]);

    /* ioctl(FIONBIO). */
    spair(sv);
    int on = 1;
    MUST(ioctl(sv[0], FIONBIO, &on));
    expect_now("fionbio_read", OP_READ, sv[0], sv[1]);
    expect_now("fionbio_recv", OP_RECV, sv[0], sv[1]);
    on = 0;
    MUST(ioctl(sv[0], FIONBIO, &on));
    struct job j2 = { .kind = J_WRITE, .fd = sv[1], .delay_ms = 30, .s1 = "hello",
                      .guard = G(sv[0]) };
    t0 = now_ns();
    job_start(&j2);
    r = read(sv[0], buf, sizeof buf);
    e = errno;
    dt = since_ms(t0);
    job_join(&j2);
    out("fionbio_cleared_read", "%s waited=%s fl=%s", RES(r, e), YN(dt >= 25), FL(sv[0]));
    close(sv[0]);
    close(sv[1]);

    /* socketpair(SOCK_NONBLOCK) and pipe2(O_NONBLOCK): flags at creation. */
    MUST(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv));
    expect_now("socketpair_nb_read", OP_READ, sv[0], sv[1]);
    close(sv[0]);
    close(sv[1]);
    MUST(pipe2(sv, O_NONBLOCK));
    expect_now("pipe2_nb_read", OP_READ, sv[0], sv[1]);
    fill_until_fail("pipe2_nb_write_full", sv[1], -1);
    close(sv[0]);
    close(sv[1]);
    MUST(pipe(sv));
    set_nb(sv[0], 1);
    expect_now("pipe_fcntl_nb_read", OP_READ, sv[0], sv[1]);
    close(sv[0]);
    close(sv[1]);

    /* MSG_DONTWAIT on a blocking socket. */
    spair(sv);
    {
        struct job rs;
    rescue_write(&rs, sv[1], sv[0]);
        t0 = now_ns();
        r = recv(sv[0], buf, sizeof buf, MSG_DONTWAIT);
        e = errno;
        dt = since_ms(t0);
        job_join(&rs);
        out("sock_recv_dontwait", "%s immediate=%s fl=%s", RES(r, e), YN(dt < RESCUE_MS / 2),
            FL(sv[0]));
    }
    fill_until_fail("sock_send_dontwait_full", sv[0], MSG_DONTWAIT);
    close(sv[0]);
    close(sv[1]);
}

static void sc_tcp_nonblock(void)
{
    int port;
    /* socket(SOCK_NONBLOCK) listener: accept gives EAGAIN. */
    int l = listener(SOCK_NONBLOCK, &port);
    struct job rs = { .kind = J_RESCUE_CONNECT, .port = port, .guard = G(l) };
    job_start(&rs);
    const char *f0 = FL(l);
    int64_t t0 = now_ns();
    long r = accept(l, NULL, NULL);
    int e = errno;
    double dt = since_ms(t0);
    job_join(&rs);
    out("sock_nb_accept", "%s immediate=%s fl=%s->%s", RESFD(r, e), YN(dt < RESCUE_MS / 2), f0,
        FL(l));
    if (r >= 0)
        close((int)r);
    if (rs.fd2 >= 0)
        close(rs.fd2);

    /* accept4(SOCK_NONBLOCK): the new fd is non-blocking. */
    int c = tcp_connect_port(port);
    MUST(c);
    struct pollfd p = { .fd = l, .events = POLLIN };
    poll(&p, 1, 1000);
    r = accept4(l, NULL, NULL, SOCK_NONBLOCK);
    e = errno;
    out("accept4_nb", "%s fl=%s", RESFD(r, e), r >= 0 ? FL((int)r) : "-");
    if (r >= 0) {
        int s = (int)r;
        expect_now("accept4_nb_read", OP_READ, s, c);
        expect_now("accept4_nb_recv", OP_RECV, s, c);
        close(s);
    }
    close(c);
    close(l);

    /* fcntl(O_NONBLOCK) on a blocking listener. */
    l = listener(0, &port);
    set_nb(l, 1);
    struct job rs2 = { .kind = J_RESCUE_CONNECT, .port = port, .guard = G(l) };
    job_start(&rs2);
    t0 = now_ns();
    r = accept(l, NULL, NULL);
    e = errno;
    dt = since_ms(t0);
    job_join(&rs2);
    out("fcntl_nb_accept", "%s immediate=%s fl=%s", RESFD(r, e), YN(dt < RESCUE_MS / 2), FL(l));
    if (r >= 0)
        close((int)r);
    if (rs2.fd2 >= 0)
        close(rs2.fd2);

    /* A non-blocking connect: 0 or EINPROGRESS, the flag stays. */
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    MUST(s);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f0 = FL(s);
    r = connect(s, (struct sockaddr *)&a, sizeof a);
    e = errno;
    out("sock_nb_connect", "%s fl=%s->%s", r == 0 || e == EINPROGRESS ? "ok-or-inprogress" : RES(r, e),
        f0, FL(s));
    p = (struct pollfd){ .fd = s, .events = POLLOUT };
    poll(&p, 1, 1000);
    int se = -1;
    socklen_t sl = sizeof se;
    getsockopt(s, SOL_SOCKET, SO_ERROR, &se, &sl);
    out("  so_error", "%s", ename(se));
    int peer = accept(l, NULL, NULL);
    MUST(peer);
    expect_now("sock_nb_read_connected", OP_READ, s, peer);
    close(peer);
    close(s);
    close(l);
}

static void sc_accept_connect(void)
{
    int port;
    int l = listener(0, &port);
    /* accept waits for a helper that connects after 30 ms. */
    struct job j = { .kind = J_CONNECT, .port = port, .delay_ms = 30, .guard = G(l) };
    const char *f0 = FL(l);
    int64_t t0 = now_ns();
    job_start(&j);
    long r = accept(l, NULL, NULL);
    int e = errno;
    double dt = since_ms(t0);
    job_join(&j);
    out("tcp_accept_park", "%s waited=%s fl=%s->%s new=%s", RESFD(r, e), YN(dt >= 25), f0, FL(l),
        r >= 0 ? FL((int)r) : "-");
    if (r >= 0) {
        /* the helper's socket and the accepted one talk */
        wr_all(j.fd2, "ping", 4);
        char b[8] = { 0 };
        long n = read((int)r, b, sizeof b);
        int e2 = errno;
        out("  read_accepted", "%s data=%s", RES(n, e2), YN(n == 4 && memcmp(b, "ping", 4) == 0));
        close((int)r);
    }
    if (j.fd2 >= 0)
        close(j.fd2);

    /* accept4 with flags 0 and SOCK_CLOEXEC, waiting too. */
    struct job j2 = { .kind = J_CONNECT, .port = port, .delay_ms = 30, .guard = G(l) };
    t0 = now_ns();
    job_start(&j2);
    r = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    e = errno;
    dt = since_ms(t0);
    job_join(&j2);
    out("tcp_accept4_cloexec_park", "%s waited=%s new=%s cloexec=%s", RESFD(r, e), YN(dt >= 25),
        r >= 0 ? FL((int)r) : "-", r >= 0 ? YN(fcntl((int)r, F_GETFD) & FD_CLOEXEC) : "-");
    if (r >= 0)
        close((int)r);
    if (j2.fd2 >= 0)
        close(j2.fd2);

    /* connect to the listener. */
    int c = socket(AF_INET, SOCK_STREAM, 0);
    MUST(c);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f0 = FL(c);
    r = connect(c, (struct sockaddr *)&a, sizeof a);
    e = errno;
    out("tcp_connect_ok", "%s fl=%s->%s", RES(r, e), f0, FL(c));
    r = connect(c, (struct sockaddr *)&a, sizeof a);
    e = errno;
    out("tcp_connect_again", "%s fl=%s", RES(r, e), FL(c));
    int s = accept(l, NULL, NULL);
    MUST(s);
    wr_all(c, "hi", 2);
    char b[4] = { 0 };
    r = read(s, b, sizeof b);
    e = errno;
    out("  read_over_connection", "%s", RES(r, e));
    close(s);
    close(c);
    close(l);

    /* connect to a port nothing listens on: bound, not listening. */
    int nl = socket(AF_INET, SOCK_STREAM, 0);
    MUST(nl);
    struct sockaddr_in na = { .sin_family = AF_INET };
    na.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    MUST(bind(nl, (struct sockaddr *)&na, sizeof na));
    socklen_t nal = sizeof na;
    MUST(getsockname(nl, (struct sockaddr *)&na, &nal));
    c = socket(AF_INET, SOCK_STREAM, 0);
    MUST(c);
    f0 = FL(c);
    r = connect(c, (struct sockaddr *)&na, sizeof na);
    e = errno;
    out("tcp_connect_refused", "%s fl=%s->%s", RES(r, e), f0, FL(c));
    r = connect(c, (struct sockaddr *)&na, sizeof na);
    e = errno;
    out("  connect_refused_again", "%s fl=%s", RES(r, e), FL(c));
    close(c);
    close(nl);

    /* AF_UNIX (abstract) connect: ok, then refused. */
    struct sockaddr_un ua = { .sun_family = AF_UNIX };
    int ulen = snprintf(ua.sun_path + 1, sizeof ua.sun_path - 1, "corun-hooks-%d-%ld", (int)getpid(),
                        (long)now_ns());
    socklen_t ual = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + ulen);
    int ul = socket(AF_UNIX, SOCK_STREAM, 0);
    MUST(ul);
    MUST(bind(ul, (struct sockaddr *)&ua, ual));
    MUST(listen(ul, 4));
    c = socket(AF_UNIX, SOCK_STREAM, 0);
    f0 = FL(c);
    r = connect(c, (struct sockaddr *)&ua, ual);
    e = errno;
    out("unix_connect_ok", "%s fl=%s->%s", RES(r, e), f0, FL(c));
    close(c);
    close(ul);
    c = socket(AF_UNIX, SOCK_STREAM, 0);
    r = connect(c, (struct sockaddr *)&ua, ual);
    e = errno;
    out("unix_connect_refused", "%s fl=%s", RES(r, e), FL(c));
    close(c);
}

/* dup shares the open file description, hence O_NONBLOCK. */
static void sc_dup(void)
{
    int sv[2];
    char buf[16];
    spair(sv);
    set_nb(sv[0], 1);
    int d = dup(sv[0]);
    MUST(d);
    expect_now("dup_of_nb_read", OP_READ, d, sv[1]);
    /* Clearing O_NONBLOCK on the dup makes both block. */
    set_nb(d, 0);
    const char *names[2] = { "dup_cleared_orig_read", "dup_cleared_dup_read" };
    int fds[2] = { sv[0], d };
    for (int k = 0; k < 2; k++) {
        struct job j = { .kind = J_WRITE, .fd = sv[1], .delay_ms = 30, .s1 = "hello",
                         .guard = G(fds[k]) };
        int64_t t0 = now_ns();
        job_start(&j);
        long r = read(fds[k], buf, sizeof buf);
        int e = errno;
        double dt = since_ms(t0);
        job_join(&j);
        out(names[k], "%s waited=%s fl=%s", RES(r, e), YN(dt >= 25), FL(fds[k]));
    }
    close(d);
    close(sv[0]);
    close(sv[1]);

    /* Setting O_NONBLOCK on the dup makes the original non-blocking too. */
    spair(sv);
    set_nb(sv[0], 0); /* the program says "blocking" explicitly */
    d = dup(sv[0]);
    MUST(d);
    set_nb(d, 1);
    expect_now("dup_set_nb_orig_read", OP_READ, sv[0], sv[1]);
    expect_now("dup_set_nb_dup_read", OP_READ, d, sv[1]);
    close(d);
    close(sv[0]);
    close(sv[1]);
    /* and with FIONBIO on a dup: cleared on the dup, the original blocks */
    spair(sv);
    int on = 1;
    MUST(ioctl(sv[0], FIONBIO, &on));
    d = dup(sv[0]);
    MUST(d);
    on = 0;
    MUST(ioctl(d, FIONBIO, &on));
    {
        struct job j = { .kind = J_WRITE, .fd = sv[1], .delay_ms = 30, .s1 = "hello",
                         .guard = G(sv[0]) };
        int64_t t0 = now_ns();
        job_start(&j);
        long r = read(sv[0], buf, sizeof buf);
        int e = errno;
        double dt = since_ms(t0);
        job_join(&j);
        out("dup_fionbio_off_orig_read", "%s waited=%s fl=%s", RES(r, e), YN(dt >= 25), FL(sv[0]));
    }
    close(d);
    close(sv[0]);
    close(sv[1]);

    /* dup2 / dup3 / F_DUPFD_CLOEXEC of a non-blocking fd. */
    spair(sv);
    set_nb(sv[0], 1);
    int spare[2];
    spair(spare);
    long r = dup2(sv[0], spare[0]);
    int e = errno;
    out("dup2_nb", "%s", RESFD(r, e));
    expect_now("dup2_nb_read", OP_READ, spare[0], sv[1]);
    r = dup3(sv[0], spare[1], O_CLOEXEC);
    e = errno;
    out("dup3_nb", "%s", RESFD(r, e));
    expect_now("dup3_nb_read", OP_READ, spare[1], sv[1]);
    d = fcntl(sv[0], F_DUPFD_CLOEXEC, 0);
    e = errno;
    out("fdupfd_nb", "%s", RESFD(d, e));
    expect_now("fdupfd_nb_read", OP_READ, d, sv[1]);
    close(d);
    close(spare[0]);
    close(spare[1]);
    close(sv[0]);
    close(sv[1]);

    /* dup2 of a blocking fd over a non-blocking one: the target blocks. */
    spair(sv);
    spair(spare);
    set_nb(spare[0], 1);
    MUST(dup2(sv[0], spare[0]));
    {
        struct job j = { .kind = J_WRITE, .fd = sv[1], .delay_ms = 30, .s1 = "hello",
                         .guard = G(spare[0]) };
        int64_t t0 = now_ns();
        job_start(&j);
        r = read(spare[0], buf, sizeof buf);
        e = errno;
        double dt = since_ms(t0);
        job_join(&j);
        out("dup2_over_nb_read", "%s waited=%s fl=%s", RES(r, e), YN(dt >= 25), FL(spare[0]));
    }
    close(spare[0]);
    close(spare[1]);
    close(sv[0]);
    close(sv[1]);
}

/* An fd number closed inside libc (fclose) and reused by pipe(): what was
 * known about the old fd must not apply to the new one. */
static void sc_reuse(void)
{
    int sv[2], p[2];
    char buf[16];
    /* old: non-blocking socket; new: blocking pipe */
    spair(sv);
    set_nb(sv[0], 1);
    expect_now("reuse_old_nb_read", OP_READ, sv[0], sv[1]);
    int old = sv[0];
    FILE *f = fdopen(sv[0], "r+");
    if (!f)
        die("fdopen");
    fclose(f);
    MUST(pipe(p));
    fprintf(stderr, "reuse_new_blocking: fd reused: %s\n", p[0] == old || p[1] == old ? "yes" : "no");
    struct job j = { .kind = J_WRITE, .fd = p[1], .delay_ms = 30, .s1 = "hello",
                     .guard = G(p[0]) };
    int64_t t0 = now_ns();
    job_start(&j);
    long r = read(p[0], buf, sizeof buf);
    int e = errno;
    double dt = since_ms(t0);
    job_join(&j);
    out("reuse_new_blocking_read", "%s waited=%s fl=%s", RES(r, e), YN(dt >= 25), FL(p[0]));
    close(p[0]);
    close(p[1]);
    close(sv[1]);

    /* old: blocking socket (said so with fcntl); new: non-blocking pipe */
    spair(sv);
    set_nb(sv[0], 0);
    {
        struct job j2 = { .kind = J_WRITE, .fd = sv[1], .delay_ms = 30, .s1 = "hello",
                          .guard = G(sv[0]) };
        job_start(&j2);
        r = read(sv[0], buf, sizeof buf);
        e = errno;
        job_join(&j2);
        out("reuse_old_blocking_read", "%s", RES(r, e));
    }
    old = sv[0];
    f = fdopen(sv[0], "r+");
    if (!f)
        die("fdopen");
    fclose(f);
    MUST(pipe2(p, O_NONBLOCK));
    fprintf(stderr, "reuse_new_nb: fd reused: %s\n", p[0] == old || p[1] == old ? "yes" : "no");
    expect_now("reuse_new_nb_read", OP_READ, p[0], p[1]);
    close(p[0]);
    close(p[1]);
    close(sv[1]);

    /* old: blocking socket that was waited on; new: blocking pipe */
    spair(sv);
    {
        struct job j2 = { .kind = J_WRITE, .fd = sv[1], .delay_ms = 30, .s1 = "hello",
                          .guard = G(sv[0]) };
        job_start(&j2);
        r = read(sv[0], buf, sizeof buf);
        e = errno;
        job_join(&j2);
        out("reuse_old_waited_read", "%s", RES(r, e));
    }
    old = sv[0];
    f = fdopen(sv[0], "r+");
    if (!f)
        die("fdopen");
    fclose(f);
    MUST(pipe(p));
    fprintf(stderr, "reuse_new_after_wait: fd reused: %s\n", p[0] == old || p[1] == old ? "yes" : "no");
    {
        struct job j3 = { .kind = J_WRITE, .fd = p[1], .delay_ms = 30, .s1 = "hello",
                          .guard = G(p[0]) };
        int64_t t0 = now_ns();
        job_start(&j3);
        r = read(p[0], buf, sizeof buf);
        e = errno;
        double dt = since_ms(t0);
        job_join(&j3);
        out("reuse_new_after_wait_read", "%s waited=%s fl=%s", RES(r, e), YN(dt >= 25), FL(p[0]));
    }
    close(p[0]);
    close(p[1]);
    close(sv[1]);
}

static void sc_badfd(void)
{
    char buf[8];
    long r;
    int e;
#define BAD(name, call) do { errno = 0; r = (call); e = errno; out(name, "%s", RES(r, e)); } while (0)
    BAD("close_minus1", close(-1));
    BAD("close_unused", close(900));
    int sv[2];
    spair(sv);
    close(sv[0]);
    BAD("close_twice", close(sv[0]));
    BAD("read_closed", read(sv[0], buf, sizeof buf));
    BAD("write_closed", write(sv[0], "x", 1));
    BAD("recv_closed", recv(sv[0], buf, sizeof buf, 0));
    BAD("send_closed", send(sv[0], "x", 1, 0));
    struct iovec iov = { buf, sizeof buf };
    BAD("readv_closed", readv(sv[0], &iov, 1));
    BAD("writev_closed", writev(sv[0], &iov, 1));
    BAD("accept_closed", accept(sv[0], NULL, NULL));
    BAD("fcntl_getfl_closed", fcntl(sv[0], F_GETFL));
    BAD("dup_closed", dup(sv[0]));
    BAD("read_minus1", read(-1, buf, sizeof buf));
    BAD("ioctl_fionbio_closed", ({ int one = 1; ioctl(sv[0], FIONBIO, &one); }));
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(9) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BAD("connect_closed", connect(sv[0], (struct sockaddr *)&a, sizeof a));
    close(sv[1]);

    /* Wrong kinds of fd. */
    int p[2];
    MUST(pipe(p));
    BAD("recv_on_pipe", recv(p[0], buf, sizeof buf, 0));
    BAD("send_on_pipe", send(p[1], "x", 1, 0));
    BAD("connect_on_pipe", connect(p[0], (struct sockaddr *)&a, sizeof a));
    out("  pipe_flags", "fl=%s,%s", FL(p[0]), FL(p[1]));
    BAD("readv_cnt0", readv(p[0], &iov, 0));
    volatile int neg = -1;
    BAD("readv_cnt_neg", readv(p[0], &iov, neg));
    BAD("write_len0", write(p[1], buf, 0));
    BAD("read_len0_pipe_data", (wr_all(p[1], "y", 1), read(p[0], buf, 0)));
    close(p[0]);
    close(p[1]);
    /* accept on an empty pipe: ENOTSOCK at once */
    MUST(pipe(p));
    {
        struct job rs;
    rescue_write(&rs, p[1], p[0]);
        int64_t t0 = now_ns();
        r = accept(p[0], NULL, NULL);
        e = errno;
        double dt = since_ms(t0);
        job_join(&rs);
        out("accept_on_pipe", "%s immediate=%s fl=%s", RESFD(r, e), YN(dt < RESCUE_MS / 2), FL(p[0]));
    }
    close(p[0]);
    close(p[1]);
    /* accept on a connected socketpair end: EINVAL at once */
    spair(sv);
    {
        struct job rs;
    rescue_write(&rs, sv[1], sv[0]);
        int64_t t0 = now_ns();
        r = accept(sv[0], NULL, NULL);
        e = errno;
        double dt = since_ms(t0);
        job_join(&rs);
        out("accept_on_connected", "%s immediate=%s fl=%s", RESFD(r, e), YN(dt < RESCUE_MS / 2),
            FL(sv[0]));
    }
    close(sv[0]);
    close(sv[1]);
    /* A TCP socket neither connected nor listening. */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    MUST(s);
    BAD("tcp_unconnected_read", read(s, buf, sizeof buf));
    BAD("tcp_unconnected_recv", recv(s, buf, sizeof buf, 0));
    BAD("tcp_unconnected_write", write(s, "x", 1));
    BAD("tcp_unconnected_accept", accept(s, NULL, NULL) < 0 ? -1 : 0);
    out("  flags", "fl=%s", FL(s));
    close(s);
    int port;
    int l = listener(0, &port);
    BAD("tcp_listener_read", read(l, buf, sizeof buf));
    BAD("tcp_listener_write", write(l, "x", 1));
    close(l);
#undef BAD
}

static void sc_sleep(void)
{
    struct timespec ts = { 0, 2000000000L }, rem = { 77, 77 };
    errno = 0;
    long r = nanosleep(&ts, &rem);
    int e = errno;
    out("nanosleep_nsec_2e9", "%s", RES(r, e));
    ts = (struct timespec){ 0, -1 };
    r = nanosleep(&ts, NULL);
    e = errno;
    out("nanosleep_nsec_neg", "%s", RES(r, e));
    ts = (struct timespec){ -1, 0 };
    r = nanosleep(&ts, NULL);
    e = errno;
    out("nanosleep_sec_neg", "%s", RES(r, e));
    ts = (struct timespec){ 0, 20000000L };
    rem = (struct timespec){ 77, 77 };
    int64_t t0 = now_ns();
    r = nanosleep(&ts, &rem);
    e = errno;
    int64_t dt = now_ns() - t0;
    out("nanosleep_20ms", "%s slept>=20ms: %s rem_untouched=%s", RES(r, e), YN(dt >= 20000000),
        YN(rem.tv_sec == 77 && rem.tv_nsec == 77));
    ts = (struct timespec){ 0, 0 };
    r = nanosleep(&ts, NULL);
    e = errno;
    out("nanosleep_0", "%s", RES(r, e));
    t0 = now_ns();
    r = usleep(10000);
    e = errno;
    dt = now_ns() - t0;
    out("usleep_10ms", "%s slept>=10ms: %s", RES(r, e), YN(dt >= 10000000));
    r = usleep(0);
    e = errno;
    out("usleep_0", "%s", RES(r, e));
    r = (long)sleep(0);
    out("sleep_0", "ret=%ld", r);
}

/* A signal handled with SA_RESTART while a read waits: the read goes on. */
static void sc_signal_restart(void)
{
    struct sigaction sa = { 0 }, old;
    sa.sa_handler = on_sigusr1;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &old);
    n_sigusr1 = 0;
    int sv[2];
    spair(sv);
    char buf[16];
    struct job j = { .kind = J_SIGNAL_WRITE, .fd = sv[1], .delay_ms = 15, .gap_ms = 20,
                     .s1 = "hello", .guard = G(sv[0]) };
    job_start(&j);
    long r = read(sv[0], buf, sizeof buf);
    int e = errno;
    job_join(&j);
    out("sock_read_sa_restart", "%s signalled=%s fl=%s", RES(r, e), YN(n_sigusr1 > 0), FL(sv[0]));
    close(sv[0]);
    close(sv[1]);
    sigaction(SIGUSR1, &old, NULL);
}

/* SO_RCVTIMEO / SO_SNDTIMEO: the wait ends at the deadline, as the kernel's. */
static void sc_timeouts(void)
{
    int sv[2];
    char buf[16];
    spair(sv);
    struct timeval tv = { 0, 50000 };
    MUST(setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
    MUST(setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv));
    enum rop ops[3] = { OP_READ, OP_RECV, OP_READV };
    for (int k = 0; k < 3; k++) {
        char name[40];
        snprintf(name, sizeof name, "sock_%s_rcvtimeo", rop_name[ops[k]]);
        struct job rs;
        rescue_write(&rs, sv[1], sv[0]);
        int64_t t0 = now_ns();
        long r = do_rop(ops[k], sv[0], buf, sizeof buf);
        int e = errno;
        double dt = since_ms(t0);
        job_join(&rs);
        out(name, "%s waited>=45ms=%s timely=%s fl=%s", RES(r, e), YN(dt >= 45),
            YN(dt < RESCUE_MS / 2), FL(sv[0]));
    }
    /* a 4 MiB write nobody reads: what fits, then the timeout */
    struct job g = { .kind = J_CLOSE, .fd = -1, .guard = G(sv[0]) };
    job_start(&g);
    int64_t t0 = now_ns();
    long r = write(sv[0], bigbuf, BIG);
    int e = errno;
    double dt = since_ms(t0);
    job_join(&g);
    out("sock_write_sndtimeo", "ret=%s errno=%s waited>=45ms=%s fl=%s",
        r < 0 ? "-1" : r == 0 ? "0" : (size_t)r < BIG ? "partial" : "full", ename(r < 0 ? e : 0),
        YN(dt >= 45), FL(sv[0]));
    close(sv[0]);
    close(sv[1]);
}

static void run_all(const char *phase)
{
    uint64_t (*self_id)(void) = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "corun_self_id");
    uint64_t id = self_id ? self_id() : 0;
    fprintf(stderr, "phase %s: corun %s, in coroutine: %s (id %llu)\n", phase,
            self_id ? "loaded" : "absent", id ? "yes" : "no", (unsigned long long)id);
    printf("== %s ==\n", phase);
    int64_t t0 = now_ns();
    sigpipe_ignored();
    for (int op = 0; op < 4; op++)
        sc_park_read((enum rop)op, 0);
    for (int op = 0; op < 4; op++)
        if (op != OP_RECV && op != OP_PEEK)
            sc_park_read((enum rop)op, 1);
    for (int op = 0; op < 4; op++)
        sc_partial((enum rop)op, 0);
    sc_partial(OP_READ, 1);
    for (int op = 0; op < 3; op++) {
        sc_eof((enum rop)op, 0, 0);
        sc_eof((enum rop)op, 0, 1);
    }
    sc_eof(OP_READ, 1, 0);
    sc_eof(OP_READ, 1, 1);
    sc_peek_then_read();
    sc_waitall();
    sc_tcp_reset();
    sc_epipe();
    sc_epipe_partial();
    for (int how = 0; how < 4; how++)
        sc_big_write(how);
    sc_pipe_full();
    sc_user_nonblock();
    sc_tcp_nonblock();
    sc_accept_connect();
    sc_dup();
    sc_reuse();
    sc_badfd();
    sc_sleep();
    sc_signal_restart();
    sc_timeouts();
    fflush(stdout);
    fprintf(stderr, "phase %s: %.0f ms\n", phase, since_ms(t0));
}

__attribute__((constructor)) static void before_main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    alarm(20); /* a safety net: nothing here should take more than a few s */
    bigbuf = malloc(2 * BIG);
    if (!bigbuf)
        die("malloc");
    fill_pattern(bigbuf, 2 * BIG, 7);
    run_all("ctor");
}

int main(void)
{
    alarm(20);
    run_all("main");
    free(bigbuf);
    return 0;
}
