/*
 * hooks_sock - socket family transcript (see transcript.h).
 *
 * accept/accept4/connect/recv/recvfrom/recvmsg/recvmmsg/send/sendto/
 * sendmsg/sendmmsg/shutdown/setsockopt/getsockopt and the fortified
 * __recv_chk/__recvfrom_chk over TCP, UDP and AF_UNIX: peers that act
 * later, MSG_WAITALL/MSG_PEEK/MSG_DONTWAIT/MSG_WAITFORONE, SO_RCVTIMEO and
 * SO_SNDTIMEO expiring (errno and partial count), a connect that times out
 * on a full backlog, ECONNREFUSED, the program's SOCK_NONBLOCK wish.
 */
#undef _FORTIFY_SOURCE
#define _FORTIFY_SOURCE 2
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include "transcript.h"

static struct sockaddr_in tcp_addr; /* the listener */
static volatile int client = -1;     /* set by later_connect */

static void do_connect(void *p)
{
    struct sockaddr_in *a = p;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int rcvbuf = 65536; /* fixed, so a peer that never reads fills up the same way */
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    if (connect(fd, (struct sockaddr *)a, sizeof *a) != 0) {
        perror("helper connect");
        exit(2);
    }
    client = fd;
}

/* Starts a client that connects later; accept may return before the
 * helper has stored its fd, so wait_client() waits for that. */
static void later_connect(void)
{
    client = -1;
    later(DELAY, do_connect, &tcp_addr);
}

static void wait_client(void)
{
    while (client < 0)
        usleep(1000);
}

static void do_shutdown(void *p)
{
    (void)p;
    shutdown(client, SHUT_WR);
}

static int listener(struct sockaddr_in *a, int backlog)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof *a;
    if (bind(l, (struct sockaddr *)a, sizeof *a) || listen(l, backlog) ||
        getsockname(l, (struct sockaddr *)a, &al)) {
        perror("listener");
        exit(2);
    }
    return l;
}

static int timeo(int fd, int name, long ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return setsockopt(fd, SOL_SOCKET, name, &tv, sizeof tv);
}

static long timeo_get(int fd, int name)
{
    struct timeval tv;
    socklen_t l = sizeof tv;
    if (getsockopt(fd, SOL_SOCKET, name, &tv, &l))
        return -1;
    return tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

#define FDOK(x) ({ long v_ = (x); v_ >= 0 ? 1 : v_; })

static char big[8 << 20];

int main(void)
{
    tr_start();
    signal(SIGPIPE, SIG_IGN);
    char buf[256];
    uint64_t t0;

    /* accept waits for a client; data arrives later. */
    int l = listener(&tcp_addr, 16);
    later_connect();
    int c;
    WAITS("accept (client later)", FDOK(c = accept(l, NULL, NULL)));
    wait_client();
    CHECK("accepted socket blocking", !tr_nonblock(c));
    later_write(DELAY, client, "hello", 5);
    WAITS("recv (data later)", recv(c, buf, sizeof buf, 0));
    struct sockaddr_in from;
    socklen_t fl = sizeof from;
    later_write(DELAY, client, "from!", 5);
    WAITS("recvfrom tcp (data later)", recvfrom(c, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl));
    later_parts(client, "abcd", "efghij", NULL);
    WAITS("recv MSG_WAITALL 10 (4 then 6 later)", recv(c, buf, 10, MSG_WAITALL));
    CHECK("waitall bytes", memcmp(buf, "abcdefghij", 10) == 0);
    later_write(DELAY, client, "peek", 4);
    WAITS("recv MSG_PEEK (data later)", recv(c, buf, sizeof buf, MSG_PEEK));
    T("recv after peek", recv(c, buf, sizeof buf, 0));
    T("recv MSG_DONTWAIT (nothing)", recv(c, buf, sizeof buf, MSG_DONTWAIT));
    volatile size_t len = sizeof buf;
    later_write(DELAY, client, "chk", 3);
    WAITS("recv fortified (data later)", recv(c, buf, len, 0));
    later_write(DELAY, client, "chk2", 4);
    WAITS("recvfrom fortified (data later)", recvfrom(c, buf, len, 0, NULL, NULL));

    /* SO_RCVTIMEO: EAGAIN at the deadline, or the partial count. */
    T("setsockopt SO_RCVTIMEO 100ms", timeo(c, SO_RCVTIMEO, 100));
    T("getsockopt SO_RCVTIMEO (ms)", timeo_get(c, SO_RCVTIMEO));
    t0 = tr_now_ms();
    WAITS("recv with SO_RCVTIMEO (nothing comes)", recv(c, buf, sizeof buf, 0));
    CHECK("waited the timeout", tr_now_ms() - t0 >= 90);
    WAITS("read with SO_RCVTIMEO (nothing comes)", read(c, buf, sizeof buf));
    T("peer sends 3", write(client, "123", 3));
    WAITS("recv MSG_WAITALL 10 with SO_RCVTIMEO (3 there)", recv(c, buf, 10, MSG_WAITALL));
    T("setsockopt SO_RCVTIMEO 0 (none)", timeo(c, SO_RCVTIMEO, 0));
    later_write(DELAY, client, "late", 4);
    WAITS("recv without timeout (data later)", recv(c, buf, sizeof buf, 0));

    /* SO_SNDTIMEO: the peer never reads; partial count, then EAGAIN. */
    int sndbuf = 65536;
    T("setsockopt SO_SNDBUF 64k", setsockopt(c, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf));
    T("setsockopt SO_SNDTIMEO 100ms", timeo(c, SO_SNDTIMEO, 100));
    long n = WAITS("send 8 MiB with SO_SNDTIMEO, peer not reading", send(c, big, sizeof big, 0) > 0);
    (void)n;
    WAITS("send again with SO_SNDTIMEO", send(c, big, sizeof big, 0));
    WAITS("write with SO_SNDTIMEO", write(c, big, sizeof big));
    CHECK("socket left blocking", !tr_nonblock(c));

    /* shutdown by the peer: EOF; peer gone: EPIPE. */
    T("setsockopt SO_RCVTIMEO 0", timeo(c, SO_RCVTIMEO, 0));
    close(c);
    later_connect();
    WAITS("accept (client later)", FDOK(c = accept(l, NULL, NULL)));
    wait_client();
    later(DELAY, do_shutdown, NULL);
    WAITS("recv (peer shuts down later)", recv(c, buf, sizeof buf, 0));
    close(client);
    usleep(20000);
    T("send to closed peer (RST comes back)", send(c, "x", 1, 0));
    usleep(20000);
    T("send to closed peer again", send(c, "x", 1, 0));
    close(c);

    /* accept with SO_RCVTIMEO; the accepted socket inherits the timeout. */
    T("setsockopt listener SO_RCVTIMEO 100ms", timeo(l, SO_RCVTIMEO, 100));
    t0 = tr_now_ms();
    WAITS("accept with SO_RCVTIMEO (nobody comes)", accept(l, NULL, NULL));
    CHECK("waited the timeout", tr_now_ms() - t0 >= 90);
    /* Generous: the helper may be late on a loaded machine. */
    T("setsockopt listener SO_RCVTIMEO 5s", timeo(l, SO_RCVTIMEO, 5000));
    later_connect();
    WAITS("accept with SO_RCVTIMEO (client later)", FDOK(c = accept(l, NULL, NULL)));
    wait_client();
    close(c);
    close(client);
    T("setsockopt listener SO_RCVTIMEO 100ms", timeo(l, SO_RCVTIMEO, 100));
    client = -1;
    do_connect(&tcp_addr);
    T("accept (client already there)", FDOK(c = accept(l, NULL, NULL)));
    T("getsockopt accepted SO_RCVTIMEO (ms)", timeo_get(c, SO_RCVTIMEO));
    t0 = tr_now_ms();
    WAITS("recv on accepted (inherited timeout)", recv(c, buf, sizeof buf, 0));
    CHECK("waited the inherited timeout", tr_now_ms() - t0 >= 90);
    close(c);
    close(client);
    close(l);

    /* connect: refused; timing out on a full backlog (SYNs dropped). */
    struct sockaddr_in a2;
    int l2 = listener(&a2, 0);
    close(l2);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    T("connect to a closed port", connect(s, (struct sockaddr *)&a2, sizeof a2));
    close(s);
    l2 = listener(&a2, 0);
    int fill[4];
    for (int i = 0; i < 4; i++) {
        fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(fill[i], (struct sockaddr *)&a2, sizeof a2);
    }
    usleep(50000);
    s = socket(AF_INET, SOCK_STREAM, 0);
    T("setsockopt SO_SNDTIMEO 150ms", timeo(s, SO_SNDTIMEO, 150));
    t0 = tr_now_ms();
    WAITS("connect with SO_SNDTIMEO, backlog full", connect(s, (struct sockaddr *)&a2, sizeof a2));
    CHECK("waited the timeout", tr_now_ms() - t0 >= 140);
    CHECK("connecting socket left blocking", !tr_nonblock(s));
    close(s);
    for (int i = 0; i < 4; i++)
        close(fill[i]);
    close(l2);

    /* The program's own non-blocking wish. */
    l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    memset(&tcp_addr, 0, sizeof tcp_addr);
    tcp_addr.sin_family = AF_INET;
    tcp_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fl = sizeof tcp_addr;
    bind(l, (struct sockaddr *)&tcp_addr, sizeof tcp_addr);
    listen(l, 16);
    getsockname(l, (struct sockaddr *)&tcp_addr, &fl);
    T("accept on SOCK_NONBLOCK listener", accept(l, NULL, NULL));
    client = -1;
    do_connect(&tcp_addr);
    usleep(20000);
    T("accept4 SOCK_NONBLOCK", FDOK(c = accept4(l, NULL, NULL, SOCK_NONBLOCK)));
    CHECK("accept4 SOCK_NONBLOCK socket is non-blocking", tr_nonblock(c));
    T("recv on it (nothing)", recv(c, buf, sizeof buf, 0));
    T("read on it (nothing)", read(c, buf, sizeof buf));
    close(c);
    close(client);
    close(l);

    /* UDP: recvfrom, recvmmsg, sendmmsg, sendto. */
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in ua = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t ual = sizeof ua;
    bind(u, (struct sockaddr *)&ua, sizeof ua);
    getsockname(u, (struct sockaddr *)&ua, &ual);
    int us = socket(AF_INET, SOCK_DGRAM, 0);
    connect(us, (struct sockaddr *)&ua, sizeof ua);
    later_write(DELAY, us, "dgram", 5);
    fl = sizeof from;
    WAITS("recvfrom udp (datagram later)", recvfrom(u, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl));
    CHECK("source is loopback", from.sin_family == AF_INET && from.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
    char mb[3][16];
    struct iovec mi[3];
    struct mmsghdr mm[3];
    memset(mm, 0, sizeof mm);
    for (int i = 0; i < 3; i++) {
        mi[i].iov_base = mb[i];
        mi[i].iov_len = sizeof mb[i];
        mm[i].msg_hdr.msg_iov = &mi[i];
        mm[i].msg_hdr.msg_iovlen = 1;
    }
    later_parts(us, "one", "two", "three");
    WAITS("recvmmsg vlen 3 (datagrams later, one by one)", recvmmsg(u, mm, 3, 0, NULL));
    CHECK("recvmmsg lengths", mm[0].msg_len == 3 && mm[1].msg_len == 3 && mm[2].msg_len == 5);
    later_write(DELAY, us, "solo", 4);
    WAITS("recvmmsg MSG_WAITFORONE (one later)", recvmmsg(u, mm, 3, MSG_WAITFORONE, NULL));
    struct iovec si[3] = {{"a", 1}, {"bb", 2}, {"ccc", 3}};
    struct mmsghdr sm[3];
    memset(sm, 0, sizeof sm);
    for (int i = 0; i < 3; i++) {
        sm[i].msg_hdr.msg_iov = &si[i];
        sm[i].msg_hdr.msg_iovlen = 1;
    }
    T("sendmmsg 3", sendmmsg(us, sm, 3, 0));
    T("recvmmsg them", recvmmsg(u, mm, 3, 0, NULL));
    CHECK("sendmmsg lengths", mm[0].msg_len == 1 && mm[1].msg_len == 2 && mm[2].msg_len == 3);
    T("sendto udp", sendto(us, "to", 2, 0, NULL, 0));
    T("recv udp", recv(u, buf, sizeof buf, 0));
    T("setsockopt udp SO_RCVTIMEO 100ms", timeo(u, SO_RCVTIMEO, 100));
    WAITS("recvmmsg with SO_RCVTIMEO (nothing)", recvmmsg(u, mm, 3, 0, NULL));
    close(u);
    close(us);

    /* recvmsg/sendmsg on an AF_UNIX stream. */
    int sp[2];
    T("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, sp));
    later_write(DELAY, sp[1], "msg!", 4);
    struct msghdr mh = {0};
    struct iovec rv = {buf, sizeof buf};
    mh.msg_iov = &rv;
    mh.msg_iovlen = 1;
    WAITS("recvmsg (data later)", recvmsg(sp[0], &mh, 0));
    char w1[4], w2[6];
    struct iovec wv[2] = {{w1, 4}, {w2, 6}};
    mh.msg_iov = wv;
    mh.msg_iovlen = 2;
    later_parts(sp[1], "0123", "456789", NULL);
    WAITS("recvmsg MSG_WAITALL 10 (4 then 6 later)", recvmsg(sp[0], &mh, MSG_WAITALL));
    CHECK("recvmsg waitall bytes", memcmp(w1, "0123", 4) == 0 && memcmp(w2, "456789", 6) == 0);
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)(i * 13 + 1);
    volatile size_t drained = 0;
    later_drain(DELAY, sp[1], 3 << 20, &drained);
    struct iovec sv[2] = {{big, 1 << 20}, {big + (1 << 20), 2 << 20}};
    struct msghdr smh = {0};
    smh.msg_iov = sv;
    smh.msg_iovlen = 2;
    WAITS("sendmsg 3 MiB (drained later)", sendmsg(sp[0], &smh, 0));
    while (drained != 3 << 20)
        usleep(1000);
    drained = 0;
    later_drain(DELAY, sp[1], 3 << 20, &drained);
    WAITS("sendto 3 MiB on a stream (drained later)", sendto(sp[0], big, 3 << 20, 0, NULL, 0));
    while (drained != 3 << 20)
        usleep(1000);
    CHECK("unix socket left blocking", !tr_nonblock(sp[0]));
    later_close(DELAY, sp[1]);
    WAITS("recv (peer closes later)", recv(sp[0], buf, sizeof buf, 0));
    T("send to closed peer", send(sp[0], "x", 1, 0));
    T("shutdown", shutdown(sp[0], SHUT_RDWR));
    T("shutdown bad fd", shutdown(999, SHUT_RDWR));
    close(sp[0]);
    return tr_end();
}
