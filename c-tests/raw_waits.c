/*
 * raw_waits - waits made through syscall(2) instead of the libc wrappers,
 * each ended by another thread: read, poll, ppoll, select, pselect6,
 * epoll_wait, recvfrom on a pipe or socket pair another thread writes to
 * after a nap; accept4 of a connection another thread makes; wait4 of a
 * child; nanosleep and clock_nanosleep while another thread counts; and
 * the error results (-1 and errno, as syscall(2) gives them). Under corun
 * with one worker the raw call held the worker and the thread that would
 * have ended the wait never ran (scripts/tests/raw_waits.sh).
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fds[2];

static void *late_byte(void *arg)
{
    (void)arg;
    usleep(20000);
    if (write(fds[1], "x", 1) != 1)
        _exit(3);
    return NULL;
}

/* Runs WAIT (a raw call) while a thread writes one byte to fds[1] after a
 * nap; prints the call's result. */
#define AFTER_BYTE(name, wait)                                                  \
    do {                                                                        \
        pthread_t t;                                                            \
        pthread_create(&t, NULL, late_byte, NULL);                              \
        long res_ = (wait);                                                     \
        pthread_join(t, NULL);                                                  \
        char c;                                                                 \
        if (strcmp(name, "read") && strcmp(name, "recvfrom") && read(fds[0], &c, 1) != 1) \
            _exit(4);                                                           \
        printf("%s: %ld\n", name, res_);                                        \
    } while (0)

static volatile int ticks;
static void *ticker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5; i++) {
        usleep(2000);
        ticks++;
    }
    return NULL;
}

static int listen_port;
static void *connector(void *arg)
{
    (void)arg;
    usleep(20000);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(listen_port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (syscall(SYS_connect, s, &a, sizeof a) != 0)
        _exit(5);
    close(s);
    return NULL;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    char c;
    if (pipe(fds))
        return 1;
    AFTER_BYTE("read", syscall(SYS_read, fds[0], &c, 1));
    struct pollfd p = {fds[0], POLLIN, 0};
    AFTER_BYTE("poll", syscall(SYS_poll, &p, 1, 5000));
    struct timespec five = {5, 0};
    AFTER_BYTE("ppoll", syscall(SYS_ppoll, &p, 1, &five, NULL, 8));
    fd_set r;
    FD_ZERO(&r);
    FD_SET(fds[0], &r);
    struct timeval tv = {5, 0};
    AFTER_BYTE("select", syscall(SYS_select, fds[0] + 1, &r, NULL, NULL, &tv));
    sigset_t none;
    sigemptyset(&none);
    struct { const sigset_t *ss; size_t len; } mask = {&none, 8};
    FD_SET(fds[0], &r);
    five.tv_sec = 5;
    AFTER_BYTE("pselect6", syscall(SYS_pselect6, fds[0] + 1, &r, NULL, NULL, &five, &mask));
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 7}, out;
    epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev);
    AFTER_BYTE("epoll_wait", syscall(SYS_epoll_wait, ep, &out, 1, 5000));
    close(ep);
    close(fds[0]);
    close(fds[1]);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds))
        return 1;
    AFTER_BYTE("recvfrom", syscall(SYS_recvfrom, fds[0], &c, 1, 0, NULL, NULL));

    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 4) ||
        getsockname(l, (struct sockaddr *)&a, &al))
        return 1;
    listen_port = ntohs(a.sin_port);
    pthread_t t;
    pthread_create(&t, NULL, connector, NULL);
    long s = syscall(SYS_accept4, l, NULL, NULL, SOCK_CLOEXEC);
    pthread_join(t, NULL);
    printf("accept4: %s\n", s >= 0 ? "a connection" : strerror(errno));

    pid_t kid = fork();
    if (kid == 0) {
        usleep(20000);
        _exit(7);
    }
    int st = 0;
    pthread_create(&t, NULL, ticker, NULL);
    long w = syscall(SYS_wait4, kid, &st, 0, NULL);
    pthread_join(t, NULL);
    printf("wait4: %s, exit %d\n", w == kid ? "the child" : "?", WEXITSTATUS(st));

    ticks = 0;
    pthread_create(&t, NULL, ticker, NULL);
    struct timespec nap = {0, 30000000};
    long n = syscall(SYS_nanosleep, &nap, NULL);
    int seen = ticks;
    pthread_join(t, NULL);
    printf("nanosleep: %ld, the other thread ran meanwhile: %s\n", n, seen == 5 ? "yes" : "no");
    ticks = 0;
    pthread_create(&t, NULL, ticker, NULL);
    n = syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &nap, NULL);
    seen = ticks;
    pthread_join(t, NULL);
    printf("clock_nanosleep: %ld, the other thread ran meanwhile: %s\n", n, seen == 5 ? "yes" : "no");

    errno = 0;
    n = syscall(SYS_read, 999, &c, 1);
    printf("read of a bad fd: %ld %s\n", n, strerror(errno));
    errno = 0;
    n = syscall(SYS_clock_nanosleep, 12345, 0, &nap, NULL);
    printf("clock_nanosleep on a bad clock: %ld %s\n", n, strerror(errno));
    return 0;
}
