/*
 * errno_after_park - a blocking call that succeeds leaves errno as it was,
 * also when corun made it out of non-blocking attempts that failed with
 * EAGAIN or EINPROGRESS before parking (see transcript.h).
 *
 * errno is set to ENOTTY before each call; read, recv, recvmsg, accept
 * wait for a helper to act, write and send for a helper to drain, connect
 * for a TCP handshake. Each prints its result and the errno after it.
 */
#include <netinet/in.h>
#include <sys/socket.h>

#include "transcript.h"

/* Prints "label = result, errno NAME" for a call made with errno ENOTTY. */
#define KEEPS(label, wait, expr)                                                 \
    do {                                                                         \
        long k_t0_ = tr_ticks;                                                   \
        errno = ENOTTY;                                                          \
        long k_r_ = (long)(expr);                                                \
        int k_e_ = errno;                                                        \
        printf("%s = %ld, errno %s\n", label, k_r_, strerrorname_np(k_e_));      \
        if ((wait) && tr_under_corun && tr_ticks == k_t0_) {                     \
            fprintf(stderr, "NOT PARKED: %s\n", label);                          \
            tr_not_parked++;                                                     \
        }                                                                        \
    } while (0)

static int listener(struct sockaddr_in *sa)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    socklen_t len = sizeof *sa;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (l < 0 || bind(l, (struct sockaddr *)sa, sizeof *sa) || listen(l, 8) ||
        getsockname(l, (struct sockaddr *)sa, &len))
        abort();
    return l;
}

static struct sockaddr_in target;
static void do_connect(void *p)
{
    (void)p;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&target, sizeof target))
        abort();
    /* Left open: the accepting side only needs the connection. */
}

int main(void)
{
    tr_start();
    static char big[1 << 20];
    char c;
    int p[2], sv[2];
    if (pipe(p) || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
        return 1;

    later_write(DELAY, p[1], "x", 1);
    KEEPS("read a pipe", 1, read(p[0], &c, 1));
    later_write(DELAY, sv[1], "y", 1);
    KEEPS("recv a socket", 1, recv(sv[0], &c, 1, 0));
    later_write(DELAY, sv[1], "z", 1);
    struct iovec iov = {&c, 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    KEEPS("recvmsg a socket", 1, recvmsg(sv[0], &m, 0));

    /* Fill the pipe, then write one more chunk that waits for a drain. */
    int fl = fcntl(p[1], F_GETFL);
    fcntl(p[1], F_SETFL, fl | O_NONBLOCK);
    size_t filled = 0;
    ssize_t w;
    while ((w = write(p[1], big, sizeof big)) > 0)
        filled += (size_t)w;
    fcntl(p[1], F_SETFL, fl);
    static volatile size_t drained;
    later_drain(DELAY, p[0], filled + 4096, &drained);
    KEEPS("write a full pipe", 1, write(p[1], big, 4096));

    int sfl = fcntl(sv[0], F_GETFL);
    fcntl(sv[0], F_SETFL, sfl | O_NONBLOCK);
    filled = 0;
    while ((w = send(sv[0], big, sizeof big, 0)) > 0)
        filled += (size_t)w;
    fcntl(sv[0], F_SETFL, sfl);
    static volatile size_t drained2;
    later_drain(DELAY, sv[1], filled + 4096, &drained2);
    KEEPS("send to a full socket", 1, send(sv[0], big, 4096, 0));

    int l = listener(&target);
    later(DELAY, do_connect, NULL);
    int a;
    KEEPS("accept (0: got a connection)", 1, (a = accept(l, NULL, NULL)) < 0 ? -1 : 0);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    KEEPS("connect over TCP", 0, connect(s, (struct sockaddr *)&target, sizeof target));
    return tr_end();
}
