/*
 * hooks_semantics_fd.h - the fd scenarios of hooks_semantics.c: the
 * program's own O_NONBLOCK on sockets and pipes, accept and connect, dup
 * and dup2 of a parked fd, a reused fd number, bad fds.
 */
#ifndef HOOKS_SEMANTICS_FD_H
#define HOOKS_SEMANTICS_FD_H

#include "hooks_semantics.h"

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

#endif
