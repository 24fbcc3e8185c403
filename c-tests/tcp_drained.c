/*
 * tcp_drained - blocking reads on a TCP connection after a read that
 * returned less than asked (see transcript.h).
 *
 * Under corun such a read parks at once instead of trying first
 * (src/hooks/drained.rs): the socket was empty, and data that came since
 * has a readiness edge pending. Each case below is one where that must
 * still read exactly what the kernel holds: data sent in parts, data
 * already there when the read starts, recv, urgent data (a read stops short of
 * its mark with data left), poll then read, a read that filled its
 * buffer, SO_RCVTIMEO, a dup, the peer's close (alone, or there with
 * the last data), a reset after the last data, our own SHUT_RD. Every byte read is
 * printed; the script compares the transcript with the native run's.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include "transcript.h"

static char buf[256];

/* Prints what a read returned, as text. */
static void got(const char *label, long r)
{
    if (r > 0)
        printf("%s: \"%.*s\"\n", label, (int)r, buf);
}

#define READ(label, fd, n) got(label, WAITS(label, read(fd, buf, n)))
#define READ_NOW(label, fd, n) got(label, T(label, read(fd, buf, n)))

/* Sends "abc", the urgent byte "X" and "def" at once. */
static void send_urgent(void *p)
{
    int fd = (int)(intptr_t)p;
    if (send(fd, "abc", 3, 0) != 3 || send(fd, "X", 1, MSG_OOB) != 1 || send(fd, "def", 3, 0) != 3)
        abort();
}

static void shut_wr(void *p) { shutdown((int)(intptr_t)p, SHUT_WR); }

int main(void)
{
    tr_start();
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 4) ||
        getsockname(l, (struct sockaddr *)&a, &al)) {
        perror("listener");
        return 2;
    }
    int cl = socket(AF_INET, SOCK_STREAM, 0);
    T("connect", connect(cl, (struct sockaddr *)&a, sizeof a));
    int sv = T("accept", accept(l, NULL, NULL));
    int one = 1;
    setsockopt(cl, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

    /* A request in two parts: the second read follows a short one. */
    later_parts(cl, "GET /", " HTTP/1.1", NULL);
    READ("read first part", sv, sizeof buf);
    READ("read second part (after a short read)", sv, sizeof buf);

    /* The same through recv (flags 0). */
    later_parts(cl, "POST /", " HTTP/1.0", NULL);
    got("recv first part", WAITS("recv first part", recv(sv, buf, sizeof buf, 0)));
    got("recv second part", WAITS("recv second part", recv(sv, buf, sizeof buf, 0)));

    /* The reply, then the next request a moment later. */
    T("write reply", write(sv, "200", 3));
    READ_NOW("client reads reply", cl, sizeof buf);
    later_write(DELAY, cl, "next", 4);
    READ("read next request", sv, sizeof buf);

    /* Data already there when the read starts, after a short read. */
    T("client writes at once", write(cl, "here", 4));
    READ_NOW("read data already there", sv, sizeof buf);
    T("client writes at once again", write(cl, "again", 5));
    usleep(20000);
    READ_NOW("read data there for a while", sv, sizeof buf);

    /* Urgent data sent while the reader waits: the first read stops at
     * the mark, the second gets what follows (the byte itself is out of
     * band, and gone once read past). */
    later(DELAY, send_urgent, (void *)(intptr_t)cl);
    READ("read before the urgent mark", sv, sizeof buf);
    READ_NOW("read after the urgent mark", sv, sizeof buf);

    /* Urgent data there before the read (under corun the netpoller has
     * seen its edge): the bytes after the mark are there, with no edge to
     * come. */
    send_urgent((void *)(intptr_t)cl);
    usleep(20000);
    READ_NOW("read before the urgent mark (data there)", sv, sizeof buf);
    char oob = 0;
    T("recv MSG_OOB", recv(sv, &oob, 1, MSG_OOB));
    printf("urgent byte: %c\n", oob);
    READ_NOW("read after the urgent mark (data there)", sv, sizeof buf);

    /* poll, then read. */
    later_write(DELAY, cl, "polled", 6);
    struct pollfd p = {sv, POLLIN, 0};
    WAITS("poll POLLIN", poll(&p, 1, -1));
    READ_NOW("read after poll", sv, sizeof buf);

    /* A read that fills its buffer leaves the rest for the next one. */
    T("client writes 8 bytes", write(cl, "12345678", 8));
    usleep(20000);
    READ_NOW("read 4 of 8", sv, 4);
    READ_NOW("read the other 4", sv, sizeof buf);

    /* SO_RCVTIMEO after a short read: the timeout, then data. */
    struct timeval tv = {0, 100000};
    T("setsockopt SO_RCVTIMEO 100ms", setsockopt(sv, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
    READ("read with nothing sent (times out)", sv, sizeof buf);
    later_write(DELAY, cl, "late", 4);
    READ("read with a timeout (data later)", sv, sizeof buf);
    tv.tv_usec = 0;
    T("setsockopt SO_RCVTIMEO off", setsockopt(sv, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));

    /* The same connection through a dup, then the original again. */
    int d = T("dup", dup(sv));
    later_write(DELAY, cl, "dup", 3);
    READ("read the dup", d, sizeof buf);
    later_write(DELAY, cl, "orig", 4);
    READ("read the original", sv, sizeof buf);
    close(d);

    /* The peer closes its side: end of file. */
    later(DELAY, shut_wr, (void *)(intptr_t)cl);
    READ("read until the peer's shutdown", sv, sizeof buf);
    READ_NOW("read at end of file", sv, sizeof buf);
    close(sv);
    close(cl);

    /* The last data and the end of file there together (under corun the
     * netpoller has seen both): the data, then 0 at once. */
    cl = socket(AF_INET, SOCK_STREAM, 0);
    T("connect", connect(cl, (struct sockaddr *)&a, sizeof a));
    sv = T("accept", accept(l, NULL, NULL));
    later_write(DELAY, cl, "first", 5);
    READ("read first (data later)", sv, sizeof buf);
    T("client writes the last data", write(cl, "bye", 3));
    T("client shuts down", shutdown(cl, SHUT_WR));
    usleep(20000);
    READ_NOW("read the last data", sv, sizeof buf);
    READ_NOW("read the end of file after it", sv, sizeof buf);
    close(sv);
    close(cl);

    /* The last data, then a reset. */
    cl = socket(AF_INET, SOCK_STREAM, 0);
    T("connect", connect(cl, (struct sockaddr *)&a, sizeof a));
    sv = T("accept", accept(l, NULL, NULL));
    later_write(DELAY, cl, "first", 5);
    READ("read first (data later)", sv, sizeof buf);
    T("client writes the last data", write(cl, "rst", 3));
    usleep(20000);
    struct linger lg = {1, 0};
    setsockopt(cl, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    T("client resets", close(cl));
    usleep(20000);
    READ_NOW("read the last data (reset after it)", sv, sizeof buf);
    READ_NOW("read after the reset", sv, sizeof buf);
    close(sv);

    /* Our own shutdown of the read side after a short read. */
    cl = socket(AF_INET, SOCK_STREAM, 0);
    T("connect", connect(cl, (struct sockaddr *)&a, sizeof a));
    sv = T("accept", accept(l, NULL, NULL));
    later_write(DELAY, cl, "first", 5);
    READ("read first (data later)", sv, sizeof buf);
    T("shutdown SHUT_RD", shutdown(sv, SHUT_RD));
    READ_NOW("read after our SHUT_RD", sv, sizeof buf);
    close(sv);
    close(cl);
    close(l);
    return tr_end();
}
