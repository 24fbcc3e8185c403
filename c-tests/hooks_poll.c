/*
 * hooks_poll [tty] - waiting family transcript (see transcript.h).
 *
 * poll, ppoll, select, pselect, epoll_wait, epoll_pwait, epoll_pwait2 and
 * the fortified __poll_chk/__ppoll_chk: many fds with one becoming ready
 * later, zero and negative and expiring timeouts, POLLHUP, POLLERR,
 * POLLNVAL, POLLPRI (TCP urgent data), POLLRDHUP, fd -1, events 0, pipes,
 * an eventfd, a timerfd, a TCP pair, a signal mask that unblocks a pending
 * signal, and the program's own epoll set (level-triggered, one-shot).
 * With "tty" (run under script(1), which types a line later): POLLOUT, a
 * write and a read that waits on a terminal.
 */
#undef _FORTIFY_SOURCE
#define _FORTIFY_SOURCE 2
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

#include "transcript.h"

#define NPIPES 100

static void print_revents(const char *label, struct pollfd *p, int n)
{
    printf("%s:", label);
    for (int i = 0; i < n; i++)
        if (p[i].revents)
            printf(" [%d]=%#x", i, p[i].revents);
    printf("\n");
}

static int tcp_a = -1, tcp_b = -1; /* a connected TCP pair */

static void tcp_pair(void)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&a, &al))
        exit(2);
    tcp_b = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(tcp_b, (struct sockaddr *)&a, sizeof a))
        exit(2);
    tcp_a = accept(l, NULL, NULL);
    if (tcp_a < 0)
        exit(2);
    close(l);
}

/* After a wait that a peer's two steps end (data then shutdown, or a
 * reset), lets the second step land before looking: whether a reader that
 * woke on the first still sees the second arrive is a race natively too,
 * which the transcript must not depend on. Prints the settled answer. */
static void settled(struct pollfd *p)
{
    usleep(50000);
    T("settled: poll again, timeout 0", poll(p, 1, 0));
}

static void do_oob(void *p) { send(*(int *)p, "!", 1, MSG_OOB); }
static void do_shut(void *p) { shutdown(*(int *)p, SHUT_WR); }
static void do_data_shut(void *p)
{
    if (send(*(int *)p, "last", 4, 0) != 4)
        exit(3);
    shutdown(*(int *)p, SHUT_WR);
}
static void do_reset(void *p)
{
    struct linger l = {1, 0};
    setsockopt(*(int *)p, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(*(int *)p);
}

/* Reads the non-blocking socket until EAGAIN (or EOF, or an error),
 * printing what each read got: a server's read loop before it polls. */
static void drain(int fd, const char *label)
{
    char b[64], l[96];
    for (int i = 0; i < 8; i++) {
        snprintf(l, sizeof l, "%s: read", label);
        long r = T(l, read(fd, b, sizeof b));
        if (r <= 0)
            return;
    }
}

/* A server's connection: read until EAGAIN, then poll the one socket for
 * input (corun answers some of these without asking the kernel: each
 * answer must be the kernel's, revents and all). */
static void read_then_poll(void)
{
    char b[8];
    int fl = fcntl(tcp_a, F_GETFL);
    T("fcntl O_NONBLOCK on the TCP socket", fcntl(tcp_a, F_SETFL, fl | O_NONBLOCK));
    struct pollfd in = {tcp_a, POLLIN, 0};
    drain(tcp_a, "empty");
    later_write(DELAY, tcp_b, "req1", 4);
    WAITS("read-then-poll POLLIN (data later)", poll(&in, 1, -1));
    print_revents("revents", &in, 1);
    drain(tcp_a, "req1");
    struct pollfd rd = {tcp_a, POLLIN | POLLRDNORM, 0};
    later_write(DELAY, tcp_b, "req2", 4);
    WAITS("read-then-poll POLLIN|POLLRDNORM (data later)", poll(&rd, 1, 10000));
    print_revents("revents", &rd, 1);
    drain(tcp_a, "req2");
    uint64_t t0 = tr_now_ms();
    WAITS("read-then-poll POLLIN, timeout 100 (nothing)", poll(&in, 1, 100));
    CHECK("waited the timeout", tr_now_ms() - t0 >= 90);
    /* Data that came between the read and the poll: ready at once. */
    T("send before the poll", send(tcp_b, "req3", 4, 0));
    usleep(20000);
    T("read-then-poll POLLIN (data came before)", poll(&in, 1, -1));
    print_revents("revents", &in, 1);
    drain(tcp_a, "req3");
    /* Two sends in a row: one poll, both there after. */
    later_write(DELAY, tcp_b, "r4a", 3);
    WAITS("read-then-poll POLLIN (data later, again)", poll(&in, 1, -1));
    print_revents("revents", &in, 1);
    T("recv MSG_PEEK", recv(tcp_a, b, sizeof b, MSG_PEEK));
    drain(tcp_a, "r4");
    /* The last data and the peer's shutdown together. */
    later(DELAY, do_data_shut, &tcp_b);
    WAITS("read-then-poll POLLIN (data and shutdown later)", poll(&in, 1, -1));
    settled(&in);
    print_revents("revents", &in, 1);
    drain(tcp_a, "last");
    close(tcp_a);
    close(tcp_b);
    /* A reset: error and hang-up. */
    tcp_pair();
    T("fcntl O_NONBLOCK on the new socket", fcntl(tcp_a, F_SETFL, fl | O_NONBLOCK));
    in.fd = tcp_a;
    drain(tcp_a, "empty again");
    later(DELAY, do_reset, &tcp_b);
    WAITS("read-then-poll POLLIN (peer resets later)", poll(&in, 1, -1));
    settled(&in);
    print_revents("revents", &in, 1);
    drain(tcp_a, "after reset");
    close(tcp_a);
    tcp_pair(); /* for what follows */
}

static volatile int got_signal;
static void on_usr1(int sig)
{
    (void)sig;
    got_signal = 1;
}

static char fill[1 << 20];

/* Consumes the one byte a helper wrote. */
static void eat(int fd)
{
    char c;
    if (read(fd, &c, 1) != 1)
        exit(3);
}

static int tty_mode(void)
{
    struct pollfd p = {1, POLLOUT, 0};
    CHECK("stdout is a tty", isatty(1));
    T("poll tty POLLOUT", poll(&p, 1, -1));
    print_revents("revents", &p, 1);
    T("write to tty", write(1, "tty line\n", 9));
    /* The script feeds a line to the terminal after a while. */
    char line[64];
    WAITS("read tty (a line typed later)", read(0, line, sizeof line));
    return tr_end();
}

int main(int argc, char **argv)
{
    tr_start();
    if (argc > 1 && strcmp(argv[1], "tty") == 0)
        return tty_mode();
    signal(SIGPIPE, SIG_IGN);
    char buf[256];
    uint64_t t0;
    int p[NPIPES][2];
    struct pollfd pf[NPIPES + 2];

    /* Many fds, one ready later. */
    for (int i = 0; i < NPIPES; i++) {
        if (pipe(p[i]))
            exit(2);
        pf[i].fd = p[i][0];
        pf[i].events = POLLIN;
    }
    T("poll 100 pipes, timeout 0", poll(pf, NPIPES, 0));
    later_write(DELAY, p[73][1], "x", 1);
    WAITS("poll 100 pipes, timeout -1 (#73 later)", poll(pf, NPIPES, -1));
    print_revents("revents", pf, NPIPES);
    eat(p[73][0]);
    t0 = tr_now_ms();
    WAITS("poll 100 pipes, timeout 100 (nothing)", poll(pf, NPIPES, 100));
    CHECK("waited the timeout", tr_now_ms() - t0 >= 90);
    later_write(DELAY, p[5][1], "y", 1);
    WAITS("poll 100 pipes, timeout 10000 (#5 later)", poll(pf, NPIPES, 10000));
    print_revents("revents", pf, NPIPES);
    eat(p[5][0]);

    /* fd -1 is ignored; events 0 still reports HUP; POLLNVAL. */
    struct pollfd q[3] = {{-1, POLLIN, 0}, {p[7][0], 0, 0}, {p[8][0], POLLIN, 0}};
    later_close(DELAY, p[7][1]);
    WAITS("poll {-1, events 0 (writer closes later), pipe}", poll(q, 3, -1));
    print_revents("revents", q, 3);
    close(p[9][0]);
    struct pollfd nv[2] = {{p[9][0], POLLIN, 0}, {p[10][0], POLLIN, 0}};
    T("poll closed fd", poll(nv, 2, -1));
    print_revents("revents", nv, 2);
    later_close(DELAY, p[11][1]);
    struct pollfd hup = {p[11][0], POLLIN, 0};
    WAITS("poll POLLIN, writer closes later", poll(&hup, 1, -1));
    print_revents("revents", &hup, 1);
    close(p[12][0]);
    struct pollfd err = {p[12][1], POLLOUT, 0};
    T("poll POLLOUT, reader gone", poll(&err, 1, -1));
    print_revents("revents", &err, 1);

    /* A full pipe drained later: POLLOUT. */
    T("fcntl O_NONBLOCK to fill", fcntl(p[13][1], F_SETFL, O_NONBLOCK));
    long filled = 0, w;
    while ((w = write(p[13][1], fill, sizeof fill)) > 0)
        filled += w;
    T("fcntl back to blocking", fcntl(p[13][1], F_SETFL, 0));
    volatile size_t drained = 0;
    later_drain(DELAY, p[13][0], (size_t)filled, &drained);
    struct pollfd out = {p[13][1], POLLOUT, 0};
    WAITS("poll POLLOUT on a full pipe (drained later)", poll(&out, 1, -1));
    print_revents("revents", &out, 1);
    while (drained != (size_t)filled)
        usleep(1000);

    /* eventfd, timerfd. */
    int efd = eventfd(0, 0);
    static uint64_t one = 1;
    later_write(DELAY, efd, &one, 8);
    struct pollfd ev = {efd, POLLIN, 0};
    WAITS("poll eventfd (written later)", poll(&ev, 1, -1));
    print_revents("revents", &ev, 1);
    int tfd = timerfd_create(CLOCK_MONOTONIC, 0);
    struct itimerspec its = {{0, 0}, {0, DELAY * 1000000L}};
    timerfd_settime(tfd, 0, &its, NULL);
    struct pollfd tv = {tfd, POLLIN, 0};
    WAITS("poll timerfd (expires later)", poll(&tv, 1, -1));
    print_revents("revents", &tv, 1);

    /* TCP: urgent data (POLLPRI), peer shutdown (POLLRDHUP). */
    tcp_pair();
    later(DELAY, do_oob, &tcp_b);
    struct pollfd pri = {tcp_a, POLLPRI, 0};
    WAITS("poll POLLPRI (urgent data later)", poll(&pri, 1, -1));
    print_revents("revents", &pri, 1);
    T("recv MSG_OOB", recv(tcp_a, buf, 1, MSG_OOB));
    later(DELAY, do_shut, &tcp_b);
    struct pollfd rdh = {tcp_a, POLLIN | POLLRDHUP, 0};
    WAITS("poll POLLRDHUP (peer shuts down later)", poll(&rdh, 1, -1));
    print_revents("revents", &rdh, 1);

    close(tcp_a);
    close(tcp_b);
    tcp_pair();
    read_then_poll();

    /* Fortified names: the count is not a constant. */
    volatile nfds_t vn = 2;
    struct pollfd two[2] = {{p[20][0], POLLIN, 0}, {p[21][0], POLLIN, 0}};
    later_write(DELAY, p[21][1], "z", 1);
    WAITS("poll fortified (#1 later)", poll(two, vn, -1));
    print_revents("revents", two, 2);
    eat(p[21][0]);
    later_write(DELAY, p[20][1], "z", 1);
    WAITS("ppoll fortified, NULL timeout (#0 later)", ppoll(two, vn, NULL, NULL));
    print_revents("revents", two, 2);
    eat(p[20][0]);
    struct timespec ts100 = {0, 100000000};
    t0 = tr_now_ms();
    WAITS("ppoll 100ms (nothing)", ppoll(two, vn, &ts100, NULL));
    CHECK("waited the timeout", tr_now_ms() - t0 >= 90);
    CHECK("ppoll left its timespec alone", ts100.tv_sec == 0 && ts100.tv_nsec == 100000000);

    /* A signal mask that unblocks a pending signal: EINTR at once. */
    signal(SIGUSR1, on_usr1);
    sigset_t blk, none;
    sigemptyset(&blk);
    sigaddset(&blk, SIGUSR1);
    sigemptyset(&none);
    sigprocmask(SIG_BLOCK, &blk, NULL);
    raise(SIGUSR1);
    T("ppoll with a mask unblocking a pending signal", ppoll(two, 2, NULL, &none));
    CHECK("handler ran", got_signal);
    got_signal = 0;
    raise(SIGUSR1);
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(p[20][0], &rs);
    T("pselect with a mask unblocking a pending signal", pselect(p[20][0] + 1, &rs, NULL, NULL, NULL, &none));
    CHECK("handler ran", got_signal);
    sigprocmask(SIG_UNBLOCK, &blk, NULL);

    /* select / pselect. */
    int maxfd = 0;
    FD_ZERO(&rs);
    for (int i = 30; i < 40; i++) {
        FD_SET(p[i][0], &rs);
        if (p[i][0] > maxfd)
            maxfd = p[i][0];
    }
    fd_set keep = rs;
    later_write(DELAY, p[35][1], "s", 1);
    WAITS("select 10 pipes, NULL timeout (#35 later)", select(maxfd + 1, &rs, NULL, NULL, NULL));
    CHECK("only #35 set", FD_ISSET(p[35][0], &rs) && !FD_ISSET(p[34][0], &rs));
    eat(p[35][0]);
    rs = keep;
    struct timeval tmo = {0, 100000};
    t0 = tr_now_ms();
    WAITS("select 100ms (nothing)", select(maxfd + 1, &rs, NULL, NULL, &tmo));
    CHECK("waited the timeout", tr_now_ms() - t0 >= 90);
    CHECK("timeval updated to 0", tmo.tv_sec == 0 && tmo.tv_usec == 0);
    CHECK("sets cleared", !FD_ISSET(p[30][0], &rs) && !FD_ISSET(p[39][0], &rs));
    rs = keep;
    tmo.tv_sec = 10;
    tmo.tv_usec = 0;
    later_write(DELAY, p[31][1], "s", 1);
    WAITS("select 10s (#31 later)", select(maxfd + 1, &rs, NULL, NULL, &tmo));
    CHECK("timeval holds the time left", tmo.tv_sec < 10 && tmo.tv_sec >= 0);
    eat(p[31][0]);
    fd_set ws, xs;
    FD_ZERO(&ws);
    FD_SET(p[30][1], &ws);
    rs = keep;
    T("select readable and writable, timeout NULL", select(maxfd + 1, &rs, &ws, NULL, NULL));
    CHECK("write end set", FD_ISSET(p[30][1], &ws));
    FD_ZERO(&xs);
    FD_SET(tcp_b, &xs);
    FD_ZERO(&rs);
    FD_SET(tcp_b, &rs);
    later(DELAY, do_oob, &tcp_a);
    WAITS("select exceptfds (urgent data later)", select(tcp_b + 1, NULL, NULL, &xs, NULL));
    CHECK("exceptfds set", FD_ISSET(tcp_b, &xs));
    rs = keep;
    close(p[50][0]);
    FD_SET(p[50][0], &rs);
    T("select with a closed fd", select(p[50][0] + 1, &rs, NULL, NULL, NULL));
    t0 = tr_now_ms();
    tmo.tv_sec = 0;
    tmo.tv_usec = 100000;
    WAITS("select as a sleep (nfds 0, 100ms)", select(0, NULL, NULL, NULL, &tmo));
    CHECK("slept", tr_now_ms() - t0 >= 90);
    rs = keep;
    struct timespec pts = {5, 0};
    later_write(DELAY, p[33][1], "s", 1);
    WAITS("pselect 5s (#33 later)", pselect(maxfd + 1, &rs, NULL, NULL, &pts, NULL));
    CHECK("#33 set", FD_ISSET(p[33][0], &rs));
    CHECK("pselect left its timespec alone", pts.tv_sec == 5 && pts.tv_nsec == 0);
    eat(p[33][0]);
    tmo.tv_sec = 0;
    tmo.tv_usec = -1;
    T("select with an invalid timeout", select(0, NULL, NULL, NULL, &tmo));
    struct pollfd *volatile bad = (struct pollfd *)8;
    T("poll with an invalid pointer", poll(bad, 1, 10));

    /* The program's own epoll set. */
    int ep = T("epoll_create1", epoll_create1(EPOLL_CLOEXEC));
    struct epoll_event e = {.events = EPOLLIN, .data.u32 = 4242};
    T("epoll_ctl ADD pipe #40", epoll_ctl(ep, EPOLL_CTL_ADD, p[40][0], &e));
    struct epoll_event got[4];
    T("epoll_wait timeout 0", epoll_wait(ep, got, 4, 0));
    later_write(DELAY, p[40][1], "e", 1);
    WAITS("epoll_wait -1 (#40 later)", epoll_wait(ep, got, 4, -1));
    CHECK("data and events", got[0].data.u32 == 4242 && got[0].events == EPOLLIN);
    T("epoll_wait again (level-triggered: still there)", epoll_wait(ep, got, 4, -1));
    eat(p[40][0]);
    t0 = tr_now_ms();
    WAITS("epoll_wait 100ms (nothing)", epoll_wait(ep, got, 4, 100));
    CHECK("waited the timeout", tr_now_ms() - t0 >= 90);
    e.events = EPOLLIN | EPOLLONESHOT;
    T("epoll_ctl MOD oneshot", epoll_ctl(ep, EPOLL_CTL_MOD, p[40][0], &e));
    later_write(DELAY, p[40][1], "e", 1);
    WAITS("epoll_pwait -1 oneshot (#40 later)", epoll_pwait(ep, got, 4, -1, NULL));
    WAITS("epoll_pwait 100ms after the shot", epoll_pwait(ep, got, 4, 100, NULL));
    eat(p[40][0]);
    e.events = EPOLLIN;
    e.data.u32 = 4343;
    T("epoll_ctl ADD eventfd", epoll_ctl(ep, EPOLL_CTL_ADD, efd, &e));
    if (read(efd, &one, 8) != 8)
        exit(3);
    one = 1;
    later_write(DELAY, efd, &one, 8);
    struct timespec e5 = {5, 0};
    WAITS("epoll_pwait2 5s (eventfd later)", epoll_pwait2(ep, got, 4, &e5, NULL));
    CHECK("eventfd data", got[0].data.u32 == 4343);
    T("epoll_wait on a pipe", epoll_wait(p[41][0], got, 4, 100));
    T("epoll_wait on a bad fd", epoll_wait(999, got, 4, 100));
    T("epoll_wait maxevents 0", epoll_wait(ep, got, 0, 100));
    close(ep);
    return tr_end();
}
