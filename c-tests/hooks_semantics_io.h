/*
 * hooks_semantics_io.h - the data scenarios of hooks_semantics.c: a read
 * that parks until a helper writes, partial reads, EOF, MSG_PEEK and
 * MSG_WAITALL, a TCP reset, EPIPE, big writes and a full pipe.
 */
#ifndef HOOKS_SEMANTICS_IO_H
#define HOOKS_SEMANTICS_IO_H

#include "hooks_semantics.h"

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

#endif
